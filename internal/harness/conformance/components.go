package conformance

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// check is how a long-running component proves it started. With the
// real Pulsar broker, PostgreSQL and Redis, every control-plane component
// becomes ready by its own rendered readinessProbe; the executor needs a
// Kubernetes API server, which checkLocalExecutors gives it.
type check struct {
	// Markers are regular expressions that must all match the log, in this
	// order. Placeholders: {port:KEY} is the port KEY was moved to,
	// {pulsar} a connection to the rendered Pulsar broker, {kube}
	// a request to the test's fake Kubernetes API server.
	Markers []string
	// NoProbe says why the component's rendered readinessProbe cannot
	// pass here; every other component's must.
	NoProbe string
	// Listen are port keys that must be listening once the markers appear;
	// since the ports were moved through the environment, this also proves
	// the overrides took effect.
	Listen []string
	// Timeout overrides startTimeout.
	Timeout time.Duration
	// NoScrape says why the metrics port cannot be scraped here; every
	// other component's rendered metrics port must serve Prometheus text.
	NoScrape string
	// NoOIDC says why the component cannot reach its auth setup here, so
	// its OIDC provider is not checked.
	NoOIDC string
}

// checks are the per-binary checks. Every marker was chosen from the real
// output of the Armada binaries run the way this test runs them; the
// comments say what each proves.
var checks = map[string]check{
	// internal/server/server.go logs "Armada server starting" after config
	// validation, sets up auth, opens and pings its Postgres pool and only
	// then creates Pulsar producers, which log "Connecting to broker". Its
	// /health (the readinessProbe) answers 200 only once they exist.
	"server": {
		Markers: []string{`Armada server starting`, `{pulsar}`},
		Listen:  []string{"httpPort", "metricsPort"},
		Timeout: 90 * time.Second,
	},
	// internal/scheduler/schedulerapp.go opens and pings its Postgres pool
	// after "Setting up database connections", then loads its queue cache
	// from the server ("Refreshed Queues in", from the test's stand-in for
	// the server's API, see armadaAPI; on failure it only logs and waits
	// up to a hard-coded 30 s) before "Setting up Pulsar connectivity".
	// With Pulsar up it opens its metrics and gRPC ports and /health.
	"scheduler": {
		Markers: []string{`Setting up database connections`, `Refreshed Queues in`, `Setting up Pulsar connectivity`, `{pulsar}`},
		Listen:  []string{"http.port", "grpc.port", "metrics.port"},
		Timeout: 120 * time.Second,
	},
	// internal/scheduleringester/ingester.go panics unless its Postgres
	// pool pings, then serves metrics and subscribes to Pulsar
	// (checkPulsar sees the subscription from the broker).
	"scheduleringester": {
		Markers: []string{`opening connection pool to postgres`, `Starting http server listening on {port:metricsPort}`, `{pulsar}`},
		Listen:  []string{"metricsPort"},
		Timeout: 90 * time.Second,
	},
	// Lookout needs only Postgres (and an OIDC provider, if configured).
	"lookout": {
		Markers: []string{`Starting http server listening on {port:metricsPort}`},
		Listen:  []string{"metricsPort", "apiPort"},
	},
	// internal/lookoutingester/ingester.go, like the scheduler ingester.
	"lookoutingester": {
		Markers: []string{`Opening connection pool to postgres`, `Starting http server listening on {port:metricsPort}`, `{pulsar}`},
		Listen:  []string{"metricsPort"},
		Timeout: 90 * time.Second,
	},
	// internal/eventingester/ingester.go; Redis is connected lazily, see
	// checkRedis.
	"eventingester": {
		Markers: []string{`Event Ingester Starting`, `{pulsar}`},
		Listen:  []string{"metricsPort"},
		Timeout: 90 * time.Second,
	},
	// Binoculars builds its Kubernetes client from the fake kubeconfig
	// without calling the API, so it serves gRPC and becomes healthy.
	"binoculars": {
		Markers: []string{`Running with default client configuration`, `Grpc listening on {port:grpcPort}`},
		Listen:  []string{"grpcPort", "httpPort", "metricsPort"},
	},
	// internal/executor/application.go validates its config, builds its
	// Kubernetes client, logs whether etcd is monitored and starts pod and
	// node informers, whose requests reach the fake API server. It marks
	// startup complete (/health 200) only once the informers sync, which
	// needs a real API server: checkLocalExecutors runs it against one
	// and the scheduler, and checks /health there.
	"executor": {
		Markers: []string{`Running with default client configuration`, `etcd URLs provided`, `{kube}`},
		Listen:  []string{"httpPort", "metric.port"},
		NoProbe: "its /health answers only once its informers sync with a real API server; checkLocalExecutors checks it there",
	},
}

