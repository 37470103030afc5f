package jobflow

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// localDevComponents are the processes of Armada's own local-development
// setup without authentication (_local/procfiles/no-auth.Procfile at the
// release), in the Procfile's order: each binary runs with
// _local/<binary>/config.yaml (the scheduler with its run command). Its
// lookoutui (a yarn dev server) is left out.
var localDevComponents = []string{
	"server", localDevScheduler, "scheduleringester", "eventingester", "executor", "lookout", "lookoutingester", "binoculars",
}

const localDevScheduler = "scheduler"

// LocalDevOptions say what StartLocalDev runs and where.
type LocalDevOptions struct {
	// Release is the Armada release whose binaries and _local configs run.
	Release podrun.Release
	// Backends are the PostgreSQL, Redis and Pulsar the configs are
	// pointed at (in place of localhost:5432, :6379, :6650 and :8090).
	Backends *Backends
	// Kubeconfig reaches the cluster the executor runs jobs in, as
	// localdev's executor reaches its kind cluster.
	Kubeconfig string
	// RedisPassword is what Redis requires of its clients.
	RedisPassword string
}

// LocalDev is Armada's own local-development configuration of a release,
// running.
type LocalDev struct {
	// Processes are the running components by binary.
	Processes map[string]*podrun.Process
	// Server is the server's gRPC address; SchedulerDB the scheduler's
	// database in Backends.Postgres; ClusterID the executor's clusterId.
	Server, SchedulerDB, ClusterID string
}

// localDevDBs are the localdev databases, created beside the composed
// Armada's scheduler and lookout (the configs name scheduler and lookout).
var localDevDBs = map[string]string{"scheduler": "localdev_scheduler", "lookout": "localdev_lookout"}

// StartLocalDev runs Armada's own local-development configuration of
// o.Release (its _local/<component>/config.yaml, as its no-auth Procfile
// runs them) against o.Backends, with only what cannot be the same here
// changed: every localhost address becomes the backend's or a free
// loopback port, PostgreSQL's and Redis's credentials are the backends',
// its databases are named localdev_scheduler and localdev_lookout (the
// composed Armada's are beside them), and observability is off (its OTLP
// collector does not run here). It runs the migrations as
// _local/scripts/init.sh does, starts every component and stops them on
// t's cleanup.
func StartLocalDev(t TB, o LocalDevOptions) *LocalDev {
	t.Helper()
	dir := t.TempDir()
	pg := o.Backends.Postgres
	pgPassword := testenv.RandomPassword(t)
	pg.CreateRole(t, "localdev", pgPassword)
	for _, db := range localDevDBs {
		pg.CreateDatabase(t, db, "localdev")
	}
	rw := &localDevRewriter{
		ports: map[int]int{
			6379: portOf(t, o.Backends.Redis.Addr()),
			6650: portOf(t, o.Backends.Pulsar.ServiceURL()),
			8090: portOf(t, o.Backends.Pulsar.AdminURL()),
		},
		free:          func() int { return testenv.FreePort(t) },
		pgHost:        pg.Host,
		pgPort:        pg.Port,
		pgPassword:    pgPassword,
		redisPassword: o.RedisPassword,
	}
	configs := map[string]string{}
	ld := &LocalDev{Processes: map[string]*podrun.Process{}, SchedulerDB: localDevDBs["scheduler"]}
	for _, c := range localDevComponents {
		src := filepath.Join(o.Release.SourceDir, "_local", c, "config.yaml")
		raw, err := os.ReadFile(src) //nolint:gosec // Armada's own source in the module cache.
		if err != nil {
			t.Fatalf("cannot read Armada's local-development config: %v", err)
		}
		var cfg map[string]any
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("cannot parse %s: %v", src, err)
		}
		rw.rewrite(cfg, "")
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("cannot encode %s's config: %v", c, err)
		}
		configs[c] = filepath.Join(dir, c+".yaml")
		if err := os.WriteFile(configs[c], out, 0o600); err != nil {
			t.Fatalf("cannot write %s's config: %v", c, err)
		}
		switch c {
		case "server":
			ld.Server = fmt.Sprintf("127.0.0.1:%d", rw.ports[50051])
		case "executor":
			app, _ := cfg["application"].(map[string]any)
			ld.ClusterID, _ = app["clusterId"].(string)
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + o.Kubeconfig}
	run := func(name string, args ...string) *podrun.Process {
		log := filepath.Join(dir, name+"-"+strings.TrimLeft(args[0], "-")+".log")
		p, err := podrun.Start(filepath.Join(o.Release.BinDir, name), o.Release.SourceDir, args, env, log)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// _local/scripts/init.sh: the scheduler's and Lookout's migrations.
	for _, m := range [][]string{{localDevScheduler, "migrateDatabase"}, {"lookout", "--migrateDatabase"}} {
		p := run(m[0], m[1], "--config", configs[m[0]])
		if code, ok := p.Wait(3 * time.Minute); !ok || code != 0 {
			p.Stop()
			t.Fatalf("localdev %s %s exited %d (finished: %t):\n%s", m[0], m[1], code, ok, testutil.Tail(p.Log(), 20))
		}
	}
	for _, c := range localDevComponents {
		args := []string{"--config", configs[c]}
		if c == localDevScheduler {
			args = append([]string{"run"}, args...)
		}
		ld.Processes[c] = run(c, args...)
	}
	t.Cleanup(func() {
		for _, p := range ld.Processes {
			p.Stop()
		}
	})
	return ld
}

