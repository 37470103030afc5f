package conformance

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/metricnames"
	"github.com/armadaproject/armada-crossplane/internal/podrun"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

const (
	// startTimeout bounds how long a component may take to reach its
	// markers, and its health endpoint to answer.
	startTimeout = 30 * time.Second
	// migrationTimeout bounds one migration run.
	migrationTimeout = 60 * time.Second
	// tailLines of a process's log are printed when its check fails.
	tailLines = 40
)

// rendersEnv, if set, is a glob of render outputs to check instead of the
// render golden files.
const rendersEnv = "ARMADA_CONFORMANCE_RENDERS"

// env is what every render of one Armada release shares.
type env struct {
	// Version is the release, x.y.z.
	Version string
	// BinDir holds the release's Armada binaries.
	BinDir string
	// SourceDir is the release's module source tree: the binaries' working
	// directory, whose config/<component>/config.yaml they load first.
	SourceDir string
	// Kubeconfig is a kubeconfig for an API server on KubeconfigPort,
	// where nothing listens.
	Kubeconfig     string
	KubeconfigPort int
	// Metrics indexes the metric names registered in the release's source,
	// which the scraped ones are checked against.
	Metrics *metricnames.Index
	// Home is the API server standing in for the cluster claims are
	// applied to (thisCluster), shared by every example.
	Home *workerClusters
	// RefusedCAShown is set once an in-cluster executor of this release
	// was shown refusing the scheduler without the rendered CA.
	RefusedCAShown bool
	// Brokers are the real Pulsar brokers every example shares.
	Brokers *brokers
}

// newEnv finds a release's binaries and source, failing the test if they
// are missing.
func newEnv(t *testing.T, version string) *env {
	t.Helper()
	e := &env{Version: version, BinDir: armadaBinDir(t, version), SourceDir: armadaSourceDir(t, version), KubeconfigPort: testenv.FreePort(t)}
	e.Kubeconfig = writeKubeconfig(t, e.KubeconfigPort)
	dirs, err := metricnames.SourceDirs(t.Context(), "v"+version)
	if err != nil {
		t.Fatal(err)
	}
	if e.Metrics, err = metricnames.Scan(dirs...); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestArmadaConformance runs every render golden file with the binaries of
// the Armada release it renders (the XR's status.version.desired): the
// default release on every example, and each other supported release on
// the examples rendered at it (test/render/testdata/versions). Every
// supported release must be covered.
func TestArmadaConformance(t *testing.T) {
	pattern := os.Getenv(rendersEnv)
	var files []string
	if pattern == "" {
		for _, p := range []string{"*.yaml", filepath.Join("versions", "*.yaml")} {
			m, _ := filepath.Glob(filepath.Join("..", "render", "testdata", p))
			files = append(files, m...)
		}
		pattern = "the render golden files (test/render/testdata and its versions directory)"
	} else {
		files, _ = filepath.Glob(pattern)
	}
	if len(files) == 0 {
		t.Fatalf("no render outputs in %s; generate the render golden files first", pattern)
	}
	// Every render's release first, so a release no render covers fails
	// before anything runs.
	versions := map[string]string{}
	examples := map[string][]string{}
	token := false
	for _, f := range files {
		r, err := loadRender(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.XRSecretRef("pulsar", "tokenSecretRef"); ok {
			token = true
		}
		v := r.XRString("", "status", "version", "desired")
		if _, ok := armada.ReleaseOf(v); !ok {
			t.Fatalf("%s renders Armada %q, which is not in the version table %v", f, v, armada.SupportedVersions)
		}
		versions[f] = v
		examples[v] = append(examples[v], strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)))
	}
	for _, v := range armada.SupportedVersions {
		t.Logf("Armada %s: %d renders to check: %s", v, len(examples[v]), strings.Join(examples[v], ", "))
		if len(examples[v]) == 0 && os.Getenv(rendersEnv) == "" {
			t.Errorf("no render golden file runs Armada %s: render at least examples/minimal.yaml at it (test/render writes testdata/versions)", v)
		}
	}
	home := startWorkerClusters(t, []string{thisCluster})
	pulsars := startBrokers(t, token)
	envs := map[string]*env{}
	for _, f := range files {
		v := versions[f]
		if envs[v] == nil {
			envs[v] = newEnv(t, v)
			envs[v].Home = home
			envs[v].Brokers = pulsars
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			runExample(t, envs[v], f)
		})
	}
}

