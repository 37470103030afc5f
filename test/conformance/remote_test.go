package conformance

import (
	"context"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	authv1 "k8s.io/api/authentication/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/podrun"
)

// remoteTimeout bounds how long a remote executor may take to call the
// executor API: its informers sync against the worker, then its lease task
// runs every jobLeaseRenewalInterval (5 s), and a call that cannot connect
// gives up after jobLeaseRequestTimeout (30 s).
const remoteTimeout = 60 * time.Second

// Markers of a remote executor's log (internal/executor/service/
// job_requester.go): a lease round trip that succeeded, and one that
// failed.
var (
	leaseOK     = regexp.MustCompile(`Reporting current free resource .* Received 0 new jobs`)
	leaseFailed = regexp.MustCompile(`Failed to request new jobs leases as because (.*)`)
	forbidden   = regexp.MustCompile(`(?i)\bforbidden\b`)
)

// workerClusters are the real Kubernetes API servers standing in for the
// worker clusters the render's Objects name, by providerConfigRef name.
type workerClusters struct {
	mu   sync.Mutex
	cps  map[string]*controlplane.ControlPlane
	errs map[string]error
	done chan struct{}
}

// startWorkerClusters starts one Kubernetes-only control plane (etcd,
// kube-apiserver, kube-controller-manager) per cluster, concurrently, in
// the background; Get waits for one.
func startWorkerClusters(t *testing.T, clusters []string) *workerClusters {
	t.Helper()
	w := &workerClusters{cps: map[string]*controlplane.ControlPlane{}, errs: map[string]error{}, done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cp, err := controlplane.Start(ctx, controlplane.Options{KubernetesOnly: true})
			w.mu.Lock()
			defer w.mu.Unlock()
			w.cps[c], w.errs[c] = cp, err
		})
	}
	go func() { wg.Wait(); close(w.done) }()
	t.Cleanup(func() {
		<-w.done
		for c, cp := range w.cps {
			if cp == nil {
				continue
			}
			if t.Failed() {
				cp.Keep()
				t.Logf("worker cluster %s logs (all kept in %s):\n%s", c, cp.DataDir(), cp.LogTails(15))
			}
			if err := cp.Stop(); err != nil {
				t.Errorf("cannot stop worker cluster %s: %v", c, err)
			}
		}
	})
	return w
}

// Get returns the worker cluster of a providerConfigRef name once it is up.
func (w *workerClusters) Get(cluster string) (*controlplane.ControlPlane, error) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cps[cluster], errors.Wrapf(w.errs[cluster], "cannot start worker cluster %s", cluster)
}

// remoteEnv is what a remote executor's invocation needs beyond the render.
type remoteEnv struct {
	workers *workerClusters
	api     *executorAPI
	proxy   *connectProxy
	// url is the armadaUrl every remote executor's config names.
	url string
}

// startRemote starts what the remote executors of a render dial: the
// worker clusters, and the executor API behind a CONNECT proxy, serving a
// certificate for the host of the armadaUrl the rendered configs name,
// signed by ca, and checking calls against the rendered scheduler's auth.
func startRemote(t *testing.T, runs []*run, ca *privateCA) *remoteEnv {
	t.Helper()
	var clusters []string
	var scheduler *run
	urls := map[string]bool{}
	for _, rn := range runs {
		if rn.Cluster != "" && !slices.Contains(clusters, rn.Cluster) {
			clusters = append(clusters, rn.Cluster)
		}
		if rn.Cluster != "" {
			u, _ := rn.Effective("executorApiConnection.armadaUrl")
			urls[u] = true
		}
		if rn.Inv.Component == "scheduler" && !rn.Job {
			scheduler = rn
		}
	}
	if len(clusters) == 0 {
		return nil
	}
	re := &remoteEnv{workers: startWorkerClusters(t, clusters)}
	if len(urls) != 1 {
		t.Fatalf("remote executors dial %d different executor API addresses %v; expected one (spec.executorApi.url or the ingress host)", len(urls), urls)
	}
	for u := range urls {
		re.url = u
	}
	host, _, err := net.SplitHostPort(re.url)
	if err != nil || host == "" {
		t.Fatalf("the rendered armadaUrl %q is not host:port: %v", re.url, err)
	}
	if scheduler == nil {
		t.Fatal("the render has remote executors but no scheduler, whose auth the executor API needs")
	}
	auth, err := schedulerAuthOf(scheduler)
	if err != nil {
		t.Fatal(err)
	}
	if ca == nil {
		t.Fatal("the render has remote executors but no spec.executorApi.caSecretRef; this test serves the executor API with a private CA")
	}
	re.api = startExecutorAPI(t, ca.ServerCert(t, host), auth)
	re.proxy = startConnectProxy(t, map[string]string{anyAuthority: re.api.Addr})
	return re
}

