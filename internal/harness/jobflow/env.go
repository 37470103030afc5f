package jobflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/provider"
)

// ClaimAPIVersion is the ArmadaClaim's apiVersion.
const ClaimAPIVersion = "platform.armadaproject.io/v1alpha1"

// BackendOptions name the far ends as a claim names them.
type BackendOptions struct {
	// PostgresAddr, RedisAddr, PulsarAddr and PulsarAdminAddr are the
	// addresses (host name:port) the claim dials.
	PostgresAddr, RedisAddr, PulsarAddr, PulsarAdminAddr string
	// PostgresUser and PostgresPassword own the scheduler and lookout
	// databases.
	PostgresUser, PostgresPassword string
	// RedisPassword is required of Redis clients; empty for none.
	RedisPassword string
}

// Backends are a claim's far ends: private PostgreSQL (with databases
// scheduler and lookout), Redis and Pulsar, reached through Names at the
// host names the claim gives them.
type Backends struct {
	Postgres *testenv.Postgres
	Redis    *testenv.Redis
	Pulsar   *testenv.Pulsar
	Names    *podrun.Names
}

// StartBackends starts the far ends for t and stops them on its cleanup.
func StartBackends(t TB, o BackendOptions) *Backends {
	t.Helper()
	b := &Backends{
		Postgres: testenv.StartPostgres(t),
		Redis:    testenv.StartRedisWithPassword(t, o.RedisPassword),
		Pulsar:   testenv.StartPulsar(t),
		Names:    podrun.NewNames(),
	}
	t.Cleanup(b.Names.Close)
	b.createDatabases(t, o)
	relays := map[string]string{
		o.PostgresAddr:    fmt.Sprintf("%s:%d", b.Postgres.Host, b.Postgres.Port),
		o.RedisAddr:       b.Redis.Addr(),
		o.PulsarAddr:      strings.TrimPrefix(b.Pulsar.ServiceURL(), "pulsar://"),
		o.PulsarAdminAddr: strings.TrimPrefix(b.Pulsar.AdminURL(), "http://"),
	}
	for from, to := range relays {
		if err := b.Names.Relay(from, to); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// createDatabases creates the PostgreSQL user o names and its databases
// scheduler and lookout.
func (b *Backends) createDatabases(t TB, o BackendOptions) {
	t.Helper()
	b.Postgres.CreateRole(t, o.PostgresUser, o.PostgresPassword)
	b.Postgres.CreateDatabase(t, "scheduler", o.PostgresUser)
	b.Postgres.CreateDatabase(t, "lookout", o.PostgresUser)
}

// RunnerOptions say what StartRunner runs.
type RunnerOptions struct {
	Client    client.Client
	Namespace string
	// APIServer is the cluster's API server (URL and CA): a pod that
	// mounts its ServiceAccount's token reaches it with that token, as in
	// a cluster; no process gets a kubeconfig.
	APIServer *rest.Config
	// Releases are the binaries of each release (x.y.z) the runner may
	// run: the composed one, and the one an upgrade moves to.
	Releases map[string]podrun.Release
	// Name names the runner's directory and prefixes its log lines, for
	// a runner per cluster; empty: "pods", no prefix.
	Name string
	// Logf receives the runner's progress; nil discards it.
	Logf func(string, ...any)
}

// StartRunner runs the pods of what was composed in o.Namespace of the
// cluster o.Client reaches as local processes (package podrun) until t's
// cleanup.
func StartRunner(t TB, b *Backends, o RunnerOptions) *podrun.Runner {
	t.Helper()
	r, _ := StartStoppableRunner(t, b, o)
	return r
}

// StartStoppableRunner is StartRunner that also returns a function that
// stops the runner and its pods before t's cleanup.
func StartStoppableRunner(t TB, b *Backends, o RunnerOptions) (*podrun.Runner, func()) {
	t.Helper()
	dir, logf := o.Name, o.Logf
	if dir == "" {
		dir = "pods"
	} else if logf != nil {
		logf = func(format string, args ...any) { o.Logf(o.Name+": "+format, args...) }
	}
	runner, err := podrun.NewRunner(podrun.RunnerOptions{
		Client: o.Client, Namespace: o.Namespace,
		Releases: func(tag string) (podrun.Release, bool) {
			r, ok := o.Releases[tag]
			return r, ok
		},
		APIServer: o.APIServer,
		Tools:     map[string]string{podrun.Ghostunnel: testenv.ToolBin(t, podrun.Ghostunnel, armada.TLSProxyVersion)},
		Dir:       filepath.Join(t.TempDir(), dir),
		Names:     b.Names,
		FreePort:  func() (int, error) { return testenv.FreePort(t), nil },
		Logf:      logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { runner.Run(ctx, time.Second); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return runner, stop
}

// RunProvider runs provider-armada's controllers against cfg's cluster
// until ctx is done, dialling Armada's composed server address as a pod
// would, through names. errs, if not nil, receives the manager's error.
func RunProvider(ctx context.Context, cfg *rest.Config, names *podrun.Names, errs func(error)) error {
	ctrllog.SetLogger(logr.Discard())
	// Its event recorder logs through klog: failed event writes while
	// the control plane stops would land on stderr.
	klog.SetLogger(logr.Discard())
	// A test binary may run the provider more than once (TestJobFlow and
	// TestLookoutUI); controller-runtime refuses a controller name twice.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics: server.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Client:     provider.ClientOptions(),
	})
	if err != nil {
		return errors.Wrap(err, "cannot create provider-armada's manager")
	}
	if err := armadav1.SchemeBuilder.AddToScheme(mgr.GetScheme()); err != nil {
		return errors.Wrap(err, "cannot add provider-armada's types")
	}
	o := controller.Options{
		Logger: logging.NewNopLogger(), PollInterval: 5 * time.Second, MaxConcurrentReconciles: 2,
		GlobalRateLimiter: ratelimiter.NewGlobal(100),
	}
	if err := provider.Setup(mgr, provider.Options{Controller: o, CreationGracePeriod: time.Second, Dialer: names.Dial}); err != nil {
		return errors.Wrap(err, "cannot set up provider-armada")
	}
	go func() {
		if err := mgr.Start(ctx); err != nil && errs != nil {
			errs(errors.Wrap(err, "provider-armada stopped"))
		}
	}()
	return nil
}

// A Claim is one ArmadaClaim in a cluster, read for t.
type Claim struct {
	T         TB
	Client    client.Client
	Namespace string
	Name      string
}

func (c Claim) get() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ClaimAPIVersion)
	u.SetKind("ArmadaClaim")
	err := c.Client.Get(c.T.Context(), client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, u)
	return u, err
}

// For returns the claim read for t (a subtest: its Fatal must be its own).
func (c Claim) For(t TB) Claim {
	c.T = t
	return c
}

// Condition returns a condition of the claim.
func (c Claim) Condition(typ string) (status, reason, message string) {
	u, err := c.get()
	if err != nil {
		return "", "", err.Error()
	}
	if c, ok := manifest.ConditionOf(u, typ); ok {
		return c.Status, c.Reason, c.Message
	}
	return "", "", "no condition " + typ
}

// Endpoint reads one of the claim's status.endpoints.
func (c Claim) Endpoint(name string) string {
	c.T.Helper()
	u, err := c.get()
	if err != nil {
		c.T.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(u.Object, "status", "endpoints", name)
	if v == "" {
		c.T.Fatalf("the claim's status.endpoints.%s is empty", name)
	}
	return v
}

// Credential reads a basic user's password from the claim's credentials
// Secret (status.credentialsSecret).
func (c Claim) Credential(user string) string {
	c.T.Helper()
	u, err := c.get()
	if err != nil {
		c.T.Fatal(err)
	}
	name, _, _ := unstructured.NestedString(u.Object, "status", "credentialsSecret")
	if name == "" {
		name = c.Name + "-credentials"
	}
	s := &corev1.Secret{}
	if err := c.Client.Get(c.T.Context(), client.ObjectKey{Namespace: c.Namespace, Name: name}, s); err != nil {
		c.T.Fatalf("the credentials Secret %s: %v", name, err)
	}
	p, ok := s.Data[user]
	if !ok {
		c.T.Fatalf("the credentials Secret %s has no key %s", name, user)
	}
	return string(p)
}

// Version reads the claim's status.version.<field> (running, desired).
func (c Claim) Version(field string) string {
	u, err := c.get()
	if err != nil {
		return err.Error()
	}
	v, _, _ := unstructured.NestedString(u.Object, "status", "version", field)
	return v
}

// ExecutorReady reads executor clusterID's entry in the claim's
// status.executors: whether it is ready, and the reason given.
func (c Claim) ExecutorReady(clusterID string) (bool, string) {
	u, err := c.get()
	if err != nil {
		return false, err.Error()
	}
	es, _, _ := unstructured.NestedSlice(u.Object, "status", "executors")
	for _, e := range es {
		m, _ := e.(map[string]any)
		if m["clusterId"] == clusterID {
			return m["ready"] == true, fmt.Sprint(m["reason"])
		}
	}
	return false, "not in status.executors"
}

// ExecutorClusterID reads the in-cluster executor's clusterId from its
// composed config.
func (c Claim) ExecutorClusterID() string {
	c.T.Helper()
	return c.ExecutorClusterIDOf(c.Client, "local")
}

// ExecutorClusterIDOf reads executor's clusterId from its composed config
// Secret (<claim>-executor-<executor>-config) in the cluster cl reaches:
// the control plane's for an in-cluster executor, a worker cluster's for
// a remote one.
func (c Claim) ExecutorClusterIDOf(cl client.Client, executor string) string {
	c.T.Helper()
	s := &corev1.Secret{}
	if err := cl.Get(c.T.Context(), client.ObjectKey{Namespace: c.Namespace, Name: c.Name + "-executor-" + executor + "-config"}, s); err != nil {
		c.T.Fatalf("the executor's config: %v", err)
	}
	var cfg struct {
		Application struct {
			ClusterID string `json:"clusterId"`
		} `json:"application"`
	}
	if err := yaml.Unmarshal(s.Data["config.yaml"], &cfg); err != nil || cfg.Application.ClusterID == "" {
		c.T.Fatalf("the executor's config has no application.clusterId (%v)", err)
	}
	return cfg.Application.ClusterID
}

// Armadactl returns an Armadactl dialling the claim's
// status.endpoints.grpc, trusting the claim's CA (its <name>-tls Secret),
// resolving the composed names through names.
func (c Claim) Armadactl(bin string, names *podrun.Names) *Armadactl {
	c.T.Helper()
	tlsSecret := &corev1.Secret{}
	if err := c.Client.Get(c.T.Context(), client.ObjectKey{Namespace: c.Namespace, Name: c.Name + "-tls"}, tlsSecret); err != nil {
		c.T.Fatal(err)
	}
	dir := c.T.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, tlsSecret.Data["ca.crt"], 0o600); err != nil {
		c.T.Fatal(err)
	}
	hosts, err := names.HostsFile(dir, nil)
	if err != nil {
		c.T.Fatal(err)
	}
	return &Armadactl{Bin: bin, Dir: c.T.TempDir(), Hosts: hosts, CA: caFile, Server: c.Endpoint("grpc")}
}

// Lookout returns how to reach the claim's Lookout: its
// status.endpoints.lookout through names, trusting only the claim's CA
// (its <name>-tls Secret) when that URL is HTTPS.
func (c Claim) Lookout(names *podrun.Names) Lookout {
	c.T.Helper()
	l := Lookout{URL: c.Endpoint("lookout"), Names: names}
	if strings.HasPrefix(l.URL, "https://") {
		tlsSecret := &corev1.Secret{}
		if err := c.Client.Get(c.T.Context(), client.ObjectKey{Namespace: c.Namespace, Name: c.Name + "-tls"}, tlsSecret); err != nil {
			c.T.Fatal(err)
		}
		l.CA = tlsSecret.Data["ca.crt"]
	}
	return l
}

// WaitLookout waits until Lookout's API shows every job of a job set in
// state, as user admin.
func WaitLookout(t TB, l Lookout, password, jobSet, state string) []LookoutJob {
	t.Helper()
	var jobs []LookoutJob
	WaitFor(t, time.Minute, "lookout to show job set "+jobSet+" "+state, func() (bool, string) {
		var err error
		jobs, err = LookoutJobs(t.Context(), l, "admin", password, jobSet)
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs {
			if j.State != state {
				return false, fmt.Sprintf("job %s is %s", j.JobID, j.State)
			}
		}
		return len(jobs) > 0, fmt.Sprintf("%d jobs", len(jobs))
	}, nil)
	return jobs
}

// Namespace creates a namespace if it is missing, enforcing the
// restricted Pod Security Standard if restricted.
func Namespace(t TB, c client.Client, name string, restricted bool) {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if restricted {
		n.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	}
	if err := c.Create(t.Context(), n); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatalf("cannot create namespace %s: %v", name, err)
	}
}

