package conformance

import (
	"context"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
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
	LeaseOK     = regexp.MustCompile(`Reporting current free resource .* Received 0 new jobs`)
	leaseFailed = regexp.MustCompile(`Failed to request new jobs leases as because (.*)`)
	forbidden   = regexp.MustCompile(`(?i)\bforbidden\b`)
)

// RemoteEnv is what a remote executor's invocation needs beyond the render.
type RemoteEnv struct {
	workers *controlplane.WorkerClusters
	// API is the test's executor API the executors lease from.
	API *executorAPI
	// Proxy is the CONNECT proxy that tunnels the armadaUrl to API.
	Proxy *connectProxy
	// URL is the armadaUrl every remote executor's config names.
	URL string
}

// StartRemote starts what the remote executors of a render dial: the
// worker clusters, and the executor API behind a CONNECT proxy, serving a
// certificate for the host of the armadaUrl the rendered configs name,
// signed by ca, and checking calls against the rendered scheduler's auth.
func StartRemote(t *testing.T, runs []*Run, ca *privateCA) *RemoteEnv {
	t.Helper()
	var clusters []string
	var scheduler *Run
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
	re := &RemoteEnv{workers: controlplane.StartWorkerClusters(t, clusters)}
	if len(urls) != 1 {
		t.Fatalf("remote executors dial %d different executor API addresses %v; expected one (spec.executorApi.url or the ingress host)", len(urls), urls)
	}
	for u := range urls {
		re.URL = u
	}
	host, _, err := net.SplitHostPort(re.URL)
	if err != nil || host == "" {
		t.Fatalf("the rendered armadaUrl %q is not host:port: %v", re.URL, err)
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
	re.API = startExecutorAPI(t, ca.ServerCert(t, host), auth)
	re.Proxy = startConnectProxy(t, map[string]string{anyAuthority: re.API.Addr})
	return re
}

// PrepareWorker creates in the executor's worker cluster what its
// Objects compose there, except the Deployment (no kubelet runs): the
// namespace, ServiceAccounts, RBAC, Secrets, Service and PriorityClasses.
// It returns a kubeconfig that authenticates as the executor's
// ServiceAccount with a token from the TokenRequest API, standing in for
// the token Kubernetes mounts into the pod, so the executor's requests are
// authorized by exactly the rendered ClusterRole and binding.
func PrepareWorker(t *testing.T, r *Render, re *RemoteEnv, w podrun.Workload, dir string) string {
	t.Helper()
	cp, err := re.workers.Get(w.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	return ServiceAccountKubeconfig(t, cp, r.RemoteManifests(w.Cluster), w, dir)
}

// ServiceAccountKubeconfig applies manifests to cp, Namespaces and
// ServiceAccounts first and Deployments not at all (no kubelet runs),
// replacing objects that exist, and returns a kubeconfig for cp that
// authenticates as w's ServiceAccount with a token from the TokenRequest
// API, standing in for the token Kubernetes mounts into the pod: w's
// requests are authorized by exactly the applied RBAC.
func ServiceAccountKubeconfig(t *testing.T, cp *controlplane.ControlPlane, manifests []*unstructured.Unstructured, w podrun.Workload, dir string) string {
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
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
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