// Logs returns the tail of every localdev component's log.
func (l *LocalDev) Logs() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(l.Processes)) {
		fmt.Fprintf(&b, "--- localdev %s\n%s\n", name, testutil.Tail(l.Processes[name].Log(), 25))
	}
	return b.String()
}

// localDevRewriter substitutes the addresses and credentials in
// Armada's local-development configs.
type localDevRewriter struct {
	// ports maps a localdev port to the one used here; free gives a new
	// one for a port not seen before, so a listener and its clients agree.
	ports                     map[int]int
	free                      func() int
	pgHost                    string
	pgPort                    int
	pgPassword, redisPassword string
}

var localhostPort = regexp.MustCompile(`localhost:(\d+)`)

func (r *localDevRewriter) port(p int) int {
	if q, ok := r.ports[p]; ok {
		return q
	}
	r.ports[p] = r.free()
	return r.ports[p]
}

// rewrite returns v (at key) with its addresses and credentials
// substituted.
func (r *localDevRewriter) rewrite(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		if x["host"] == "localhost" && x["dbname"] != nil {
			// A PostgreSQL connection.
			x["host"], x["port"], x["user"], x["password"] = r.pgHost, r.pgPort, "localdev", r.pgPassword
			if db, ok := localDevDBs[fmt.Sprint(x["dbname"])]; ok {
				x["dbname"] = db
			}
			return x
		}
		if _, ok := x["addrs"]; ok && r.redisPassword != "" {
			x["password"] = r.redisPassword
		}
		if key == "observability" {
			x["enabled"] = false
		}
		for k, e := range x {
			x[k] = r.rewrite(e, k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = r.rewrite(e, key)
		}
		return x
	case string:
		return localhostPort.ReplaceAllStringFunc(x, func(s string) string {
			p, _ := strconv.Atoi(strings.TrimPrefix(s, "localhost:"))
			return fmt.Sprintf("127.0.0.1:%d", r.port(p))
		})
	case float64:
		// A listening port: httpPort, grpcPort, metricsPort, apiPort, port.
		if key == "port" || strings.HasSuffix(key, "Port") {
			return r.port(int(x))
		}
		return x
	}
	return v
}

func portOf(t TB, addr string) int {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		t.Fatal(errors.Errorf("no port in %q", addr))
	}
	return p
}
