// Package jobflow runs jobs through an Armada this project composed: on a
// local control plane (TLS on, the default) with kube-scheduler and KWOK
// Nodes, the claim composes; package podrun runs every composed pod as
// Armada's own binaries at the composed release, against real PostgreSQL,
// Redis and Pulsar; a queue comes from provider-armada's Queue; armadactl
// submits jobs; the event stream, Lookout's API and the scheduler's
// database are checked. What is simulated: KWOK's pods run no containers
// (a job "runs" for the time its annotation asks, then succeeds or fails
// with its exit code), and NetworkPolicies are not enforced (no CNI).
package jobflow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/podrun"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

const (
	claimAPIVersion = "platform.armadaproject.io/v1alpha1"
	ns              = "armada"
	claimName       = "armada"
	// queue is the queue provider-armada creates from the claim.
	queue = "jobflow"
	// fieldOwner applies the test's objects.
	fieldOwner = client.FieldOwner("armada-jobflow")
)

// cp is the test's control plane.
var cp *controlplane.ControlPlane

// The far ends' names, as a user's claim would name their PostgreSQL,
// Redis and Pulsar; each pod's hosts file resolves them to relays to the
// test's private servers.
const (
	postgresHost = "postgres.data.svc"
	redisHost    = "redis.data.svc"
	pulsarHost   = "pulsar-broker.data.svc"
)