// SubmitCheckPeriod is how often Armada's scheduler reloads the executors
// its submit check judges jobs against (executorUpdateFrequency, 60 s in
// Armada's defaults, which the claim keeps). A job submitted before the
// first reload that sees an executor's Nodes is failed as unschedulable.
const SubmitCheckPeriod = 60 * time.Second

// WaitExecutor waits until the scheduler's database holds executor
// clusterID (it has made a lease request, reporting its Nodes) and
// returns when it was first seen there.
func WaitExecutor(t TB, pg *testenv.Postgres, clusterID string, progress func(string)) time.Time {
	t.Helper()
	return WaitExecutorIn(t, pg, "scheduler", clusterID, progress)
}

// WaitExecutorIn is WaitExecutor for the scheduler whose database is db.
func WaitExecutorIn(t TB, pg *testenv.Postgres, db, clusterID string, progress func(string)) time.Time {
	t.Helper()
	q := "SELECT count(*) FROM executors WHERE executor_id = " + testenv.QuoteLiteral(clusterID)
	WaitFor(t, 3*time.Minute, "executor "+clusterID+" in the scheduler's database", func() (bool, string) {
		n, err := pg.Exec(db, q)
		if err != nil {
			return false, err.Error()
		}
		return strings.TrimSpace(n) == "1", "the scheduler has not heard from executor " + clusterID + " yet"
	}, progress)
	return time.Now()
}