// prepareWorker creates in the executor's worker cluster what its
// Objects compose there, except the Deployment (no kubelet runs): the
// namespace, ServiceAccounts, RBAC, Secrets, Service and PriorityClasses.
// It returns a kubeconfig that authenticates as the executor's
// ServiceAccount with a token from the TokenRequest API, standing in for
// the token Kubernetes mounts into the pod, so the executor's requests are
// authorized by exactly the rendered ClusterRole and binding.
func prepareWorker(t *testing.T, r *render, re *remoteEnv, w workload, dir string) string {
	t.Helper()
	cp, err := re.workers.Get(w.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	return serviceAccountKubeconfig(t, cp, r.RemoteManifests(w.Cluster), w, dir)
}

// serviceAccountKubeconfig applies manifests to cp, Namespaces and
// ServiceAccounts first and Deployments not at all (no kubelet runs),
// replacing objects that exist, and returns a kubeconfig for cp that
// authenticates as w's ServiceAccount with a token from the TokenRequest
// API, standing in for the token Kubernetes mounts into the pod: w's
// requests are authorized by exactly the applied RBAC.
func serviceAccountKubeconfig(t *testing.T, cp *controlplane.ControlPlane, manifests []*unstructured.Unstructured, w workload, dir string) string {
	t.Helper()
	ctx := t.Context()
	order := map[string]int{"Namespace": 0, "ServiceAccount": 1}
	slices.SortStableFunc(manifests, func(a, b *unstructured.Unstructured) int {
		return rank(order, a.GetKind()) - rank(order, b.GetKind())
	})
	for _, m := range manifests {
		if m.GetKind() == "Deployment" {
			continue
		}
		if err := createOrReplace(ctx, cp, m.DeepCopy()); err != nil {
			t.Fatalf("the API server refuses %s %s/%s: %v", m.GetKind(), m.GetNamespace(), m.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(w.Namespace).CreateToken(ctx, w.Pod.ServiceAccountName,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("cannot get a token for ServiceAccount %s/%s: %v", w.Namespace, w.Pod.ServiceAccountName, err)
	}
	kc, err := cp.KubeconfigBytes()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Token = tr.Status.Token
	}
	path := filepath.Join(dir, "serviceaccount-kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// createOrReplace creates u, or replaces the object of its name if one
// exists: examples share an API server and compose objects of the same
// names.
func createOrReplace(ctx context.Context, cp *controlplane.ControlPlane, u *unstructured.Unstructured) error {
	err := cp.Client().Create(ctx, u)
	if !kerrors.IsAlreadyExists(err) {
		return err
	}
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(u.GroupVersionKind())
	if err := cp.Client().Get(ctx, client.ObjectKeyFromObject(u), old); err != nil {
		return err
	}
	u.SetResourceVersion(old.GetResourceVersion())
	return cp.Client().Update(ctx, u)
}

func rank(order map[string]int, kind string) int {
	if n, ok := order[kind]; ok {
		return n
	}
	return len(order)
}

// remoteCase is one run of a remote executor.
type remoteCase struct {
	name string
	// env changes the rendered environment: a variable with an empty
	// value is removed.
	env []envVar
	// auth replaces the scheduler's auth in the executor API, if set.
	auth *schedulerAuth
	// want matches the executor's lease outcome in its log: leaseOK, or
	// the error of leaseFailed.
	want *regexp.Regexp
	// code is what the executor API must answer every call of the run
	// with; noCalls if the run must make none.
	code codes.Code
}

// noCalls is a remoteCase code for runs that must not get as far as a call.
const noCalls = codes.Code(1000)

// checkRemoteExecutor runs a rendered remote executor against its worker
// cluster and the executor API, as rendered, and proves it connects over
// TLS trusting the private CA through the mounted caSecretRef and
// SSL_CERT_FILE, leases as its own identity with the scheduler's password
// for it, and holds execute_jobs. With negative, it then shows each of
// those is needed: without SSL_CERT_FILE the handshake fails, with a wrong
// password the call is Unauthenticated, and without an execute_jobs grant
// PermissionDenied, each seen in the executor's log and by the API.
func checkRemoteExecutor(t *testing.T, e *env, svc *services, free func() int, re *remoteEnv, rn *run, kubeconfig string, negative bool) {
	t.Helper()
	user, _ := rn.Effective("executorApiConnection.basicAuth.username")
	clusterID, _ := rn.Effective("application.clusterId")
	pool, _ := rn.Effective("application.pool")
	if user == "" || clusterID == "" {
		t.Fatalf("%s: the rendered config sets no executorApiConnection.basicAuth.username or application.clusterId", rn.ID())
	}
	if _, ok := rn.Inv.Lookup("SSL_CERT_FILE"); !ok {
		t.Errorf("%s: the rendered container sets no SSL_CERT_FILE, so Armada's client trusts only system roots", rn.ID())
	}
	good := re.api.currentAuth()
	if u, ok := good.Users[user]; !ok || u.Password == "" {
		t.Fatalf("%s: the scheduler has no user %s with a password", rn.ID(), user)
	}

	cases := []remoteCase{{name: "Composed", want: leaseOK, code: codes.OK}}
	if negative {
		password, _ := rn.Inv.Lookup("ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD")
		denied := good
		denied.ExecuteJobs = slices.DeleteFunc(slices.Clone(good.ExecuteJobs), func(g string) bool {
			return slices.Contains(good.Users[user].Groups, g) || g == everyoneGroup
		})
		cases = append(cases,
			remoteCase{
				name: "NoSSLCertFile", env: []envVar{{Name: "SSL_CERT_FILE"}}, code: noCalls,
				want: regexp.MustCompile(`x509: certificate signed by unknown authority`),
			},
			// The scheduler authenticates a stream before reading it, so
			// the executor logs the refusal, or EOF if it arrived before
			// the executor sent its request; the API's record tells.
			remoteCase{
				name: "WrongPassword", env: []envVar{{Name: "ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD", Value: password + "-wrong"}}, code: codes.Unauthenticated,
				want: regexp.MustCompile(`code = Unauthenticated|^EOF$`),
			},
			remoteCase{
				name: "NoExecuteJobsGrant", auth: &denied, code: codes.PermissionDenied,
				want: regexp.MustCompile(`code = PermissionDenied`),
			},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.auth != nil {
				re.api.SetAuth(*c.auth)
				defer re.api.SetAuth(good)
			}
			before, hsBefore, proxied := len(re.api.Calls()), len(re.api.Handshakes()), len(re.proxy.Requested())
			x := runExecutor(t, e, svc, free, rn, append([]envVar{
				{Name: "KUBECONFIG", Value: kubeconfig},
				{Name: "HTTPS_PROXY", Value: re.proxy.URL},
			}, c.env...))
			defer x.Proc.Stop()
			outcome := x.Outcome
			if !c.want.MatchString(outcome) {
				t.Errorf("%s: lease outcome %q, want %q", rn.ID(), outcome, c.want)
			}
			calls, hs := re.api.Calls()[before:], re.api.Handshakes()[hsBefore:]
			requested := re.proxy.Requested()[proxied:]
			if len(requested) == 0 {
				t.Errorf("%s never dialed the executor API", rn.ID())
			}
			for _, r := range requested {
				if r != "CONNECT "+re.url {
					t.Errorf("%s dialed %q, not the rendered armadaUrl %s", rn.ID(), r, re.url)
				}
			}
			t.Logf("%s: lease outcome %q; executor API saw %d TLS handshakes (failed: %v) and calls %+v", rn.ID(), outcome, len(hs), failed(hs), calls)
			switch {
			case c.code == noCalls:
				if len(calls) > 0 || len(failed(hs)) == 0 {
					t.Errorf("%s: want failed TLS handshakes and no calls, got handshakes %q and calls %+v", rn.ID(), hs, calls)
				}
			case len(calls) == 0:
				t.Errorf("%s: the executor API answered no calls", rn.ID())
			}
			for _, a := range calls {
				if c.code != noCalls && (a.Code != c.code || a.User != user) {
					t.Errorf("%s: the executor API answered %+v; want code %s for user %s", rn.ID(), a, c.code, user)
				}
			}
			if c.code != codes.OK {
				return
			}
			ok := slices.ContainsFunc(calls, func(a apiCall) bool {
				return a.Method == "LeaseJobRuns" && a.ExecutorID == clusterID && a.Pool == pool
			})
			if !ok {
				t.Errorf("%s: no LeaseJobRuns for executor %s in pool %s", rn.ID(), clusterID, pool)
			}
			checkLeasing(t, e, rn, x)
		})
	}
}

// executorRun is an executor started by runExecutor, still running.
type executorRun struct {
	Proc *process
	// Outcome is the lease outcome its log shows: leaseOK's line, or the
	// error of leaseFailed.
	Outcome string
	// Log is its log once the outcome was seen.
	Log string
	// Moved are its listening ports (overrides).
	Moved map[string]int
}

// runExecutor starts an executor as rendered, with the test's overrides
// and then changes (withEnv), and waits for its first lease outcome. It
// fails the test if the executor failed on its configuration, if its
// cluster's API server refused its ServiceAccount, or if it logged no
// outcome within remoteTimeout.
func runExecutor(t *testing.T, e *env, svc *services, free func() int, rn *run, changes []envVar) executorRun {
	t.Helper()
	extra, moved := overrides(t, e, svc, free, rn)
	env := withEnv(environ(rn, extra), changes)
	logPath := filepath.Join(t.TempDir(), "executor-"+strconv.Itoa(free())+".log")
	bin, args, err := rn.Command(e)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(t, bin, e.SourceDir, args, env, logPath)
	if err != nil {
		t.Fatal(err)
	}
	showTail(t, rn, p)
	x := executorRun{Proc: p, Moved: moved}
	reached := p.Until(remoteTimeout, func(l string) bool {
		if leaseOK.MatchString(l) {
			x.Outcome = leaseOK.FindString(l)
			return true
		}
		if m := leaseFailed.FindStringSubmatch(l); m != nil {
			x.Outcome = m[1]
			return true
		}
		return configErrorLine(l) != ""
	})
	x.Log = p.Log()
	if l := configErrorLine(x.Log); l != "" {
		t.Fatalf("%s failed on its configuration: %s", rn.ID(), l)
	}
	if l := forbidden.FindString(x.Log); l != "" {
		t.Errorf("%s: its cluster's API server refused the executor's ServiceAccount: %s", rn.ID(), firstLine(x.Log, forbidden))
	}
	if !reached {
		t.Fatalf("%s logged no lease outcome within %s", rn.ID(), remoteTimeout)
	}
	return x
}

// checkLeasing checks an executor that leased: the keys its config sets
// were all used, it serves metrics, and it reports itself healthy, which
// it does only once its informers synced with its cluster's API server.
func checkLeasing(t *testing.T, e *env, rn *run, x executorRun) {
	t.Helper()
	checkConfig(t, rn, x.Proc.Log())
	checkRemoteMetrics(t, e, rn, x.Moved)
	if port, ok := x.Moved["httpPort"]; !ok {
		t.Errorf("%s: the loaded config files set no httpPort", rn.ID())
	} else if ok, last := podrun.Healthy(port, 5*time.Second); !ok {
		t.Errorf("%s: GET /health did not answer 2xx once leasing: %s", rn.ID(), last)
	}
}

// withEnv applies changes to an environment: each replaces the variable
// of its name, or removes it if its value is empty.
func withEnv(env []string, changes []envVar) []string {
	for _, c := range changes {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, c.Name+"=") })
		if c.Value != "" {
			env = append(env, c.Name+"="+podrun.PodPath(c.Value))
		}
	}
	return env
}

func failed(handshakes []string) []string {
	return slices.DeleteFunc(slices.Clone(handshakes), func(s string) bool { return s == "" })
}

func firstLine(log string, re *regexp.Regexp) string {
	for l := range strings.SplitSeq(log, "\n") {
		if re.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// checkRemoteMetrics scrapes a leasing remote executor's rendered metrics
// port, as its ServiceMonitor in the worker cluster would: it must serve
// Prometheus text. armada_ families internal/metricnames does not find are
// only logged: once leasing, the executor serves its background tasks'
// armada_executor_<task>_latency_seconds, whose names Armada builds at run
// time from task names (internal/common/task), which the index cannot
// evaluate.
func checkRemoteMetrics(t *testing.T, e *env, rn *run, moved map[string]int) {
	t.Helper()
	var o outcome
	scrapeMetrics(&o, rn, &component{Moved: moved}, check{})
	for _, msg := range o.Errors {
		t.Errorf("%s: %s", rn.ID(), msg)
	}
	var armada, unknown []string
	for _, n := range o.Scraped {
		if strings.HasPrefix(n, "armada_") {
			armada = append(armada, n)
			if e.Metrics.Lookup(n) == "" {
				unknown = append(unknown, n)
			}
		}
	}
	t.Logf("%s: %d metric families scraped, %d of them armada_; not found by internal/metricnames: %v", rn.ID(), len(o.Scraped), len(armada), unknown)
}