// TestJobFlow composes an Armada and runs jobs through it.
func TestJobFlow(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The Armada starts at fromVersion; the Upgrade subtest moves it to the
	// default release.
	version := fromVersion
	rel, ctl := release(t, version)
	relTo, ctlTo := release(t, armada.DefaultVersion)
	rels := map[string]podrun.Release{version: rel, armada.DefaultVersion: relTo}

	// The worker cluster comes up beside everything else.
	waitWorker := startWorker(t)
	pg := testenv.StartPostgres(t)
	redis := testenv.StartRedis(t)
	pulsar := testenv.StartPulsar(t)
	cp = controlplane.StartForTest(t, controlplane.Options{JobFlow: true, ProviderPollInterval: 5 * time.Second})
	if err := cp.AddNodes(ctx, localNodes()...); err != nil {
		t.Fatal(err)
	}
	worker := waitWorker()
	connectWorker(ctx, t, worker)

	// The claim's far ends, named as a user's would be.
	names := podrun.NewNames()
	t.Cleanup(names.Close)
	pgPassword := testenv.RandomPassword(t)
	pg.CreateRole(t, "armada", pgPassword)
	pg.CreateDatabase(t, "scheduler", "armada")
	pg.CreateDatabase(t, "lookout", "armada")
	relays := map[string]string{
		postgresHost + ":5432": fmt.Sprintf("%s:%d", pg.Host, pg.Port),
		redisHost + ":6379":    redis.Addr(),
		pulsarHost + ":6650":   strings.TrimPrefix(pulsar.ServiceURL(), "pulsar://"),
		pulsarHost + ":8080":   strings.TrimPrefix(pulsar.AdminURL(), "http://"),
	}
	for from, to := range relays {
		if err := names.Relay(from, to); err != nil {
			t.Fatal(err)
		}
	}

	namespace(t, ns, true)
	// Job pods are the user's: their namespace is theirs to label.
	namespace(t, "jobs", false)
	apply(t, secret(ns, "armada-postgres", "password", pgPassword), secret(ns, "armada-redis", "password", redis.Password))
	// Who may do what comes from the claim: admin is in the admin group;
	// submitter may submit to, watch and cancel the queue; viewer only
	// watch it.
	claim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimAPIVersion, "kind": "ArmadaClaim",
		"metadata": map[string]any{"name": claimName, "namespace": ns},
		"spec": map[string]any{
			"version":    version,
			"postgres":   map[string]any{"host": postgresHost, "user": "armada", "passwordSecretRef": map[string]any{"name": "armada-postgres", "key": "password"}, "sslMode": "disable"},
			"redis":      map[string]any{"addrs": []any{redisHost + ":6379"}, "passwordSecretRef": map[string]any{"name": "armada-redis", "key": "password"}},
			"pulsar":     map[string]any{"url": "pulsar://" + pulsarHost + ":6650", "adminURL": "http://" + pulsarHost + ":8080"},
			"scheduling": poolsSpec(),
			"executors":  executorsSpec(),
			"auth": map[string]any{"basicUsers": []any{
				map[string]any{"name": "admin", "groups": []any{"armada-admins"}},
				map[string]any{"name": "submitter", "groups": []any{"submitters"}},
				map[string]any{"name": "viewer", "groups": []any{"viewers"}},
			}},
			"queues": []any{map[string]any{
				"name": queue, "priorityFactor": "1", "groupOwners": []any{"armada-admins"},
				"permissions": []any{
					map[string]any{"subjects": []any{map[string]any{"kind": "Group", "name": "submitters"}}, "verbs": []any{"submit", "cancel", "watch"}},
					map[string]any{"subjects": []any{map[string]any{"kind": "Group", "name": "viewers"}}, "verbs": []any{"watch"}},
				},
			}},
		},
	}}
	applied := time.Now()
	apply(t, claim)

	ro := runnerOptions{
		releases:    func(tag string) (podrun.Release, bool) { r, ok := rels[tag]; return r, ok },
		pulsarAdmin: pulsar.AdminToolPath(),
		names:       names,
	}
	runner := startRunner(ctx, t, cp, "pods", ro)
	// The remote executor's pod, in the worker cluster.
	workerRunner := startRunner(ctx, t, worker, "worker-pods", ro)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pod logs:\n%s", podLogs(runner))
			t.Logf("worker pod logs:\n%s", podLogs(workerRunner))
			t.Logf("pulsar log (tail):\n%s", tail(pulsar.Log(), 20))
		}
	})

	d := waitFor(t, 6*time.Minute, "claim Ready (every component running as composed and ready by its own probe)", func() (bool, string) {
		s, r, m := claimCondition(t, "Ready")
		return s == "True", fmt.Sprintf("Ready=%s %s: %s; runner: %s; worker: %s", s, r, m, runnerState(runner), runnerState(workerRunner))
	})
	t.Logf("claim applied → Ready in %s", d.Round(time.Second))

	addRemoteExecutor(t, claim)

	runProvider(ctx, t, names)
	waitFor(t, 2*time.Minute, "queue "+queue+" created by provider-armada", func() (bool, string) {
		s, r, m := claimCondition(t, "QueuesReady")
		return s == "True", fmt.Sprintf("QueuesReady=%s %s: %s", s, r, m)
	})

	tlsSecret := &corev1.Secret{}
	if err := cp.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName + "-tls"}, tlsSecret); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, tlsSecret.Data["ca.crt"], 0o600); err != nil {
		t.Fatal(err)
	}
	hostsDir := t.TempDir()
	hosts, err := names.HostsFile(hostsDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Where users reach Armada, as the claim's status says.
	grpcAddr, lookoutURL := endpoint(t, "grpc"), endpoint(t, "lookout")
	t.Logf("armadactl --armadaUrl %s; Lookout at %s", grpcAddr, lookoutURL)
	a := &armadactl{bin: ctl, dir: t.TempDir(), hosts: hosts, ca: caFile, server: grpcAddr}
	adminPassword := credential(ctx, t, "admin")
	clusterID := executorClusterID(t, cp.Client(), localExecutor)
	f := &flow{claim: claim, a: a, names: names, pg: pg, lookoutURL: lookoutURL, adminPassword: adminPassword}

	t.Run("Succeeded", func(t *testing.T) {
		jobSet := "succeeds"
		submitted := time.Now()
		out, err := submit(ctx, a, "admin", adminPassword, jobSet, jobSpec(nil))
		if err != nil {
			t.Fatalf("%s: %v\n%s", a.command("submit", "job.yaml"), err, out)
		}
		evs := watch(ctx, t, a, "admin", adminPassword, jobSet)
		want := []string{"Submitted", "Queued", "Leased", "Pending", "Running", "Succeeded"}
		if got := types(evs); !isSubsequence(want, got) {
			t.Fatalf("events of job set %s: got %v, want %v in this order; events:\n%s", jobSet, got, want, rawEvents(evs))
		}
		t.Logf("submit → Succeeded in %s; apply → first job Succeeded in %s", time.Since(submitted).Round(time.Millisecond), time.Since(applied).Round(time.Second))
		jobs := waitLookout(ctx, t, names, lookoutURL, adminPassword, jobSet, "SUCCEEDED")
		checkRun(t, jobs[0], clusterID)
		checkSchedulerRun(t, pg, jobs[0].JobID, clusterID, "succeeded")
	})

	t.Run("Failed", func(t *testing.T) {
		jobSet := "fails"
		out, err := submit(ctx, a, "submitter", credential(ctx, t, "submitter"), jobSet, jobSpec(map[string]string{"kwok.armadaproject.io/exit-code": "3"}))
		if err != nil {
			t.Fatalf("%s: %v\n%s", a.command("submit", "job.yaml"), err, out)
		}
		evs := watch(ctx, t, a, "admin", adminPassword, jobSet)
		if got := types(evs); !isSubsequence([]string{"Submitted", "Queued", "Leased", "Running", "Failed"}, got) {
			t.Errorf("events of job set %s: got %v, want Running then Failed; events:\n%s", jobSet, got, rawEvents(evs))
		}
		jobs := waitLookout(ctx, t, names, lookoutURL, adminPassword, jobSet, "FAILED")
		checkRun(t, jobs[0], clusterID)
		if code := jobs[0].Runs[len(jobs[0].Runs)-1].ExitCode; code == nil || *code != 3 {
			t.Errorf("lookout: job %s's run has exit code %v, want 3 (the job's kwok.armadaproject.io/exit-code)", jobs[0].JobID, deref(code))
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		jobSet := "cancelled"
		out, err := submit(ctx, a, "submitter", credential(ctx, t, "submitter"), jobSet, jobSpec(map[string]string{"kwok.armadaproject.io/run-for": "10m"}))
		if err != nil {
			t.Fatalf("%s: %v\n%s", a.command("submit", "job.yaml"), err, out)
		}
		waitLookout(ctx, t, names, lookoutURL, adminPassword, jobSet, "RUNNING")
		if out, err := a.run(ctx, "submitter", credential(ctx, t, "submitter"), "cancel", "job-set", queue, jobSet); err != nil {
			t.Fatalf("%s: %v\n%s", a.command("cancel", "job-set", queue, jobSet), err, out)
		}
		evs := watch(ctx, t, a, "admin", adminPassword, jobSet)
		if got := types(evs); !isSubsequence([]string{"Submitted", "Running", "Cancelled"}, got) {
			t.Errorf("events of job set %s: got %v, want Running then Cancelled; events:\n%s", jobSet, got, rawEvents(evs))
		}
		waitLookout(ctx, t, names, lookoutURL, adminPassword, jobSet, "CANCELLED")
	})

	t.Run("RefusedWithoutSubmit", func(t *testing.T) {
		out, err := submit(ctx, a, "viewer", credential(ctx, t, "viewer"), "refused", jobSpec(nil))
		if err == nil || !strings.Contains(out, "PermissionDenied") {
			t.Errorf("viewer, who may only watch queue %s, submitted: err %v, output:\n%s", queue, err, out)
		}
	})

	t.Run("GPUPool", func(t *testing.T) { testGPUPool(ctx, t, f) })
	t.Run("RemoteExecutor", func(t *testing.T) { testRemoteExecutor(ctx, t, f, worker) })
	t.Run("Upgrade", func(t *testing.T) { testUpgrade(ctx, t, f, worker, armada.DefaultVersion, ctlTo) })
}

// release returns the composed release's binaries and source, and
// armadactl, failing the test if they are missing.
func release(t *testing.T, version string) (podrun.Release, string) {
	t.Helper()
	root := os.Getenv("ARMADA_BIN_ROOT")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		root = filepath.Join(home, ".cache", "armada-crossplane", "bin")
	}
	dir := filepath.Join(root, "armada-v"+version)
	for _, b := range append(slices.Clone(podrun.Binaries), "armadactl") {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("Armada %s binary %s is missing from %s: run `make armada-bins` (or tools/armada/build.sh v%s)", version, b, dir, version)
		}
	}
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "github.com", "armadaproject", "armada@v"+version)
	if _, err := os.Stat(filepath.Join(src, "config", "server", "config.yaml")); err != nil {
		t.Fatalf("Armada %s source is not in the module cache (%v): run `make armada-bins`", version, err)
	}
	return podrun.Release{BinDir: dir, SourceDir: src}, filepath.Join(dir, "armadactl")
}

