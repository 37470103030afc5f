// Command run is `make run`: it brings up the local control plane (etcd,
// kube-apiserver, kube-controller-manager, Crossplane, provider-kubernetes
// and function-armada as local processes), applies an example claim, waits
// until Crossplane has composed it, prints the tree of what it composed
// and the claim's status. Then, unless -demo=false or -simulate-healthy,
// it brings that Armada up for real and runs one demo job through it (see
// runDemo), prints how to carry on by hand, and keeps running until
// interrupted; -exit-after-demo returns once the job has succeeded.
//
// With -kubeconfig it uses that cluster instead: it applies the XRD and
// Composition and the claim, and expects Crossplane v2 and function-armada
// to be installed there already.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

const (
	owner = client.FieldOwner("armada-make-run")
	// statusTrue is a condition's status when it holds.
	statusTrue = "True"
)

func main() {
	// A flag set of its own: controller-runtime, which provider-armada's
	// controllers bring in, registers -kubeconfig on the global one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	example := fs.String("example", "examples/minimal.yaml", "example file holding the ArmadaClaim (and any Secrets) to apply")
	kubeconfig := fs.String("kubeconfig", "", "use this cluster (Crossplane v2 and function-armada installed) instead of a local control plane")
	healthy := fs.Bool("simulate-healthy", false, "no kubelet runs locally: mark Jobs complete and workloads available, as a cluster would, "+
		"to show the rollout (no demo job)")
	demo := fs.Bool("demo", true, "after showing the composed tree, run the composed Armada for real (Pulsar, PostgreSQL, Redis, "+
		"KWOK Nodes, Armada's binaries) and one demo job through it (local control plane only)")
	onNode := fs.Bool("node", false, "run the composed pods and the demo job as containers on a real node (containerd, runc, the CNI bridge, "+
		"a kubelet, kube-proxy, CoreDNS, kube-router enforcing NetworkPolicies; needs root) instead of Armada's binaries as processes and KWOK Nodes")
	exitAfter := fs.Bool("exit-after-demo", false, "stop everything and exit once the demo job has succeeded (exit 1 if it did not)")
	binsCmd := fs.String("bins-cmd", "", "shell command building the demo's binaries (Pulsar, Armada's), run after the composed tree is shown; "+
		"make run passes `make run-bins`")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag.
	o := runOptions{
		example: *example, kubeconfig: *kubeconfig, healthy: *healthy,
		demo: *demo && *kubeconfig == "" && !*healthy, exitAfterDemo: *exitAfter, binsCmd: *binsCmd,
	}
	o.node = *onNode && o.demo
	cli.Main("run", func(ctx context.Context) error { return run(ctx, o) })
}

// runOptions are run's flags.
type runOptions struct {
	example, kubeconfig string
	healthy             bool
	demo, exitAfterDemo bool
	// node: the demo on a real node (demoOptions.node).
	node    bool
	binsCmd string
}

