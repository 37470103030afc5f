package jobflow

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/node"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// composeOptions say what compose brings up.
type composeOptions struct {
	// nodes are the control cluster's KWOK Nodes.
	nodes []controlplane.Node
	// version is the release the claim starts at; armada.DefaultVersion
	// if empty. upgradeTo, if set, is a release the runners can also run,
	// for an upgrade later.
	version, upgradeTo string
	// spec is set in the claim's spec beside what claimFor writes
	// (scheduling, executors).
	spec map[string]any
	// worker starts a worker cluster, connects it, and adds the remote
	// executor (remoteExecutor) to the claim once it is Ready.
	worker bool
	// relays make each host:port name the pods dial reach a test server's
	// address (a far end outside the cluster, such as an OIDC provider).
	relays map[string]string
	// objects are applied in the claim's namespace before the claim.
	objects []*unstructured.Unstructured
	// node runs every composed pod, and the jobs, as containers on a real
	// node (startNode) instead of Armada's binaries as processes and pods
	// on KWOK; nodes, worker and relays must be unset.
	node bool
}

// A flow is a composed Armada, Ready and with its queue, that jobs can go
// through.
type flow struct {
	cp     *controlplane.ControlPlane
	be     *jobflow.Backends
	runner *podrun.Runner
	claim  jobflow.Claim
	// manifest is the claim as the test last applied it.
	manifest *unstructured.Unstructured
	// a submits and watches as a user would, with armadactl; armadactl
	// is each release's armadactl. lookout reaches the claim's
	// status.endpoints.lookout; clusterID the local executor's.
	a             *jobflow.Armadactl
	armadactl     map[string]string
	lookout       jobflow.Lookout
	clusterID     string
	adminPassword string
	// applied is when the claim was applied.
	applied time.Time
	// stopRunner stops the control cluster's runner and its pods;
	// redisPassword is what Redis requires.
	stopRunner    func()
	redisPassword string
	// worker is the worker cluster and workerRunner runs its pods; nil
	// without composeOptions.worker.
	worker       *controlplane.ControlPlane
	workerRunner *podrun.Runner
	// node runs the pods with composeOptions.node, and cs reaches its
	// cluster; runner is nil then.
	node *node.Node
	cs   kubernetes.Interface
}