// jobSpec is a one-job job file's job, with annotations choosing what its
// KWOK pod does.
func jobSpec(annotations map[string]string) map[string]any {
	res := map[string]any{"cpu": "100m", "memory": "64Mi"}
	j := map[string]any{
		"priority": 0, "namespace": "jobs",
		"podSpec": map[string]any{
			"terminationGracePeriodSeconds": 0,
			"restartPolicy":                 "Never",
			"containers": []any{map[string]any{
				"name": "work", "image": "busybox:1.36", "command": []any{"sh", "-c", "sleep 1"},
				"resources": map[string]any{"requests": res, "limits": res},
			}},
		},
	}
	if annotations != nil {
		j["annotations"] = annotations
	}
	return j
}

// submit writes a job file for jobs and submits it with armadactl.
func submit(ctx context.Context, a *armadactl, user, password, jobSet string, jobs ...map[string]any) (string, error) {
	list := make([]any, len(jobs))
	for i, j := range jobs {
		list[i] = j
	}
	b, err := yaml.Marshal(map[string]any{"queue": queue, "jobSetId": jobSet, "jobs": list})
	if err != nil {
		return "", err
	}
	f := filepath.Join(a.dir, jobSet+".yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return a.run(ctx, user, password, "submit", podrun.PodPath(f))
}

// watch follows a job set's events with `armadactl watch --raw
// --exit-if-inactive` until every job in it has finished.
func watch(ctx context.Context, t *testing.T, a *armadactl, user, password, jobSet string) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := a.run(ctx, user, password, "watch", queue, jobSet, "--raw", "--exit-if-inactive")
	if err != nil {
		t.Fatalf("%s: %v\n%s", a.command("watch", queue, jobSet, "--raw", "--exit-if-inactive"), err, out)
	}
	return parseEvents(out)
}