func run(ctx context.Context, o runOptions) error {
	example, kubeconfig, healthy := o.example, o.kubeconfig, o.healthy
	if o.node && os.Geteuid() != 0 {
		return errors.New("-node: a real node needs root (its network namespaces, bridge, cgroups and mounts): run as root, or run make run-kwok (RUN_NODE=0)")
	}
	docs, err := manifest.ReadDocs(example)
	if err != nil {
		return err
	}
	login := false
	if o.demo {
		withDemoQueue(docs)
		withQuickSubmitCheck(docs)
		login = withLogin(docs)
	}
	var c client.Client
	var cp *controlplane.ControlPlane
	var workers []worker
	if kubeconfig != "" {
		if c, err = existingCluster(ctx, kubeconfig); err != nil {
			return err
		}
	} else {
		fmt.Println("Bringing up the local control plane (binaries from ~/.cache/armada-crossplane/bin)...")
		cp, err = controlplane.Start(ctx, controlplane.Options{
			Logf: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) },
			// Worker clusters' objects are observed through provider-kubernetes.
			ProviderPollInterval: 5 * time.Second,
			// As on a real cluster: Crossplane under its chart's RBAC and
			// cluster/rbac, not admin.
			LeastPrivilege: true,
			// The demo's jobs: kube-scheduler and KWOK, which plays the
			// Nodes' kubelets; the workload controllers stay off (package
			// podrun runs the composed pods). Both start with the demo,
			// after the composed tree, which needs neither: make run builds
			// them then (run-bins), not before.
			JobFlow: o.demo, JobFlowLater: o.demo,
			// On a real node, Kubernetes' own controllers run the composed
			// workloads (Deployments, StatefulSets, Jobs) and the API
			// server's ServiceAccount admission mounts pods' tokens.
			Workloads: o.node,
		})
		if err != nil {
			return err
		}
		defer cp.Stop() //nolint:errcheck // Stopping on the way out; nothing to do on error.
		c, kubeconfig = cp.Client(), cp.Kubeconfig()
		if workers, err = startWorkers(ctx, c, docs); err != nil {
			return err
		}
		defer stopWorkers(workers)
	}

	claim, err := applyExample(ctx, c, docs)
	if err != nil {
		return err
	}
	start := time.Now()
	xr, refs, err := waitComposed(ctx, c, claim)
	if err != nil {
		return err
	}
	fmt.Printf("\nArmadaClaim %s/%s is Synced; Crossplane composed %d objects in %s.\n",
		claim.GetNamespace(), claim.GetName(), len(refs), time.Since(start).Round(time.Millisecond))
	if healthy {
		if xr, refs, err = simulateHealthy(ctx, c, claim, workers); err != nil {
			return err
		}
	}
	printTree(xr, refs)
	if err := printWorkerTrees(ctx, c, xr, workers); err != nil {
		return err
	}
	if err := printStatus(ctx, c, claim); err != nil {
		return err
	}
	fmt.Printf("\nexport KUBECONFIG=%s\nkubectl get armadaclaims -A; kubectl get xarmadas; kubectl -n %s get deploy,sts,jobs,secrets\n",
		kubeconfig, claim.GetNamespace())
	if o.demo {
		return runDemo(ctx, demoOptions{cp: cp, claim: claim, binsCmd: o.binsCmd, exitAfter: o.exitAfterDemo, applied: start, login: login, node: o.node})
	}
	if !healthy {
		fmt.Println("No kubelet runs locally, so migrations stay Running: `make run RUN_ARGS=-simulate-healthy` reports them complete to show the rollout.")
	}
	fmt.Println("Running until interrupted (Ctrl-C).")
	<-ctx.Done()
	return nil
}

// existingCluster checks the cluster can serve claims and installs the XRD
// and Composition.
func existingCluster(ctx context.Context, kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, errors.Wrap(err, "cannot load kubeconfig")
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, errors.Wrap(err, "cannot create client")
	}
	fn := &unstructured.Unstructured{}
	fn.SetAPIVersion("pkg.crossplane.io/v1")
	fn.SetKind("Function")
	if err := c.Get(ctx, client.ObjectKey{Name: "function-armada"}, fn); err != nil {
		return nil, errors.Wrap(err, "cannot find Function function-armada: install Crossplane v2 and function-armada first (see docs/guides/own-cluster.md)")
	}
	for _, f := range []string{
		"cluster/rbac/crossplane-armada.yaml", "cluster/rbac/armada-crossplane-roles.yaml",
		"cluster/tenancy/platform.armadaproject.io_armadatenancypolicies.yaml", "cluster/admission/claims.yaml",
		"package/xarmada/definition.yaml", "package/xarmada/composition.yaml", "package/xarmada/activation.yaml",
		"package/xarmada/queue-definition.yaml", "package/xarmada/queue-composition.yaml",
	} {
		docs, err := manifest.ReadDocs(f)
		if err != nil {
			return nil, err
		}
		if err := applyAll(ctx, c, docs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// applyExample creates the claim's namespace, the example's Secrets, any
// referenced Secret the example does not hold (with a placeholder value),
// and the claim.
func applyExample(ctx context.Context, c client.Client, docs []map[string]any) (*unstructured.Unstructured, error) {
	var claim *unstructured.Unstructured
	for _, d := range docs {
		if d["kind"] == "ArmadaClaim" {
			claim = &unstructured.Unstructured{Object: d}
		}
	}
	if claim == nil {
		return nil, errors.New("cannot find an ArmadaClaim in the example")
	}
	// The claim's namespace and any other the example's objects are in,
	// such as a team's.
	var objs []map[string]any
	seen := map[string]bool{}
	for _, d := range docs {
		u := unstructured.Unstructured{Object: d}
		if n := u.GetNamespace(); n != "" && !seen[n] {
			seen[n] = true
			objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n}})
		}
	}
	for _, r := range [][]string{{"postgres", "passwordSecretRef"}, {"redis", "passwordSecretRef"}, {"pulsar", "tokenSecretRef"}} {
		ref, found, _ := unstructured.NestedStringMap(claim.Object, append([]string{"spec"}, r...)...)
		if found && !inDocs(docs, "Secret", ref["name"]) {
			objs = append(objs, map[string]any{
				"apiVersion": "v1", "kind": "Secret",
				"metadata":   map[string]any{"name": ref["name"], "namespace": claim.GetNamespace()},
				"stringData": map[string]any{ref["key"]: "change-me"},
			})
		}
	}
	return claim, applyAll(ctx, c, append(objs, docs...))
}