// timeout is how long the component may take to show its markers.
func (c check) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return StartTimeout
}

// markers expands marker templates' placeholders for one run.
func markers(templates []string, rn *Run, moved map[string]int, kubeconfigPort int) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, m := range templates {
		for key, port := range moved {
			m = strings.ReplaceAll(m, "{port:"+key+"}", strconv.Itoa(port)+`\b`)
		}
		if strings.Contains(m, "{pulsar}") {
			raw, _ := rn.Effective("pulsar.URL")
			u, err := url.Parse(raw)
			if err != nil || u.Host == "" {
				return nil, errors.Errorf("the effective pulsar.URL %q has no host", raw)
			}
			m = strings.ReplaceAll(m, "{pulsar}", `Connecting to broker remote_addr=\{[^\n]*"Host":"`+regexp.QuoteMeta(u.Host)+`"`)
		}
		m = strings.ReplaceAll(m, "{kube}", `failed to list [^\n]*https://127\.0\.0\.1:`+strconv.Itoa(kubeconfigPort)+`/`)
		if strings.Contains(m, "{port:") {
			return nil, errors.Errorf("marker %q names a port the loaded config files do not set", m)
		}
		re, err := regexp.Compile(m)
		if err != nil {
			return nil, errors.Wrapf(err, "invalid marker %q", m)
		}
		out = append(out, re)
	}
	return out, nil
}

// inOrder reports whether every marker matches log, each after the
// previous one's match.
func inOrder(log string, markers []*regexp.Regexp) bool {
	for _, m := range markers {
		loc := m.FindStringIndex(log)
		if loc == nil {
			return false
		}
		log = log[loc[1]:]
	}
	return true
}

// configErrorLine returns the first log line showing a config error.
func configErrorLine(log string) string {
	return firstLine(log, configErrors)
}

// Component is a started long-running container, watched from the moment
// it starts, so a component is judged as it was when its markers
// appeared, however long the components checked before it took.
type Component struct {
	Proc  *podrun.Process
	Moved map[string]int
	// Proxy is the component's CONNECT proxy, if it has one (routedEnv).
	Proxy *connectProxy
	Err   error
	// Done is closed once Outcome is set.
	Done    chan struct{}
	Outcome outcome
}

// outcome is what watching a component found.
type outcome struct {
	// Errors and Notes to report.
	Errors, Notes []string
	// Log is the log as it was when the markers appeared.
	Log string
	// Scraped are the metric families its rendered metrics port served.
	Scraped []string
}

func (o *outcome) errorf(format string, args ...any) {
	o.Errors = append(o.Errors, fmt.Sprintf(format, args...))
}

// StartComponent starts a long-running container and watches it. Every
// component starts together, so the scheduler's 30 s wait for the server
// overlaps the others.
func StartComponent(t *testing.T, e *Env, svc *Services, free func() int, rn *Run) *Component {
	t.Helper()
	extra, moved := overrides(t, e, svc, free, rn)
	routed, proxy := routedEnv(t, svc, rn)
	extra = append(extra, routed...)
	logPath := filepath.Join(t.TempDir(), rn.Inv.Component+"-"+strconv.Itoa(free())+".log")
	bin, args, err := rn.Command(e)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(t, bin, e.SourceDir, args, environ(rn, extra), logPath)
	c := &Component{Proc: p, Moved: moved, Proxy: proxy, Err: err, Done: make(chan struct{})}
	if err != nil {
		close(c.Done)
		return c
	}
	go func() {
		defer close(c.Done)
		c.Outcome = watch(e, svc, rn, c)
	}()
	return c
}