// waitLookout waits until Lookout's API shows every job of a job set in
// state.
func waitLookout(ctx context.Context, t *testing.T, names *podrun.Names, url, password, jobSet, state string) []lookoutJob {
	t.Helper()
	var jobs []lookoutJob
	waitFor(t, time.Minute, "lookout to show job set "+jobSet+" "+state, func() (bool, string) {
		var err error
		jobs, err = lookoutJobs(ctx, names, url, "admin", password, jobSet)
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs {
			if j.State != state {
				return false, fmt.Sprintf("job %s is %s", j.JobID, j.State)
			}
		}
		return len(jobs) > 0, fmt.Sprintf("%d jobs", len(jobs))
	})
	return jobs
}

// checkRun checks a job's last run is on the executor's cluster and a
// KWOK node.
func checkRun(t *testing.T, j lookoutJob, clusterID string) {
	t.Helper()
	if len(j.Runs) == 0 {
		t.Fatalf("lookout: job %s has no runs", j.JobID)
	}
	r := j.Runs[len(j.Runs)-1]
	if r.Cluster != clusterID {
		t.Errorf("lookout: job %s ran on cluster %q, want the executor's clusterId %q", j.JobID, r.Cluster, clusterID)
	}
	if r.Node == nil || !strings.HasPrefix(*r.Node, "kwok-node-") {
		t.Errorf("lookout: job %s ran on node %v, want a KWOK node", j.JobID, deref(r.Node))
	}
}

// checkSchedulerRun checks the scheduler's database holds the job's run,
// on the executor, in the given terminal column.
func checkSchedulerRun(t *testing.T, pg *testenv.Postgres, jobID, clusterID, column string) {
	t.Helper()
	out := pg.MustExec(t, "scheduler", fmt.Sprintf("SELECT executor || ' ' || node || ' ' || %s FROM runs WHERE job_id = %s", column, testenv.QuoteLiteral(jobID)))
	got := strings.Fields(strings.TrimSpace(out))
	if len(got) != 3 || got[0] != clusterID || !strings.HasPrefix(got[1], "kwok-node-") || (got[2] != "t" && got[2] != "true") {
		t.Errorf("scheduler database: run of job %s is %q, want executor %s, a KWOK node and %s true", jobID, strings.TrimSpace(out), clusterID, column)
	}
}

// rawEvents prints events for failure messages.
func rawEvents(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %v\n", e.Type, e.Raw)
	}
	return b.String()
}