func inDocs(docs []map[string]any, kind, name string) bool {
	for _, d := range docs {
		u := unstructured.Unstructured{Object: d}
		if u.GetKind() == kind && u.GetName() == name {
			return true
		}
	}
	return false
}

func applyAll(ctx context.Context, c client.Client, docs []map[string]any) error {
	for _, d := range docs {
		u := &unstructured.Unstructured{Object: d}
		if err := c.Patch(ctx, u, client.Apply, owner, client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply on unstructured objects.
			return errors.Wrapf(err, "cannot apply %s %s", u.GetKind(), u.GetName())
		}
	}
	return nil
}

// waitComposed waits until the claim's XR is Synced and has composed
// resources, and returns them.
func waitComposed(ctx context.Context, c client.Client, claim *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	last := ""
	for {
		xr, refs, msg, err := observe(ctx, c, claim)
		if err != nil {
			return nil, nil, err
		}
		if msg == "" {
			return xr, refs, nil
		}
		if msg != last {
			fmt.Println("  waiting:", msg)
			last = msg
		}
		select {
		case <-ctx.Done():
			return nil, nil, errors.Errorf("claim not composed in time: %s", last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// observe returns the XR and its composed resources, or what is missing.
func observe(ctx context.Context, c client.Client, claim *unstructured.Unstructured) (*unstructured.Unstructured, []string, string, error) {
	got := claim.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), got); err != nil {
		return nil, nil, "", errors.Wrap(err, "cannot get claim")
	}
	name, _, _ := unstructured.NestedString(got.Object, "spec", "resourceRef", "name")
	if name == "" {
		return nil, nil, "claim has no XR yet", nil
	}
	xr := &unstructured.Unstructured{}
	xr.SetAPIVersion(claim.GetAPIVersion())
	xr.SetKind("XArmada")
	if err := c.Get(ctx, client.ObjectKey{Name: name}, xr); kerrors.IsNotFound(err) {
		return nil, nil, "XR not created yet", nil
	} else if err != nil {
		return nil, nil, "", errors.Wrap(err, "cannot get XR")
	}
	synced, _ := manifest.ConditionOf(xr, "Synced")
	composed := simulate.RefsOf(xr)
	if synced.Status != statusTrue || len(composed) == 0 {
		return nil, nil, fmt.Sprintf("XR Synced=%s %s %s", synced.Status, synced.Reason, synced.Message), nil
	}
	refs := make([]string, 0, len(composed))
	for _, r := range composed {
		ref := r.Kind + "\t" + r.Name
		if r.Namespace != "" {
			ref = r.Kind + "\t" + r.Namespace + "/" + r.Name
		}
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	return xr, refs, "", nil
}

// simulateHealthy reports Jobs complete and workloads available, as a
// kubelet and the workload controllers would, until the claim is Ready.
func simulateHealthy(ctx context.Context, c client.Client, claim *unstructured.Unstructured, ws []worker) (*unstructured.Unstructured, []string, error) {
	fmt.Println("Simulating a healthy cluster: marking Jobs complete and workloads available...")
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		xr, refs, _, err := observe(ctx, c, claim)
		if err != nil {
			return nil, nil, err
		}
		if xr != nil {
			if c, _ := manifest.ConditionOf(xr, "Ready"); c.Status == statusTrue {
				return xr, refs, nil
			}
			if err := simulate.MarkHealthy(ctx, c, simulate.RefsOf(xr)); err != nil {
				return nil, nil, err
			}
			for _, w := range ws {
				if err := markWorker(ctx, w); err != nil {
					return nil, nil, err
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil, nil, errors.New("claim did not become Ready")
}

func printTree(xr *unstructured.Unstructured, refs []string) {
	fmt.Printf("\nXArmada %s\n", xr.GetName())
	for i, r := range refs {
		branch := "├─"
		if i == len(refs)-1 {
			branch = "└─"
		}
		kind, name, _ := strings.Cut(r, "\t")
		fmt.Printf("%s %-20s %s\n", branch, kind, name)
	}
}

func printStatus(ctx context.Context, c client.Client, claim *unstructured.Unstructured) error {
	got := claim.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), got); err != nil {
		return errors.Wrap(err, "cannot get claim")
	}
	status, _, _ := unstructured.NestedMap(got.Object, "status")
	delete(status, "claimConditionTypes")
	b, err := yaml.Marshal(map[string]any{"status": status})
	if err != nil {
		return errors.Wrap(err, "cannot encode status")
	}
	fmt.Printf("\nArmadaClaim %s/%s\n%s", got.GetNamespace(), got.GetName(), b)
	return nil
}