// compose starts the local control plane with kube-scheduler, KWOK and
// nodes (and a worker cluster beside it, if asked), private PostgreSQL,
// Redis and Pulsar, applies a claim naming them as a user's would, runs
// every composed pod as Armada's binaries and provider-armada's
// controllers, and returns once the claim is Ready, its queue exists and
// the scheduler's submit check knows every executor.
func compose(t testing.TB, o composeOptions) *flow {
	t.Helper()
	ctx := t.Context()
	if o.version == "" {
		o.version = armada.DefaultVersion
	}
	f := &flow{armadactl: map[string]string{}}
	rels := map[string]podrun.Release{}
	for _, v := range []string{o.version, o.upgradeTo} {
		if v == "" {
			continue
		}
		rel, ctl, err := jobflow.FindRelease(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		rels[v], f.armadactl[v] = rel, ctl
	}
	var waitWorker func() *controlplane.ControlPlane
	if o.worker {
		// The worker cluster comes up beside everything else.
		waitWorker = startWorker(t)
	}
	pgPassword, redisPassword := testenv.RandomPassword(t), testenv.RandomPassword(t)
	bo := jobflow.BackendOptions{
		PostgresAddr: postgresHost + ":5432", RedisAddr: redisHost + ":6379",
		PulsarAddr: pulsarHost + ":6650", PulsarAdminAddr: pulsarHost + ":8080",
		PostgresUser: "armada", PostgresPassword: pgPassword, RedisPassword: redisPassword,
	}
	if o.node {
		f.startNode(t, o, bo)
	} else {
		f.be = jobflow.StartBackends(t, bo)
		for from, to := range o.relays {
			if err := f.be.Names.Relay(from, to); err != nil {
				t.Fatal(err)
			}
		}
		cpo := controlplane.Options{JobFlow: true}
		if o.worker {
			// provider-kubernetes observes the worker's Objects every 5 s.
			cpo.ProviderPollInterval = 5 * time.Second
		}
		f.cp = controlplane.StartForTest(t, cpo)
		if err := f.cp.AddNodes(ctx, o.nodes...); err != nil {
			t.Fatal(err)
		}
	}
	c := f.cp.Client()
	// The platform's fixed RBAC, applied as the install guide has it
	// (`kubectl apply -f cluster/rbac/`, in the worker clusters too): the
	// composed executor's and binoculars' bindings refer to its
	// ClusterRoles, and every pod reaches the API server with its own
	// ServiceAccount's token only.
	rbac, err := manifest.ReadDir(testutil.Path("cluster", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, c, rbac...)
	if o.worker {
		f.worker = waitWorker()
		apply(t, f.worker.Client(), rbac...)
		connectWorker(ctx, t, c, f.worker)
	}
	jobflow.Namespace(t, c, ns, true)
	apply(t, c, secret(ns, "armada-postgres", "password", pgPassword), secret(ns, "armada-redis", "password", redisPassword))
	apply(t, c, o.objects...)
	f.manifest = claimFor(o.version)
	maps.Copy(f.manifest.Object["spec"].(map[string]any), o.spec)
	f.applied = time.Now()
	apply(t, c, f.manifest)

	f.redisPassword = redisPassword
	if !o.node {
		f.runner, f.stopRunner = jobflow.StartStoppableRunner(t, f.be, jobflow.RunnerOptions{
			Client: c, Namespace: ns, APIServer: f.cp.RESTConfig(), Releases: rels, Logf: t.Logf,
		})
	}
	if o.worker {
		// The remote executor's pod, in the worker cluster.
		f.workerRunner = jobflow.StartRunner(t, f.be, jobflow.RunnerOptions{
			Client: f.worker.Client(), Namespace: ns, APIServer: f.worker.RESTConfig(), Releases: rels, Name: "worker-pods", Logf: t.Logf,
		})
	}
	f.claim = jobflow.Claim{T: t, Client: c, Namespace: ns, Name: claimName}
	t.Cleanup(func() {
		if t.Failed() && f.runner != nil {
			t.Logf("pod logs:\n%s", jobflow.PodLogs(f.runner))
			if f.workerRunner != nil {
				t.Logf("worker pod logs:\n%s", jobflow.PodLogs(f.workerRunner))
			}
			t.Logf("pulsar log (tail):\n%s", testutil.Tail(f.be.Pulsar.Log(), 20))
		}
	})

	d := jobflow.WaitFor(t, 6*time.Minute, "claim Ready (every component running as composed and ready by its own probe)", func() (bool, string) {
		s, r, m := f.claim.Condition("Ready")
		return s == "True", fmt.Sprintf("Ready=%s %s: %s; %s%s", s, r, m, f.podsState(t), f.workerState())
	}, nil)
	t.Logf("claim applied → Ready in %s", d.Round(time.Second))
	if f.node != nil {
		// Clients here reach the composed Services as a pod would.
		jobflow.RelayServices(t, f.be.Names, f.cs, ns)
	}
	if o.worker {
		f.addRemoteExecutor(t)
	}
	// The clusterId the claim names for its first executor: Lookout and
	// the scheduler's database must show runs there (not read back from
	// the composed config, so a wrong composition cannot agree with itself).
	es := executorsOf(f.manifest)
	f.clusterID = es[0].clusterID
	seen := f.waitExecutors(t, es)

	if err := jobflow.RunProvider(ctx, f.cp.RESTConfig(), f.be.Names, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	jobflow.WaitFor(t, 2*time.Minute, "queue "+queue+" created by provider-armada", func() (bool, string) {
		s, r, m := f.claim.Condition("QueuesReady")
		return s == "True", fmt.Sprintf("QueuesReady=%s %s: %s", s, r, m)
	}, nil)
	jobflow.WaitSubmitCheckLogged(t, f.schedulerLogs(t), len(es), seen, func(m string) { t.Log(m) })

	// Where users reach Armada, as the claim's status says.
	f.a, f.lookout = f.claim.Armadactl(f.armadactl[o.version], f.be.Names), f.claim.Lookout(f.be.Names)
	f.adminPassword = f.claim.Credential("admin")
	t.Logf("armadactl --armadaUrl %s; Lookout at %s", f.a.Server, f.lookout.URL)
	return f
}

// podsState is the state of the claim's pods for progress messages: the
// runner's, or the node's pods that are not Ready.
func (f *flow) podsState(t testing.TB) string {
	t.Helper()
	if f.node != nil {
		return "pods not Ready: " + jobflow.PodsState(t, f.cs, ns)
	}
	return "runner: " + jobflow.RunnerState(f.runner)
}

// schedulerLogs reads the scheduler's log lines so far.
func (f *flow) schedulerLogs(t testing.TB) func() []string {
	t.Helper()
	if f.node != nil {
		return jobflow.NodeContainerLogs(t, f.node, ns, f.claim.Name+"-scheduler-0", "scheduler")
	}
	return jobflow.SchedulerLogs(f.runner, f.claim.Name)
}

// workerState is the worker runner's state for progress messages.
func (f *flow) workerState() string {
	if f.workerRunner == nil {
		return ""
	}
	return "; worker: " + jobflow.RunnerState(f.workerRunner)
}

// waitExecutors waits until the scheduler's database holds every executor
// es of the claim, each with the clusterId its composed config names (read
// in its own cluster), and returns when the last was seen.
func (f *flow) waitExecutors(t testing.TB, es []claimExecutor) time.Time {
	t.Helper()
	names := map[string]client.Client{}
	for _, e := range es {
		names[e.clusterID] = f.cp.Client()
		if e.remote {
			names[e.clusterID] = f.worker.Client()
		}
	}
	var seen time.Time
	for _, name := range slices.Sorted(maps.Keys(names)) {
		seen = jobflow.WaitExecutor(t, f.be.Postgres, f.claim.ExecutorClusterIDOf(names[name], name), nil)
	}
	return seen
}

// claimFor is the claim at version, as a user would write it. Who may do
// what comes from it: admin is in the admin group; submitter may submit
// to, watch and cancel the queue; viewer only watch it.
func claimFor(version string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": jobflow.ClaimAPIVersion, "kind": "ArmadaClaim",
		"metadata": map[string]any{"name": claimName, "namespace": ns},
		"spec": map[string]any{
			"version":   version,
			"postgres":  map[string]any{"host": postgresHost, "user": "armada", "passwordSecretRef": map[string]any{"name": "armada-postgres", "key": "password"}, "sslMode": "disable"},
			"redis":     map[string]any{"addrs": []any{redisHost + ":6379"}, "passwordSecretRef": map[string]any{"name": "armada-redis", "key": "password"}},
			"pulsar":    map[string]any{"url": "pulsar://" + pulsarHost + ":6650", "adminURL": "http://" + pulsarHost + ":8080"},
			"executors": []any{map[string]any{"clusterId": executorCluster}},
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
}

func secret(namespace, name, key, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"stringData": map[string]any{key: value},
	}}
}

// apply server-side applies objects.
func apply(t testing.TB, c client.Client, objs ...*unstructured.Unstructured) {
	t.Helper()
	testutil.Apply(t.Context(), t, c, fieldOwner, objs...)
}

// claimExecutor is one of a claim's executors as the claim names it.
type claimExecutor struct {
	clusterID string
	// remote is true for an executor in a worker cluster
	// (spec.executors[].cluster).
	remote bool
}

// executorsOf reads the claim's spec.executors, in order; a claim without
// any gets the local executor.
func executorsOf(claim *unstructured.Unstructured) []claimExecutor {
	es, _, _ := unstructured.NestedSlice(claim.Object, "spec", "executors")
	if len(es) == 0 {
		return []claimExecutor{{clusterID: localExecutor}}
	}
	out := make([]claimExecutor, 0, len(es))
	for _, e := range es {
		m, _ := e.(map[string]any)
		id, _ := m["clusterId"].(string)
		_, remote := m["cluster"]
		out = append(out, claimExecutor{clusterID: id, remote: remote})
	}
	return out
}
