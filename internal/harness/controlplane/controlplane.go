// Package controlplane runs a complete, private Crossplane control plane as
// local processes, without Docker or a kubelet: etcd, kube-apiserver,
// kube-controller-manager (garbage collector and namespace controllers),
// Crossplane core, function-armada served over mTLS, provider-kubernetes and,
// if asked (Options.RunProviderSQL), provider-sql; with
// Options.LeastPrivilege Crossplane runs as its chart's ServiceAccount
// rather than as admin.
// It then installs the project's XRD and Composition (package/xarmada), so
// an ArmadaClaim applied to it is composed by the real function.
//
// Every process listens on a free port on 127.0.0.1, keeps its state and log
// in a data directory and leads its own process group, so Stop (and, on
// Linux, the death of the parent process) kills it and everything it spawned.
// The binaries are built once into ~/.cache/armada-crossplane/bin by the
// scripts under tools/; Start fails, and never skips, if one is missing.
package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// stepTimeout bounds each wait for a process or an object to become ready.
const stepTimeout = 3 * time.Minute

// Options configure a ControlPlane. The zero value is usable from anywhere
// inside the repository.
type Options struct {
	// DataDir holds the processes' state, certificates, kubeconfig and logs.
	// Empty means a new temporary directory.
	DataDir string
	// KeepData keeps DataDir after Stop. A temporary DataDir is otherwise
	// removed; a DataDir the caller chose is never removed.
	KeepData bool

	// BinDir holds the cached tool binaries. Empty means the tool cache
	// (testutil.ToolDir, by default ~/.cache/armada-crossplane/bin). The
	// binary paths below default to files in it named by version.
	BinDir                string
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	Crossplane            string
	ProviderKubernetes    string

	// Function is the function-armada binary. Empty means Start builds it
	// from RepoRoot with `go build ./functions/armada` into DataDir.
	Function string
	// FunctionEnv is extra environment (KEY=VALUE) for function-armada, for
	// example PASSWORD_KEY_FILE.
	FunctionEnv []string

	// RepoRoot is the root of this repository, which holds package/xarmada
	// and functions/armada. Empty means the nearest parent of the working
	// directory whose go.mod declares this module.
	RepoRoot string

	// PackageDir holds the definition.yaml (XRD) and composition.yaml Start
	// installs. Empty means RepoRoot/package/xarmada.
	PackageDir string

	// CrossplaneCRDDir and ProviderKubernetesCRDDir hold the CRDs to apply.
	// Empty means the directories in the Go module cache, downloaded with
	// `go mod download` if needed.
	CrossplaneCRDDir         string
	ProviderKubernetesCRDDir string

	// SkipProviderKubernetes leaves provider-kubernetes, its CRDs and its
	// ProviderConfigs out.
	SkipProviderKubernetes bool

	// RunProviderSQL starts provider-sql (from ProviderSQL, which defaults
	// to BinDir/provider-sql-VERSION) beside provider-kubernetes, so the
	// Databases function-armada composes for an External PostgreSQL with
	// an admin Secret are created, and dropped under deletionPolicy Delete,
	// on the server that Secret names. It needs the backing services' CRDs.
	RunProviderSQL bool
	ProviderSQL    string

	// SkipBackingServiceCRDs leaves out the CRDs of provider-helm,
	// provider-sql and CloudNativePG at the pinned versions
	// (internal/harness/thirdparty), which an Armada with in-cluster or
	// provider-created backing services composes.
	SkipBackingServiceCRDs bool

	// KubernetesOnly starts only etcd, kube-apiserver and
	// kube-controller-manager, and applies only ExtraCRDDirs: no
	// Crossplane, function, provider-kubernetes or package. For testing a
	// controller run in-process, such as provider-armada's.
	KubernetesOnly bool

	// ServiceAccounts runs kube-controller-manager's service-account
	// controller, which gives each namespace a default ServiceAccount as
	// it appears, as in every real cluster: worker clusters set it, where
	// the composed one (which mounts no token) must take it over.
	// Workloads runs it too.
	ServiceAccounts bool

	// ExtraCRDDirs hold more CRDs (every *.yaml file) to apply and wait
	// for, such as package/provider/crds.
	ExtraCRDDirs []string

	// SkipFunction leaves function-armada and its paused FunctionRevision
	// out, and SkipPackage the XRD and Composition from PackageDir: for
	// tests where Crossplane's package manager installs them from the
	// configuration-armada package instead.
	SkipFunction bool
	SkipPackage  bool

	// ProviderPollInterval is how often provider-kubernetes re-observes
	// each Object (its --poll flag), for example the readiness of a
	// Deployment in a worker cluster. Zero keeps the provider's default,
	// ten minutes.
	ProviderPollInterval time.Duration

	// LeastPrivilege runs Crossplane core under its chart's ServiceAccount
	// with exactly its chart's ClusterRole and the rules aggregated into it
	// (cluster/rbac's, and the RBAC manager's for PackageDir's XRDs and the
	// providers' CRDs), through a TokenRequest token instead of the admin
	// kubeconfig. See identity.go.
	LeastPrivilege bool

	// JobFlow also runs kube-scheduler and KWOK (with the Stages in
	// kwok/stages.yaml) and kube-controller-manager's node-lifecycle
	// controller, so that Armada's job pods are bound to and "run" on the
	// Nodes AddNodes creates. KubeScheduler and KWOK default to files in
	// BinDir named by version.
	JobFlow       bool
	KubeScheduler string
	KWOK          string

	// Workloads also runs kube-controller-manager's controllers that a
	// real node's workloads need (internal/harness/node): Deployments,
	// ReplicaSets, StatefulSets, Jobs, EndpointSlices for Services, the
	// default ServiceAccount and the kube-root-ca.crt ConfigMap in every
	// namespace; and the API server's ServiceAccount admission plugin,
	// which mounts pods' tokens, and its client certificate for kubelets
	// (reached at their InternalIP), whose CA is the RESTConfig's.
	Workloads bool

	// JobFlowLater, with JobFlow, leaves kube-scheduler and KWOK out of
	// Start (their binaries need not be built yet) until StartJobFlow;
	// kube-controller-manager still runs the job flow's controllers. make
	// run builds them once it has shown the composed tree, which needs
	// neither.
	JobFlowLater bool

	// Debug runs Crossplane, the function and provider-kubernetes with
	// debug logging.
	Debug bool

	// Logf receives progress messages, such as "etcd ready in 0.8s". Nil
	// discards them.
	Logf func(format string, args ...any)
}