// armadaBinDir returns the directory holding every Armada binary of a
// release, failing the test if one is missing.
func armadaBinDir(t *testing.T, version string) string {
	t.Helper()
	root := os.Getenv("ARMADA_BIN_ROOT")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("cannot find the home directory: %v", err)
		}
		root = filepath.Join(home, ".cache", "armada-crossplane", "bin")
	}
	dir := filepath.Join(root, "armada-v"+version)
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("Armada %s binary %s is missing from %s: run `make armada-bins` (or tools/armada/build.sh v%s)", version, b, dir, version)
		}
	}
	return dir
}

// armadaSourceDir returns a release's module source tree in the module
// cache.
func armadaSourceDir(t *testing.T, version string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("cannot run `go env GOMODCACHE`: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "armadaproject", "armada@v"+version)
	if _, err := os.Stat(filepath.Join(dir, "config", "server", "config.yaml")); err != nil {
		t.Fatalf("Armada %s source is not in the module cache (%v): run `make armada-bins`, which downloads it", version, err)
	}
	return dir
}

// writeKubeconfig writes a kubeconfig for an API server on a loopback port
// nothing listens on, so Kubernetes clients build but every call fails fast.
func writeKubeconfig(t *testing.T, port int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}
users:
- name: conformance
  user: {token: conformance}
contexts:
- name: conformance
  context: {cluster: conformance, user: conformance}
current-context: conformance
`, port)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// services are an example's private backing services.
type services struct {
	PG    *testenv.Postgres
	Redis *testenv.Redis
	// ExecutorAPICA is the private CA whose certificate the test supplies
	// as spec.executorApi.caSecretRef, and which signs the test's executor
	// API; nil without a caSecretRef.
	ExecutorAPICA *privateCA
	// OIDC is the stand-in for the rendered OIDC provider; nil without
	// one.
	OIDC *oidcProvider
	// ArmadaAPI is the stand-in for the server's API the scheduler
	// calls; nil without a server.
	ArmadaAPI *armadaAPI
	// Names resolves the rendered host names (see names).
	Names *names
	// PulsarAt is the example's Pulsar far end, host:port.
	PulsarAt string
	// Pulsar is the real broker the example's Pulsar names reach.
	Pulsar *testenv.Pulsar
	// PulsarToken is the token the test puts in the user's
	// spec.pulsar.tokenSecretRef Secret, signed by Pulsar's key; empty
	// without one.
	PulsarToken string
}

func runExample(t *testing.T, e *env, file string) {
	t.Helper()
	start := time.Now()
	r, err := loadRender(file)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := r.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	svc, supplied := startServices(t, r, workloads, e.Brokers)
	runs, workloadOf, topics, skipped := newRuns(t, e, r, workloads, supplied)
	checkAccounting(t, r, runs, e.Version)
	startStandIns(t, svc, r, runs, workloadOf)
	// Worker clusters start in the background while migrations run.
	remote := startRemote(t, runs, svc.ExecutorAPICA)
	prepareDatabases(t, r, svc, runs)
	free := (&ports{t: t}).Free
	migrations := runMigrations(t, e, svc, free, runs)
	runTopicJobs(t, e, svc, topics, runs)
	checkTables(t, svc, runs)
	checkWiring(t, runs)
	started := runComponents(t, e, svc, free, runs)
	checkTLS(t, e, svc, free, runs)
	checkLookoutTLS(t, e, svc, free, runs, r.XRString("", "status", "endpoints", "lookout"))
	checkBinocularsTLS(t, e, svc, free, runs)
	locals := checkLocalExecutors(t, e, svc, free, r, runs, workloadOf)
	// Remote executors run one after the other against their worker
	// clusters and the executor API; the first also shows what each part
	// of the wiring is needed for.
	remotes := 0
	for _, rn := range runs {
		if rn.Cluster == "" || rn.Job {
			continue
		}
		t.Run(rn.ID(), func(t *testing.T) {
			kubeconfig := prepareWorker(t, r, remote, workloadOf[rn], rn.Root)
			checkRemoteExecutor(t, e, svc, free, remote, rn, kubeconfig, remotes == 0)
		})
		remotes++
	}
	t.Logf("%s (Armada %s): %d migration containers run twice; %d Pulsar topic Jobs run against the real broker; %d components started and checked; %d in-cluster executors run against this cluster's API server and the scheduler; %d remote executors run against worker clusters and the executor API; %d non-Armada containers not run; in %s",
		filepath.Base(file), e.Version, migrations, len(topics), started, locals, remotes, skipped, time.Since(start).Round(time.Second))
}

// startStandIns serves the far ends of the links the test serves by name
// (routedEnv): the OIDC provider and the server's API.
func startStandIns(t *testing.T, svc *services, r *render, runs []*run, workloadOf map[*run]workload) {
	t.Helper()
	svc.OIDC = startOIDC(t, runs)
	svc.ArmadaAPI = startArmadaAPI(t, r, runs, workloadOf)
}

// newRuns reconstructs every Armada container of a render's workloads,
// Jobs' first, with the workload of each, and the Pulsar topic-init Jobs'
// containers; skipped counts the other non-Armada containers.
func newRuns(t *testing.T, e *env, r *render, workloads []workload, supplied map[secretRef]string) (runs []*run, workloadOf map[*run]workload, topics []*topicJob, skipped int) {
	t.Helper()
	workloadOf = map[*run]workload{}
	// A namespaced Armada runs in its own namespace; an XArmada in
	// spec.namespace.
	rs := &podrun.Resolver{Sources: renderSources{render: r, supplied: supplied}, Namespace: r.XRString(r.XRString("default", "spec", "namespace"), "metadata", "namespace")}
	for _, w := range workloads {
		containers := append(slices.Clone(w.Pod.InitContainers), w.Pod.Containers...)
		for i, c := range containers {
			if isTopicJob(w, c) {
				root := t.TempDir()
				inv, err := rs.Script(w, c, root)
				if err != nil {
					t.Errorf("%s: container %s cannot be reproduced from the render: %v", w.ID(), c.Name, err)
					continue
				}
				topics = append(topics, &topicJob{Inv: inv, Root: root})
				continue
			}
			if tool, ok := podrun.ToolForImage(c.Image); ok {
				addSidecar(t, rs, w, c, tool, runs)
				continue
			}
			if _, _, ok := podrun.ComponentForImage(c.Image); !ok {
				why, known := notRunReason(c.Image)
				if known {
					t.Logf("%s: container %s runs %s, not an Armada image; not run: %s", w.ID(), c.Name, c.Image, why)
				} else {
					t.Errorf("%s: container %s runs %s, which the test neither runs nor accounts for (see notRun)", w.ID(), c.Name, c.Image)
				}
				skipped++
				continue
			}
			root := t.TempDir()
			inv, err := rs.Invocation(w, c, root)
			if err != nil {
				t.Errorf("%s: container %s cannot be reproduced from the render: %v", w.ID(), c.Name, err)
				continue
			}
			if inv.Tag != e.Version {
				t.Logf("%s: image tag %s differs from the Armada %s binaries under test", w.ID(), inv.Tag, e.Version)
			}
			cfg, err := loadArmadaConfig(e.SourceDir, inv.Component, inv.ConfigFiles)
			if err != nil {
				t.Errorf("%s: %v", w.ID(), err)
				continue
			}
			rn := &run{Inv: inv, Cfg: cfg, Job: w.Kind == "Job" || i < len(w.Pod.InitContainers), Root: root, Cluster: w.Cluster}
			runs = append(runs, rn)
			workloadOf[rn] = w
		}
	}
	return runs, workloadOf, topics, skipped
}

// runMigrations runs every Job container, each in a subtest, and returns
// how many it ran.
func runMigrations(t *testing.T, e *env, svc *services, free func() int, runs []*run) int {
	t.Helper()
	n := 0
	for _, rn := range runs {
		if rn.Job {
			t.Run(rn.ID(), func(t *testing.T) { runMigration(t, e, svc, free, rn) })
			n++
		}
	}
	return n
}

// runComponents starts every long-running container together, checks
// them one by one and checks the metric names they served. It returns how
// many it started.
func runComponents(t *testing.T, e *env, svc *services, free func() int, runs []*run) int {
	t.Helper()
	started := map[*run]*component{}
	for _, rn := range runs {
		if !rn.Job && rn.Cluster == "" {
			started[rn] = startComponent(t, e, svc, free, rn)
		}
	}
	for _, rn := range runs {
		if c, ok := started[rn]; ok {
			t.Run(rn.ID(), func(t *testing.T) { checkComponent(t, svc, rn, c) })
		}
	}
	checkScrapedNames(t, e, started)
	return len(started)
}

// startServices starts PostgreSQL and Redis, picks the example's Pulsar
// broker among b, and returns the values of the
// Secrets that are not part of the render: the user's (spec references) or
// the ones an operator generates (CloudNativePG's app Secret). Which Secret
// keys hold the Postgres and Redis passwords is read from the rendered
// workloads' env, so the test connects through exactly the references the
// function rendered.
func startServices(t *testing.T, r *render, workloads []workload, b *brokers) (*services, map[secretRef]string) {
	t.Helper()
	supplied := map[secretRef]string{}
	svc := &services{PG: testenv.StartPostgres(t), Names: newNames(t)}

	ref, ok := envSecretRef(workloads, "ARMADA_POSTGRES_CONNECTION_PASSWORD")
	if !ok {
		t.Fatal("no rendered workload reads ARMADA_POSTGRES_CONNECTION_PASSWORD from a Secret")
	}
	if _, rendered, _ := r.Secret(ref.Name); rendered {
		t.Fatalf("the Postgres password Secret %s is rendered; it must come from the user or CloudNativePG", ref.Name)
	}
	supplied[ref] = testenv.RandomPassword(t)

	for _, env := range []string{"ARMADA_REDIS_PASSWORD", "ARMADA_EVENTSAPIREDIS_PASSWORD"} {
		ref, ok := envSecretRef(workloads, env)
		if !ok || svc.Redis != nil {
			continue
		}
		if data, rendered, err := r.Secret(ref.Name); err != nil {
			t.Fatal(err)
		} else if rendered {
			// An in-cluster Redis: its password is generated into the
			// rendered credentials Secret.
			svc.Redis = testenv.StartRedisWithPassword(t, string(data[ref.Key]))
		} else {
			svc.Redis = testenv.StartRedis(t)
			supplied[ref] = svc.Redis.Password
		}
	}
	if svc.Redis == nil {
		svc.Redis = testenv.StartRedisWithPassword(t, "")
	}
	useBroker(t, b, r, svc, supplied)
	if ref, ok := r.XRSecretRef("pulsar", "caSecretRef"); ok {
		ca, _ := testenv.SelfSignedCert(t)
		supplied[ref] = string(ca)
	}
	if ref, ok := r.XRSecretRef("executorApi", "caSecretRef"); ok {
		svc.ExecutorAPICA = newPrivateCA(t)
		supplied[ref] = string(svc.ExecutorAPICA.PEM)
	}
	supplyRemote(t, r, supplied)
	supplyCertificates(t, r, supplied)
	far, err := r.FarEnds(workloads)
	if err != nil {
		t.Fatal(err)
	}
	serveFarEnds(t, svc, far)
	servePulsar(t, svc, workloads)
	return svc, supplied
}

// supplyRemote does what provider-kubernetes and a worker cluster do for
// the Objects a render wraps: a worker's token controller fills each
// service-account token Secret, connection details copy the named key into
// the connection Secret here, and references[].patchesFrom copies a key of
// a Secret here into the manifest.
func supplyRemote(t *testing.T, r *render, supplied map[secretRef]string) {
	t.Helper()
	for _, o := range r.Wrappers {
		name, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "manifest", "metadata", "name")
		details, _, _ := unstructured.NestedSlice(o.Object, "spec", "connectionDetails")
		conn, _, _ := unstructured.NestedString(o.Object, "spec", "writeConnectionSecretToRef", "name")
		for _, d := range details {
			m, _ := d.(map[string]any)
			if m["fieldPath"] != "data.token" || conn == "" {
				t.Fatalf("Object %s copies %v: only a service-account token is expected", o.GetName(), m["fieldPath"])
			}
			token := testenv.RandomPassword(t)
			supplied[secretRef{Name: name, Key: "token"}] = token
			supplied[secretRef{Name: conn, Key: fmt.Sprint(m["toConnectionSecretKey"])}] = token
		}
		refs, _, _ := unstructured.NestedSlice(o.Object, "spec", "references")
		for _, ref := range refs {
			m, _ := ref.(map[string]any)
			from, _ := m["patchesFrom"].(map[string]any)
			fromKey, ok1 := bracketKey(fmt.Sprint(from["fieldPath"]))
			toKey, ok2 := bracketKey(fmt.Sprint(m["toFieldPath"]))
			if from["kind"] != "Secret" || !ok1 || !ok2 {
				t.Fatalf("Object %s patches from %v: only a Secret key into a Secret key is expected", o.GetName(), from)
			}
			v, ok := supplied[secretRef{Name: fmt.Sprint(from["name"]), Key: fromKey}]
			if !ok {
				t.Fatalf("Object %s patches from Secret %s key %s, which nobody supplies", o.GetName(), from["name"], fromKey)
			}
			supplied[secretRef{Name: name, Key: toKey}] = v
		}
	}
}

// bracketKey is K of a field path data[K].
func bracketKey(path string) (string, bool) {
	k, ok := strings.CutPrefix(path, "data[")
	if !ok || !strings.HasSuffix(k, "]") {
		return "", false
	}
	return strings.TrimSuffix(k, "]"), true
}

// envSecretRef finds the Secret key an env var of a rendered workload
// reads.
func envSecretRef(workloads []workload, name string) (secretRef, bool) {
	for _, w := range workloads {
		for _, c := range append(slices.Clone(w.Pod.InitContainers), w.Pod.Containers...) {
			for _, e := range c.Env {
				if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return secretRef{Name: e.ValueFrom.SecretKeyRef.Name, Key: e.ValueFrom.SecretKeyRef.Key}, true
				}
			}
		}
	}
	return secretRef{}, false
}

// composedDatabases are the databases the render asks a provider or
// operator to create, by name, with their owners: CloudNativePG Databases
// and provider-sql Databases.
func composedDatabases(r *render) map[string]string {
	dbs := map[string]string{}
	for _, u := range r.Objects {
		switch {
		case u.GetKind() != "Database":
		case strings.HasPrefix(u.GetAPIVersion(), "postgresql.cnpg.io/"):
			name, _, _ := unstructured.NestedString(u.Object, "spec", "name")
			owner, _, _ := unstructured.NestedString(u.Object, "spec", "owner")
			dbs[name] = owner
		case strings.HasPrefix(u.GetAPIVersion(), "postgresql.sql."):
			owner, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "owner")
			dbs[u.GetAnnotations()["crossplane.io/external-name"]] = owner
		}
	}
	return dbs
}

// prepareDatabases creates the Postgres user the rendered configs connect
// as, with the password the test supplies through the rendered Secret
// reference, and the databases. Where the render composes Database objects
// the test plays their provider (CloudNativePG or provider-sql): it creates
// exactly those, owned as they say, and every database a config names must
// be one of them. Otherwise the databases are the user's, created up front.
func prepareDatabases(t *testing.T, r *render, svc *services, runs []*run) {
	t.Helper()
	user := ""
	for _, rn := range runs {
		if u, ok := rn.Effective("postgres.connection.user"); ok && u != "" {
			user = u
			break
		}
	}
	if user == "" {
		t.Fatal("no rendered config sets postgres.connection.user")
	}
	// The password as the rendered reference resolves it.
	password := ""
	for _, rn := range runs {
		if v, ok := rn.Inv.Lookup("ARMADA_POSTGRES_CONNECTION_PASSWORD"); ok {
			password = v
			break
		}
	}
	if user == "postgres" {
		svc.PG.MustExec(t, "postgres", "ALTER ROLE postgres PASSWORD "+testenv.QuoteLiteral(password))
		svc.PG.SuperuserPassword = password
	} else {
		svc.PG.CreateRole(t, user, password)
	}
	composed := composedDatabases(r)
	for _, db := range slices.Sorted(maps.Keys(composed)) {
		if composed[db] != user {
			t.Errorf("composed database %s is owned by %q, but the components connect as %q", db, composed[db], user)
		}
		svc.PG.CreateDatabase(t, db, composed[db])
	}
	created := map[string]bool{}
	for _, rn := range runs {
		if !rn.Cfg.Has("postgres.connection.host") {
			continue
		}
		db, _ := rn.Effective("postgres.connection.dbname")
		if db == "" || created[db] {
			continue
		}
		if len(composed) > 0 {
			if _, ok := composed[db]; !ok {
				t.Errorf("%s connects to database %q, which no composed Database creates", rn.ID(), db)
			}
			continue
		}
		svc.PG.CreateDatabase(t, db, user)
		created[db] = true
	}
}