// submitCheckReload is the line Armada's SubmitChecker logs on each reload
// of its executors (internal/scheduler/submitcheck.go, updateExecutors),
// after it read them from the database and just before it stores the
// state submits are checked against.
var submitCheckReload = regexp.MustCompile(`(?m)^(\S+) INFO \S+ Retrieved (\d+) executors`)

// WaitSubmitCheckLogged is WaitSubmitCheck that reads the scheduler's logs
// (its log files, as logs returns them) instead of waiting a whole period:
// it returns a margin after the first reload logged since seen that
// retrieved at least want executors (all of them: none is ever deleted),
// at most a period and the margin after seen. A reload that read the
// database before the last executor was there retrieved fewer.
func WaitSubmitCheckLogged(t TB, logs func() []string, want int, seen time.Time, progress func(string)) {
	t.Helper()
	const margin = 5 * time.Second
	until := seen.Add(SubmitCheckPeriod + margin)
	WaitFor(t, time.Until(until)+time.Second, fmt.Sprintf("the submit check reloaded with %d executors", want), func() (bool, string) {
		if reloadedSince(logs(), want, seen) || !time.Now().Before(until) {
			return true, ""
		}
		return false, fmt.Sprintf("Armada's submit check reloads executors every executorUpdateFrequency (%s by default); none with %d logged since %s",
			SubmitCheckPeriod, want, seen.UTC().Format(time.TimeOnly))
	}, progress)
	if progress != nil {
		progress(fmt.Sprintf("the submit check reloaded its executors %s after the last was seen", time.Since(seen).Round(time.Second)))
	}
	select {
	case <-t.Context().Done():
		t.Fatal("stopped while waiting for the submit check")
	case <-time.After(min(margin, time.Until(until))):
	}
}