// watch waits for a component's markers and checks its health and ports
// at that moment.
func watch(e *Env, svc *Services, rn *Run, c *Component) outcome {
	var o outcome
	chk, ok := checks[rn.Inv.Component]
	if !ok {
		o.errorf("no check for component %s", rn.Inv.Component)
		return o
	}
	res, err := markers(chk.Markers, rn, c.Moved, e.KubeconfigPort)
	if err != nil {
		o.errorf("%v", err)
		return o
	}
	timeout := chk.timeout()
	p := c.Proc
	var exited bool
	var code int
	reached := p.Until(timeout, func(l string) bool {
		o.Log = l
		exited, code = p.Exited()
		return inOrder(l, res) || configErrorLine(l) != ""
	})
	if l := configErrorLine(o.Log); l != "" {
		o.errorf("failed on its configuration: %s", l)
	}
	if !reached || !inOrder(o.Log, res) {
		o.errorf("log did not show %q in order (waited up to %s; exited: %t, code %d)", res, timeout, exited, code)
	}
	if exited {
		o.errorf("exited with code %d; it must keep running", code)
	}
	if chk.NoProbe != "" {
		o.Notes = append(o.Notes, "readinessProbe not checked: "+chk.NoProbe)
	} else {
		checkProbe(&o, rn, c, timeout)
	}
	for _, k := range chk.Listen {
		port, ok := c.Moved[k]
		switch {
		case !ok:
			o.errorf("the loaded config files set no %s, so it listens on a default or random port", k)
		case !podrun.Listening(port, 5*time.Second):
			o.errorf("nothing listens on %s %d, moved there through %s", k, port, envName(k))
		}
	}
	if chk.NoOIDC != "" && svc.OIDC.uses(rn) {
		o.Notes = append(o.Notes, "OIDC provider not checked: "+chk.NoOIDC)
	} else {
		checkOIDC(&o, svc.OIDC, rn, c.Proxy, timeout)
	}
	checkArmadaAPI(&o, svc.ArmadaAPI, rn)
	checkPulsar(&o, svc, rn, timeout)
	scrapeMetrics(&o, rn, c, chk)
	return o
}

// CheckComponent reports what watching a started component found, checks
// its config use and Redis credentials, then stops it.
func CheckComponent(t *testing.T, svc *Services, rn *Run, c *Component) {
	t.Helper()
	if c.Err != nil {
		t.Fatal(c.Err)
	}
	defer c.Proc.Stop()
	ShowTail(t, rn, c.Proc)
	<-c.Done
	for _, n := range c.Outcome.Notes {
		t.Logf("%s (%s): %s", rn.ID(), rn.Inv.Component, n)
	}
	for _, e := range c.Outcome.Errors {
		t.Errorf("%s (%s): %s", rn.ID(), rn.Inv.Component, e)
	}
	checkConfig(t, rn, c.Outcome.Log)
	checkRedis(t, svc, rn)
}

// redisKeys are the Redis blocks of Armada's configs.
var redisKeys = []string{"eventsApiRedis", "redis"}

// checkRedis proves a component's effective Redis credentials work. Armada
// connects to Redis lazily, only once Pulsar delivers events or a client
// watches them, so the process never does here: instead the test
// authenticates with the password and database the component would use
// (rendered environment over rendered config over Armada's base config)
// against the password-protected private Redis.
func checkRedis(t *testing.T, svc *Services, rn *Run) {
	t.Helper()
	for _, k := range redisKeys {
		if !rn.Cfg.Has(k + ".addrs") {
			continue
		}
		password, _ := rn.Effective(k + ".password")
		db, _ := rn.Effective(k + ".db")
		if db == "" {
			db = "0"
		}
		if _, err := strconv.Atoi(db); err != nil {
			t.Errorf("%s (%s): %s.db is %q, not a number", rn.ID(), rn.Inv.Component, k, db)
			continue
		}
		if _, err := svc.Redis.Do(password, "SELECT", db); err != nil {
			t.Errorf("%s (%s): the effective %s password and db do not work against a password-protected Redis: %v", rn.ID(), rn.Inv.Component, k, err)
		}
	}
}
