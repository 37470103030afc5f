package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// composedTimeout bounds the wait for every composed workload: images
// pulled from the node's registry, migrations, Pulsar's topics, then every
// component Ready by the kubelet's probes.
const composedTimeout = 8 * time.Minute

// jobQueue is the queue the test's job goes to; annotationQueues lists a
// job namespace's queues (internal/armada's job namespace admission).
const (
	jobQueue         = "node"
	annotationQueues = "armadaproject.io/queues"
)

// TestComposedArmadaOnNode runs every pod function-armada composes for
// examples/minimal.yaml (its render golden file, as Crossplane would
// create it) as containers on a real node, in a namespace that enforces
// Pod Security "restricted", with the composed NetworkPolicies enforced:
// Armada's images laid out as its Dockerfiles lay them out, ghostunnel's
// and Pulsar's; the migration and topic Jobs complete; every component
// becomes Ready by the kubelet's own probes; a job submitted with
// armadactl runs as a container in the composed job namespace, Succeeds,
// Lookout's API says so and binoculars returns its log; a job exiting 3
// Fails with that exit code; a running job cancelled loses its pod.
// Backing services are real (PostgreSQL, Redis, Pulsar) on the host,
// reached at the bridge's address.
func TestComposedArmadaOnNode(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{KubernetesOnly: true, SkipProviderKubernetes: true, Workloads: true, JobFlow: true})
	ctx := t.Context()
	r, err := conformance.LoadRender(filepath.Join("..", "..", "..", "test", "render", "testdata", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	version := armada.DefaultVersion
	images, err := ComposedImages(ctx, version, testenv.ToolBin(t, podrun.Ghostunnel, armada.TLSProxyVersion))
	if err != nil {
		t.Fatal(err)
	}
	n := StartForTest(t, Options{Config: cp.RESTConfig(), Images: images})

	w := &warnings{}
	cfg := cp.RESTConfig()
	cfg.WarningHandlerWithContext = w
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := cp.Client()

	password := exampleSecret(t, "armada-postgres")["password"]
	// The example's far ends, its Redis without a password.
	be := jobflow.StartNodeBackends(t, n, cs, jobflow.BackendOptions{
		PostgresAddr: "postgres.data.svc:5432", RedisAddr: "redis.data.svc:6379",
		PulsarAddr: "pulsar-broker.data.svc:6650", PulsarAdminAddr: "pulsar-broker.data.svc:8080",
		PostgresUser: "armada", PostgresPassword: password,
	})

	const ns = "armada"
	restrictedNamespace(ctx, t, cs, ns)
	mustCreate(t, func() error {
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "armada-postgres"},
			Data:       map[string][]byte{"password": []byte(password)},
		}, metav1.CreateOptions{})
		return err
	})
	// As Crossplane converges with the function: the first reconcile's
	// objects (migration and topic Jobs, what needs neither), then, once
	// the Jobs completed, the whole Armada.
	first, err := conformance.LoadRender(filepath.Join("..", "..", "..", "test", "render", "testdata", "first-reconcile", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	queues := map[string]string{"armada-jobs": jobQueue}
	applyComposed(ctx, t, c, first, queues)
	waitComposed(ctx, t, cs, n, ns)
	t.Logf("the first reconcile's workloads ready %s after the objects were created", time.Since(applied).Round(time.Second))
	applyComposed(ctx, t, c, r, queues)
	if got := w.take(); len(got) > 0 {
		t.Errorf("creating the composed objects gave warnings: %q", got)
	}
	waitComposed(ctx, t, cs, n, ns)
	t.Logf("every composed workload ready %s after the objects were created; node: %s", time.Since(applied).Round(time.Second), n.Memory())

	seen := jobflow.WaitExecutor(t, be.Postgres, "local", nil)
	jobflow.WaitSubmitCheckLogged(t, jobflow.NodeContainerLogs(t, n, ns, "armada-scheduler-0", "scheduler"), 1, seen, nil)
	a, lookout := armadaClients(t, cs, be.Names, r, version, ns)
	admin := mustSecret(t, r, "armada-credentials")["admin"]
	if out, err := a.Run(ctx, "admin", string(admin), "create", "queue", jobQueue, "--group-owners", "armada-admins"); err != nil {
		t.Fatalf("%s: %v\n%s", a.Command("create", "queue", "node"), err, out)
	}
	const jobSet = "node"
	submitted := time.Now()
	if out, err := a.Submit(ctx, "admin", string(admin), jobQueue, jobSet, jobflow.NodeJobSpec(JobImage, "armada-jobs", "-sleep=3s")); err != nil {
		t.Fatalf("%s: %v\n%s", a.Command("submit"), err, out)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	evs, out, err := a.Watch(wctx, "admin", string(admin), jobQueue, jobSet, func(e jobflow.Event) {
		t.Logf("%6.1fs %s %s", time.Since(submitted).Seconds(), e.Type, e.JobID())
	})
	if err != nil {
		t.Fatalf("armadactl watch: %v\n%s\n%s", err, out, podReport(ctx, cs, n, ns))
	}
	if got := jobflow.Types(evs); len(got) == 0 || got[len(got)-1] != "Succeeded" {
		t.Fatalf("the job did not succeed: its events were %v:\n%s\n%s", got, jobflow.RawEvents(evs), podReport(ctx, cs, n, "armada-jobs"))
	}
	t.Logf("job submitted to Succeeded in %s", time.Since(submitted).Round(100*time.Millisecond))
	jobs := jobflow.WaitLookout(t, lookout, string(admin), jobSet, "SUCCEEDED")
	if node := jobs[0].Runs[0].Node; node == nil || *node != n.Name() {
		t.Errorf("Lookout says the job ran on node %v, want %s", node, n.Name())
	}
	// Binoculars reads the job's log through the API server from the
	// kubelet, as Lookout's UI asks it.
	log := binocularsLog(t, lookout, string(admin), jobs[0].JobID, "armada-jobs")
	if !strings.Contains(log, "exiting with 0") {
		t.Errorf("binoculars returned the job's log without its last line %q:\n%s", "exiting with 0", log)
	}

	// Lookout's web UI, from the image (Armada's Dockerfile copies the
	// UI's build in), as a browser would load it.
	lookoutServesUI(t, lookout)

	// A failing job: its container's exit code reaches Lookout.
	const failSet = "node-fail"
	if out, err := a.Submit(ctx, "admin", string(admin), jobQueue, failSet, jobflow.NodeJobSpec(JobImage, "armada-jobs", "-exit=3")); err != nil {
		t.Fatalf("%s: %v\n%s", a.Command("submit"), err, out)
	}
	evs, out, err = a.Watch(wctx, "admin", string(admin), jobQueue, failSet, nil)
	if got := jobflow.Types(evs); err != nil || len(got) == 0 || got[len(got)-1] != "Failed" {
		t.Fatalf("want the failing job Failed, got events %v (%v):\n%s", got, err, out)
	}
	failed := jobflow.WaitLookout(t, lookout, string(admin), failSet, "FAILED")
	if code := failed[0].Runs[0].ExitCode; code == nil || *code != 3 {
		t.Errorf("Lookout's exit code of the failing job's run is %v, want 3", code)
	}

	// A running job cancelled: its container is stopped and its pod goes.
	const cancelSet = "node-cancel"
	if out, err := a.Submit(ctx, "admin", string(admin), jobQueue, cancelSet, jobflow.NodeJobSpec(JobImage, "armada-jobs", "-sleep=10m")); err != nil {
		t.Fatalf("%s: %v\n%s", a.Command("submit"), err, out)
	}
	running := jobflow.WaitLookout(t, lookout, string(admin), cancelSet, "RUNNING")
	if out, err := a.Run(ctx, "admin", string(admin), "cancel", "job-set", jobQueue, cancelSet); err != nil {
		t.Fatalf("%s: %v\n%s", a.Command("cancel", "job-set", jobQueue, cancelSet), err, out)
	}
	evs, out, err = a.Watch(wctx, "admin", string(admin), jobQueue, cancelSet, nil)
	if got := jobflow.Types(evs); err != nil || !jobflow.IsSubsequence([]string{"Running", "Cancelled"}, got) {
		t.Fatalf("want the running job Cancelled, got events %v (%v):\n%s", got, err, out)
	}
	jobflow.WaitFor(t, time.Minute, "the cancelled job's pod gone from the node", func() (bool, string) {
		pods, err := cs.CoreV1().Pods("armada-jobs").List(ctx, metav1.ListOptions{LabelSelector: "armada_job_id=" + running[0].JobID})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods of job %s", len(pods.Items), running[0].JobID)
	}, nil)
}

// binocularsLog asks the composed binoculars, through its Service's pod
// and trusting the composed CA, for the log of a job's pod, as user.
func binocularsLog(t *testing.T, l jobflow.Lookout, password, jobID, ns string) string {
	t.Helper()
	hc := composedClient(l)
	body := fmt.Sprintf(`{"jobId":%q,"podNumber":0,"podNamespace":%q,"logOptions":{}}`, jobID, ns)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://armada-binoculars.armada.svc:8080/v1/binoculars/log", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("cannot ask binoculars for the job's log: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("binoculars answered %s: %s", resp.Status, b)
	}
	var out struct {
		Log []struct {
			Line string `json:"line"`
		} `json:"log"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("cannot parse binoculars' answer %q: %v", b, err)
	}
	lines := make([]string, 0, len(out.Log))
	for _, l := range out.Log {
		lines = append(lines, l.Line)
	}
	return strings.Join(lines, "\n")
}

// composedClient is an HTTPS client of the composed Services, at l's
// names, trusting the composed CA.
func composedClient(l jobflow.Lookout) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(l.CA)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:     func(ctx context.Context, _, addr string) (net.Conn, error) { return l.Names.Dial(ctx, addr) },
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
}

// uiAssets are the scripts and stylesheets an HTML page loads from its
// own origin.
var uiAssets = regexp.MustCompile(`(?:src|href)="(/[^"]+\.(?:js|css))"`)

// lookoutServesUI fails t unless Lookout answers / with its web UI's page
// and serves every script and stylesheet that page loads, among them the
// UI's config script Lookout writes from its own configuration.
func lookoutServesUI(t *testing.T, l jobflow.Lookout) {
	t.Helper()
	hc := composedClient(l)
	get := func(p string) (string, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, l.URL+p, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("cannot GET %s from Lookout: %v", p, err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Lookout answered GET %s with %s: %s", p, resp.Status, testutil.Tail(string(b), 5))
		}
		return string(b), resp.Header.Get("Content-Type")
	}
	page, _ := get("/")
	if !strings.Contains(page, "<title>Armada Lookout</title>") || !strings.Contains(page, `<div id="root">`) {
		t.Fatalf("Lookout's / is not its web UI's page:\n%s", testutil.Tail(page, 20))
	}
	assets := uiAssets.FindAllStringSubmatch(page, -1)
	if len(assets) < 3 { // The UI's script and stylesheet, and its config.
		t.Fatalf("Lookout's page loads %d scripts and stylesheets, want the UI's and its config's:\n%s", len(assets), page)
	}
	for _, a := range assets {
		body, ctype := get(a[1])
		if body == "" || !strings.Contains(ctype, map[bool]string{true: "css", false: "javascript"}[strings.HasSuffix(a[1], ".css")]) {
			t.Errorf("Lookout served %s as %q, %d bytes", a[1], ctype, len(body))
		}
	}
}

// mustSecret is the data of the render's Secret name.
func mustSecret(t *testing.T, r *conformance.Render, name string) map[string][]byte {
	t.Helper()
	data, ok, err := r.Secret(name)
	if err != nil || !ok {
		t.Fatalf("the render has no Secret %s: %v", name, err)
	}
	return data
}

// armadaClients are armadactl, of the composed release, and Lookout's API
// client (whose names reach binoculars too), each reaching the composed
// Services through names (jobflow.RelayServices), trusting the composed
// CA.
func armadaClients(t *testing.T, cs kubernetes.Interface, names *podrun.Names, r *conformance.Render, version, ns string) (*jobflow.Armadactl, jobflow.Lookout) {
	t.Helper()
	_, ctl, err := jobflow.FindRelease(t.Context(), version)
	if err != nil {
		t.Fatal(err)
	}
	jobflow.RelayServices(t, names, cs, ns)
	ca := mustSecret(t, r, "armada-tls")["ca.crt"]
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	hosts, err := names.HostsFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &jobflow.Armadactl{Bin: ctl, Dir: t.TempDir(), Hosts: hosts, CA: caFile, Server: "armada-server." + ns + ".svc:50051"}
	return a, jobflow.Lookout{URL: "https://armada-lookout." + ns + ".svc:8080", Names: names, CA: ca}
}

// exampleSecret is the stringData of the Secret name in
// examples/minimal.yaml.
func exampleSecret(t *testing.T, name string) map[string]string {
	t.Helper()
	docs := readManifest(t, filepath.Join("..", "..", "..", "examples", "minimal.yaml"))
	for _, d := range docs {
		if d.GetKind() == "Secret" && d.GetName() == name {
			data, _, err := unstructured.NestedStringMap(d.Object, "stringData")
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
	t.Fatalf("examples/minimal.yaml has no Secret %s", name)
	return nil
}

// applyComposed creates cluster/rbac's fixed ClusterRoles, then every
// object of the render but the composite, as Crossplane would (applied
// server-side), without owner references (no composite exists);
// namespaces first.
//
// queues names, for each job namespace, the queue whose jobs it takes, as
// the function composes it for a claim whose spec.queues lists that queue
// (the example lists none): the job namespaces' admission policy admits a
// job's pod only in a namespace of its queue.
func applyComposed(ctx context.Context, t *testing.T, c client.Client, r *conformance.Render, queues map[string]string) {
	t.Helper()
	objs := readManifest(t, filepath.Join("..", "..", "..", "cluster", "rbac", "armada-crossplane-roles.yaml"))
	for _, u := range r.Objects {
		if u.GetKind() == "XArmada" {
			continue
		}
		objs = append(objs, u.DeepCopy())
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return boolInt(b.GetKind() == "Namespace") - boolInt(a.GetKind() == "Namespace")
	})
	for _, u := range objs {
		u.SetOwnerReferences(nil)
		if q, ok := queues[u.GetName()]; ok && u.GetKind() == "Namespace" {
			a := u.GetAnnotations()
			a[annotationQueues] = q
			u.SetAnnotations(a)
		}
		// Server-side apply, as Crossplane applies composed resources: a
		// job namespace's default ServiceAccount, which Kubernetes creates
		// with the namespace, takes the composed fields.
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("crossplane"), client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply with unstructured objects, as Crossplane's own apply.
			t.Fatalf("cannot create %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
}

// readManifest parses the YAML documents of file.
func readManifest(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Parse(b)
	if err != nil {
		t.Fatalf("cannot parse %s: %v", file, err)
	}
	return objs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitComposed waits until every Job in ns completed and every Deployment
// and StatefulSet has its replicas ready, failing with the state and logs
// of the pods that are not.
func waitComposed(ctx context.Context, t *testing.T, cs kubernetes.Interface, n *Node, ns string) {
	t.Helper()
	deadline := time.Now().Add(composedTimeout)
	last := ""
	for {
		pending, err := composedPending(ctx, cs, ns)
		if err == nil && len(pending) == 0 {
			return
		}
		msg := strings.Join(pending, "; ")
		if err != nil {
			msg = err.Error()
		}
		if msg != last {
			t.Logf("waiting: %s", msg)
			last = msg
		}
		if time.Now().After(deadline) {
			t.Fatalf("composed workloads not ready after %s: %s\n%s", composedTimeout, msg, podReport(ctx, cs, n, ns))
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// composedPending lists what is not done yet: Jobs not complete,
// Deployments and StatefulSets without their replicas ready.
func composedPending(ctx context.Context, cs kubernetes.Interface, ns string) ([]string, error) {
	var out []string
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, j := range jobs.Items {
		if !jobComplete(&j) {
			out = append(out, fmt.Sprintf("job %s: %d failed", j.Name, j.Status.Failed))
		}
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		if d.Status.ReadyReplicas < ptr.Deref(d.Spec.Replicas, 1) {
			out = append(out, fmt.Sprintf("deployment %s: %d ready", d.Name, d.Status.ReadyReplicas))
		}
	}
	sts, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range sts.Items {
		if s.Status.ReadyReplicas < ptr.Deref(s.Spec.Replicas, 1) {
			out = append(out, fmt.Sprintf("statefulset %s: %d ready", s.Name, s.Status.ReadyReplicas))
		}
	}
	return out, nil
}

func jobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podReport is every pod of ns that is not Ready or Succeeded: its phase,
// its containers' states and the tail of their logs.
func podReport(ctx context.Context, cs kubernetes.Interface, n *Node, ns string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || podReady(&p) {
			continue
		}
		fmt.Fprintf(&b, "--- pod %s: %s %s\n", p.Name, p.Status.Phase, p.Status.Message)
		for _, st := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			fmt.Fprintf(&b, "  %s: ready=%t restarts=%d %s\n", st.Name, st.Ready, st.RestartCount, containerState(st.State))
			fmt.Fprintf(&b, "%s\n", indent(testutil.Tail(n.PodLogs(ns, p.Name, st.Name), 15)))
		}
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason + " " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s, exit code %d %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	case s.Running != nil:
		return "running"
	}
	return "unknown"
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