// A Step is one timed part of bringing the control plane up.
type Step struct {
	Name     string
	Duration time.Duration
}

// ports are the loopback ports of one control plane.
type ports struct {
	etcdClient, etcdPeer                                   int
	apiServer, controllerManager                           int
	crossplaneMetrics, crossplaneHealth, crossplaneWebhook int
	function, functionMetrics                              int
	providerWebhook, providerMetrics, providerHealth       int
}

// A ControlPlane is a running control plane. Create one with Start or
// StartForTest and stop it with Stop.
type ControlPlane struct {
	opts      Options
	dir       string
	removeDir bool
	ports     ports
	ca        *certAuthority
	token     string

	kubeconfig           string
	crossplaneKubeconfig string
	restConfig           *rest.Config
	client               client.Client

	procs      map[string]*process
	order      []string
	steps      []Step
	fnBuilt    chan buildResult
	stopMu     sync.Mutex
	stopped    bool
	started    time.Time
	tlsDirs    tlsDirs
	saPub      string
	saKey      string
	tokenFile  string
	fnEndpoint string
	// fnArgs are function-armada's usual arguments, once RestartFunction
	// has changed them.
	fnArgs []string
}

// tlsDirs are the directories holding the generated certificates.
type tlsDirs struct {
	apiServer, crossplaneClient, function, provider string
	// kubeletClient is the API server's client certificate for real
	// nodes' kubelets (Options.Workloads).
	kubeletClient string
}

