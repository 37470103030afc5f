package jobflow

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/manifest"
	"github.com/armadaproject/armada-crossplane/internal/podrun"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

// twoNodes are the KWOK Nodes TestJobFlow's jobs run on.
var twoNodes = []controlplane.Node{
	{Name: "kwok-node-1", CPU: "16", Memory: "64Gi"},
	{Name: "kwok-node-2", CPU: "16", Memory: "64Gi"},
}

// A flow is a composed Armada, Ready and with its queue, that jobs can go
// through.
type flow struct {
	cp     *controlplane.ControlPlane
	be     *jobflow.Backends
	runner *podrun.Runner
	claim  jobflow.Claim
	// a submits and watches as a user would; lookoutURL is the claim's
	// status.endpoints.lookout; clusterID the executor's.
	a          *jobflow.Armadactl
	lookoutURL string
	clusterID  string
	// applied is when the claim was applied.
	applied time.Time
}

// compose starts the local control plane with kube-scheduler, KWOK and
// nodes, private PostgreSQL, Redis and Pulsar, applies a claim naming
// them as a user's would, runs every composed pod as Armada's binaries
// and provider-armada's controllers, and returns once the claim is Ready
// and its queue exists.
func compose(t testing.TB, nodes []controlplane.Node) *flow {
	t.Helper()
	ctx := t.Context()
	version := armada.DefaultVersion
	rel, ctl, err := jobflow.FindRelease(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	pgPassword, redisPassword := testenv.RandomPassword(t), testenv.RandomPassword(t)
	be := jobflow.StartBackends(t, jobflow.BackendOptions{
		PostgresAddr: postgresHost + ":5432", RedisAddr: redisHost + ":6379",
		PulsarAddr: pulsarHost + ":6650", PulsarAdminAddr: pulsarHost + ":8080",
		PostgresUser: "armada", PostgresPassword: pgPassword, RedisPassword: redisPassword,
	})
	cp := controlplane.StartForTest(t, controlplane.Options{JobFlow: true})
	if err := cp.AddNodes(ctx, nodes...); err != nil {
		t.Fatal(err)
	}

	// The platform's fixed RBAC, applied as the install guide has it
	// (`kubectl apply -f cluster/rbac/`): the composed executor's and
	// binoculars' bindings refer to its ClusterRoles, and every pod reaches
	// the API server with its own ServiceAccount's token only.
	rbac, err := manifest.ReadDir(filepath.Join("..", "..", "cluster", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, cp.Client(), rbac...)
	jobflow.Namespace(t, cp.Client(), ns, true)
	apply(t, cp.Client(), secret(ns, "armada-postgres", "password", pgPassword), secret(ns, "armada-redis", "password", redisPassword))
	applied := time.Now()
	apply(t, cp.Client(), claimFor(version))

	runner := jobflow.StartRunner(t, be, jobflow.RunnerOptions{
		Client: cp.Client(), Namespace: ns, APIServer: cp.RESTConfig(),
		Version: version, Release: rel, Logf: t.Logf,
	})
	c := jobflow.Claim{T: t, Client: cp.Client(), Namespace: ns, Name: claimName}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pod logs:\n%s", jobflow.PodLogs(runner))
			t.Logf("pulsar log (tail):\n%s", jobflow.Tail(be.Pulsar.Log(), 20))
		}
	})

	d := jobflow.WaitFor(t, 6*time.Minute, "claim Ready (every component running as composed and ready by its own probe)", func() (bool, string) {
		s, r, m := c.Condition("Ready")
		return s == "True", fmt.Sprintf("Ready=%s %s: %s; runner: %s", s, r, m, jobflow.RunnerState(runner))
	}, nil)
	t.Logf("claim applied → Ready in %s", d.Round(time.Second))
	// The clusterId the claim names: Lookout and the scheduler's database
	// must show each run there.
	clusterID := executorCluster
	seen := jobflow.WaitExecutor(t, be.Postgres, clusterID, nil)

	if err := jobflow.RunProvider(ctx, cp.RESTConfig(), be.Names, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	jobflow.WaitFor(t, 2*time.Minute, "queue "+queue+" created by provider-armada", func() (bool, string) {
		s, r, m := c.Condition("QueuesReady")
		return s == "True", fmt.Sprintf("QueuesReady=%s %s: %s", s, r, m)
	}, nil)
	jobflow.WaitSubmitCheck(t, seen, func(m string) { t.Log(m) })

	// Where users reach Armada, as the claim's status says.
	f := &flow{cp: cp, be: be, runner: runner, claim: c, a: c.Armadactl(ctl, be.Names), lookoutURL: c.Endpoint("lookout"), clusterID: clusterID, applied: applied}
	t.Logf("armadactl --armadaUrl %s; Lookout at %s", f.a.Server, f.lookoutURL)
	return f
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
	for _, o := range objs {
		if err := c.Patch(t.Context(), o.DeepCopy(), client.Apply, fieldOwner, client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply on unstructured is what we need here.
			t.Fatalf("cannot apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}