// isSubsequence reports whether want appears in got in order.
func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// namespace creates a namespace, enforcing the restricted Pod Security
// Standard if restricted.
func namespace(t *testing.T, name string, restricted bool) {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if restricted {
		n.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	}
	if err := cp.Client().Create(t.Context(), n); err != nil {
		t.Fatalf("cannot create namespace %s: %v", name, err)
	}
}

func secret(namespace, name, key, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"stringData": map[string]any{key: value},
	}}
}

// apply server-side applies objects.
func apply(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if err := cp.Client().Patch(t.Context(), o.DeepCopy(), client.Apply, fieldOwner, client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply on unstructured is what we need here.
			t.Fatalf("cannot apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// claimCondition returns a condition of the claim.
func claimCondition(t *testing.T, typ string) (status, reason, message string) {
	t.Helper()
	c := &unstructured.Unstructured{}
	c.SetAPIVersion(claimAPIVersion)
	c.SetKind("ArmadaClaim")
	if err := cp.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claimName}, c); err != nil {
		return "", "", err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", "no condition " + typ
}

// endpoint reads one of the claim's status.endpoints.
func endpoint(t *testing.T, name string) string {
	t.Helper()
	c := &unstructured.Unstructured{}
	c.SetAPIVersion(claimAPIVersion)
	c.SetKind("ArmadaClaim")
	if err := cp.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claimName}, c); err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(c.Object, "status", "endpoints", name)
	if v == "" {
		t.Fatalf("the claim's status.endpoints.%s is empty", name)
	}
	return v
}

// credential reads a basic user's password from the claim's credentials
// Secret (status.credentialsSecret).
func credential(ctx context.Context, t *testing.T, user string) string {
	t.Helper()
	c := &unstructured.Unstructured{}
	c.SetAPIVersion(claimAPIVersion)
	c.SetKind("ArmadaClaim")
	if err := cp.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName}, c); err != nil {
		t.Fatal(err)
	}
	name, _, _ := unstructured.NestedString(c.Object, "status", "credentialsSecret")
	if name == "" {
		name = claimName + "-credentials"
	}
	s := &corev1.Secret{}
	if err := cp.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("the credentials Secret %s: %v", name, err)
	}
	p, ok := s.Data[user]
	if !ok {
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		t.Fatalf("the credentials Secret %s has no key %s (keys: %v)", name, user, keys)
	}
	return string(p)
}

// executorClusterID reads an executor's clusterId from its config Secret
// as composed in cluster c, named after the claim's
// spec.executors[].clusterId.
func executorClusterID(t *testing.T, c client.Client, executor string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claimName + "-executor-" + executor + "-config"}, s); err != nil {
		t.Fatalf("the executor's config: %v", err)
	}
	var cfg struct {
		Application struct {
			ClusterID string `json:"clusterId"`
		} `json:"application"`
	}
	if err := yaml.Unmarshal(s.Data["config.yaml"], &cfg); err != nil || cfg.Application.ClusterID == "" {
		t.Fatalf("the executor's config has no application.clusterId (%v)", err)
	}
	return cfg.Application.ClusterID
}

// waitFor polls cond every second until it holds, failing the test after
// limit with cond's last message. It returns how long it waited.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < limit {
		ok, msg := cond()
		if ok {
			return time.Since(start)
		}
		last = msg
		time.Sleep(time.Second)
	}
	t.Fatalf("%s: not after %s: %s", what, limit, last)
	return 0
}

// runnerState summarises what keeps the runner's pods from running.
func runnerState(r *podrun.Runner) string {
	procs := r.Processes()
	out := make([]string, 0, len(procs))
	for id, procs := range procs {
		state := fmt.Sprintf("%d processes", len(procs))
		if err := r.Err(id); err != nil {
			state = err.Error()
		}
		out = append(out, id+": "+firstLine(state))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// podLogs returns the tail of every pod's log.
func podLogs(r *podrun.Runner) string {
	var b strings.Builder
	logs := r.Logs()
	keys := make([]string, 0, len(logs))
	for k := range logs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, f := range logs[k] {
			data, _ := os.ReadFile(f) //nolint:gosec // The runner's own log files.
			fmt.Fprintf(&b, "--- %s\n%s\n", f, tail(string(data), 25))
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