// Start brings up a control plane and returns once the XRD from
// package/xarmada is Established and Offered. ctx bounds only the bring-up;
// the processes run until Stop. On error everything started is stopped.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	c := &ControlPlane{opts: o, procs: map[string]*process{}, started: time.Now()}
	if c.opts.Logf == nil {
		c.opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.start(ctx); err != nil {
		// Stop the function's build, if it still runs, before Stop removes
		// the directory it writes to.
		cancel()
		if c.fnBuilt != nil {
			<-c.fnBuilt
		}
		_ = c.Stop()
		return nil, err
	}
	total := time.Since(c.started)
	c.steps = append(c.steps, Step{Name: "total", Duration: total})
	c.opts.Logf("control plane ready in %.1fs (data in %s)", total.Seconds(), c.dir)
	return c, nil
}

func (c *ControlPlane) start(ctx context.Context) error {
	if err := c.step("options resolved", func() error { return c.resolve(ctx) }); err != nil {
		return err
	}
	if c.opts.Function == "" && !c.opts.KubernetesOnly && !c.opts.SkipFunction {
		c.fnBuilt = make(chan buildResult, 1)
		go func() {
			path, err := c.buildFunction(ctx)
			c.fnBuilt <- buildResult{path: path, err: err}
		}()
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
		skip bool
	}{
		{name: "certificates generated", fn: c.generatePKI},
		{name: "etcd ready", fn: c.startEtcd},
		{name: "kube-apiserver ready", fn: c.startAPIServer},
		{name: "kube-controller-manager ready", fn: c.startControllerManager},
		{name: "kube-scheduler and kwok ready", fn: c.startJobFlow, skip: !c.opts.JobFlow || c.opts.JobFlowLater},
		{name: "CRDs applied and established", fn: c.applyCRDs},
		{name: "crossplane identity ready", fn: c.applyCrossplaneIdentity, skip: c.opts.KubernetesOnly || !c.opts.LeastPrivilege},
		{name: "crossplane ready", fn: c.startCrossplaneFirst, skip: c.opts.KubernetesOnly},
		{name: "function-armada ready", fn: c.startFunctionFirst, skip: c.opts.KubernetesOnly || c.opts.SkipFunction},
		{name: "provider-kubernetes ready", fn: c.startProviderFirst, skip: c.opts.SkipProviderKubernetes || c.opts.KubernetesOnly},
		{name: "provider-sql ready", fn: c.startProviderSQL, skip: !c.opts.RunProviderSQL || c.opts.KubernetesOnly},
		{name: "XRD established and offered", fn: c.installPackage, skip: c.opts.KubernetesOnly || c.opts.SkipPackage},
	}
	for _, s := range steps {
		if s.skip {
			continue
		}
		if err := c.step(s.name, func() error { return s.fn(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

// step runs fn, records how long it took and logs it.
func (c *ControlPlane) step(name string, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return err
	}
	d := time.Since(start)
	c.steps = append(c.steps, Step{Name: name, Duration: d})
	c.opts.Logf("%s in %.1fs", name, d.Seconds())
	return nil
}

// resolve fills in defaults and checks every binary exists.
func (c *ControlPlane) resolve(ctx context.Context) error {
	if err := c.opts.defaultBinaries(); err != nil {
		return err
	}
	if c.opts.RepoRoot == "" {
		root, err := testutil.FindRoot()
		if err != nil {
			return errors.Wrap(err, "set Options.RepoRoot")
		}
		c.opts.RepoRoot = root
	}
	if c.opts.PackageDir == "" {
		c.opts.PackageDir = filepath.Join(c.opts.RepoRoot, "package", "xarmada")
	}
	c.dir = c.opts.DataDir
	if c.dir == "" {
		d, err := os.MkdirTemp("", "armada-controlplane-")
		if err != nil {
			return errors.Wrap(err, "cannot create data directory")
		}
		c.dir, c.removeDir = d, !c.opts.KeepData
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o700); err != nil {
		return errors.Wrap(err, "cannot create data directory")
	}
	if err := c.resolveCRDDirs(ctx); err != nil {
		return err
	}
	p, err := freePorts(ctx, 12)
	if err != nil {
		return err
	}
	c.ports = ports{
		etcdClient: p[0], etcdPeer: p[1], apiServer: p[2], controllerManager: p[3],
		crossplaneMetrics: p[4], crossplaneHealth: p[5], crossplaneWebhook: p[6],
		function: p[7], providerWebhook: p[8], providerMetrics: p[9], providerHealth: p[10],
		functionMetrics: p[11],
	}
	return nil
}

// newProcess registers a process whose output goes to DataDir/logs/NAME.log.
func (c *ControlPlane) newProcess(name, path string, args, env []string) *process {
	p := &process{name: name, path: path, args: args, env: env, logPath: filepath.Join(c.dir, "logs", name+".log")}
	c.procs[name] = p
	c.order = append(c.order, name)
	return p
}

// Stop kills every process group the control plane started, newest first,
// and removes a temporary data directory unless KeepData is set. It is safe
// to call more than once, and from more than one goroutine.
func (c *ControlPlane) Stop() error {
	return c.stop(c.opts.Logf)
}

// Keep makes Stop leave the data directory, logs and all, in place, as
// KeepData would have: test suites call it when a test failed, so the
// failure can be read after the run (the path is DataDir).
func (c *ControlPlane) Keep() {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.removeDir = false
}

func (c *ControlPlane) stop(logf func(string, ...any)) error {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	start := time.Now()
	var errs []error
	for _, name := range slices.Backward(c.order) {
		if err := c.procs[name].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.removeDir && len(errs) == 0 {
		if err := removeAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	logf("control plane stopped in %.1fs", time.Since(start).Seconds())
	return errors.Join(errs...)
}

// removeAll removes dir, retrying briefly: a process killed a moment ago
// may have left the kernel finishing writes, which makes a first attempt
// fail with "directory not empty".
func removeAll(dir string) error {
	var err error
	for range 5 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.Wrapf(err, "cannot remove data directory %s", dir)
}

// Kubeconfig returns the path of a kubeconfig for the API server, with a
// system:masters token user.
func (c *ControlPlane) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a copy of the REST config for the API server.
func (c *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns a controller-runtime client for the API server. Its scheme
// knows the built-in Kubernetes types and CRDs; use unstructured objects for
// everything else.
func (c *ControlPlane) Client() client.Client { return c.client }

// DataDir returns the directory holding the control plane's state and logs.
func (c *ControlPlane) DataDir() string { return c.dir }

// Steps returns how long each step of Start took, ending with the total.
func (c *ControlPlane) Steps() []Step { return append([]Step(nil), c.steps...) }

// FunctionEndpoint returns the host:port function-armada serves on.
func (c *ControlPlane) FunctionEndpoint() string { return c.fnEndpoint }

// LogPath returns the path of a process's log file; name is one of the Proc
// constants.
func (c *ControlPlane) LogPath(name string) string {
	return filepath.Join(c.dir, "logs", name+".log")
}

// LogTail returns about the last n lines of a process's log; name is one of
// the Proc constants.
func (c *ControlPlane) LogTail(name string, n int) string {
	p, ok := c.procs[name]
	if !ok {
		return fmt.Sprintf("(no process %q)", name)
	}
	return p.tail(n)
}

// LogTails returns, for failure messages, each process's state (running,
// stopped by a signal, exited) and about the last n lines of its log.
func (c *ControlPlane) LogTails(n int) string {
	var b strings.Builder
	for _, name := range c.order {
		p := c.procs[name]
		fmt.Fprintf(&b, "--- %s (%s): %s\n%s\n", name, p.logPath, p.state(), p.tail(n))
	}
	return b.String()
}

// ProcessGroups returns, for each process name, the ids of every process
// group it has led, including ones killed by a restart. After Stop none of
// them should exist.
func (c *ControlPlane) ProcessGroups() map[string][]int {
	m := make(map[string][]int, len(c.procs))
	for name, p := range c.procs {
		m[name] = p.groups()
	}
	return m
}

// ProcessNames returns the names of the processes the control plane runs,
// in start order.
func (c *ControlPlane) ProcessNames() []string {
	return append([]string(nil), c.order...)
}