// submitCheckPeriodLine is the line Armada's SubmitChecker logs as it
// starts (internal/scheduler/submitcheck.go, Run): its
// executorUpdateFrequency.
var submitCheckPeriodLine = regexp.MustCompile(`Will refresh executor state every (\S+)`)

// LoggedSubmitCheckPeriod returns the period the scheduler's submit check
// logged it reloads executors at, as Go prints a duration ("10s"), or ""
// if none of its log files (as logs returns them) holds it.
func LoggedSubmitCheckPeriod(logs func() []string) string {
	for _, f := range logs() {
		data, err := os.ReadFile(f) //nolint:gosec // The scheduler's own log files.
		if err != nil {
			continue
		}
		if m := submitCheckPeriodLine.FindSubmatch(data); m != nil {
			return string(m[1])
		}
	}
	return ""
}

// SchedulerLogs returns a function listing the log files runner keeps of
// the scheduler container of the Armada composed for the claim named
// claim, for WaitSubmitCheckLogged.
func SchedulerLogs(runner *podrun.Runner, claim string) func() []string {
	name := "StatefulSet-" + claim + "-scheduler-scheduler.log"
	return func() []string { return runner.Logs()[name] }
}

// reloadedSince reports whether any of the log files holds a submit check
// reload, logged at or after since, that retrieved at least want executors.
func reloadedSince(files []string, want int, since time.Time) bool {
	for _, f := range files {
		data, err := os.ReadFile(f) //nolint:gosec // The runner's own log files.
		if err != nil {
			continue
		}
		for _, m := range submitCheckReload.FindAllStringSubmatch(string(data), -1) {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			n, nerr := strconv.Atoi(m[2])
			if err == nil && nerr == nil && n >= want && !at.Before(since) {
				return true
			}
		}
	}
	return false
}

// WaitSubmitCheck waits until the scheduler's submit check has reloaded
// its executors at least once since seen (WaitExecutor), with a margin.
func WaitSubmitCheck(t TB, seen time.Time, progress func(string)) {
	t.Helper()
	until := seen.Add(SubmitCheckPeriod + 5*time.Second)
	if d := time.Until(until); d > 0 {
		if progress != nil {
			progress(fmt.Sprintf("Armada's submit check reloads executors every %s (executorUpdateFrequency): %s more", SubmitCheckPeriod, d.Round(time.Second)))
		}
		select {
		case <-t.Context().Done():
			t.Fatal("stopped while waiting for the submit check")
		case <-time.After(d):
		}
	}
}
