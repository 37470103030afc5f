package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// kindArmada is the namespaced Armada XR's kind.
const kindArmada = "Armada"

// namespacedArmada is examples/namespaced.yaml's Armada in namespace ns,
// composing its cluster-scoped objects through the control plane's
// provider-kubernetes ClusterProviderConfig.
func namespacedArmada(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	for _, d := range exampleDocs(t, "namespaced", ns) {
		if d.GetKind() == kindArmada {
			_ = unstructured.SetNestedField(d.Object, controlplane.ProviderConfigName, "spec", "clusterScope", "providerConfigRef", "name")
			_ = unstructured.SetNestedField(d.Object, ns, "spec", "pulsar", "tenant")
			return d
		}
	}
	t.Fatal("no Armada in examples/namespaced.yaml")
	return nil
}

// teamMember is a user whose only rights are a Role in namespace ns over
// namespaced Armadas and claims (what Crossplane's aggregated edit role
// grants for the XR and claim kinds; the local control plane runs no RBAC
// manager to aggregate it), and a client impersonating them.
func teamMember(t *testing.T, ns, user string) client.Client {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "armada-editor", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"platform.armadaproject.io"},
			Resources: []string{"armadas", "armadaqueues", "armadaclaims", "armadaqueueclaims"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "armada-editor-" + user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := kube().Create(context.Background(), o); err != nil {
			t.Fatalf("cannot create %s: %v", o.GetName(), err)
		}
	}
	// The authorizer reads RoleBindings from an informer: wait until it
	// answers with the new binding before acting as the user.
	a := access{verb: "create", group: "platform.armadaproject.io", resource: "armadas", ns: ns}
	waitFor(t, user+"'s Role in force", func() (bool, string) {
		return canI(t, user, []string{"system:authenticated"}, a), user + " may not yet " + a.String()
	})
	cfg := rest.CopyConfig(cp.RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nsComposed returns a namespaced XR and its composed resource references
// (spec.crossplane.resourceRefs, which carry no namespace: the XR's).
func nsComposed(t *testing.T, ns, name string) (*unstructured.Unstructured, []ref) {
	t.Helper()
	xr := get(t, claimAPIVersion, kindArmada, ns, name)
	if xr == nil {
		t.Fatalf("Armada %s/%s is gone", ns, name)
	}
	raw, _, _ := unstructured.NestedSlice(xr.Object, "spec", "crossplane", "resourceRefs")
	refs := make([]ref, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		if s("namespace") != "" && s("namespace") != ns {
			t.Errorf("Armada %s/%s references %s %s in namespace %s", ns, name, s("kind"), s("name"), s("namespace"))
		}
		refs = append(refs, ref{s("apiVersion"), s("kind"), ns, s("name")})
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	return xr, refs
}

// nsConverge marks Jobs and workloads healthy until the namespaced Armada
// is Ready and runs the desired version.
func nsConverge(t *testing.T, ns, name string) {
	t.Helper()
	start := time.Now()
	waitFor(t, "Armada "+ns+"/"+name+" Ready", func() (bool, string) {
		xr, refs := nsComposed(t, ns, name)
		markHealthy(t, refs)
		s, r, m := condition(xr, "Ready")
		running, _, _ := unstructured.NestedString(xr.Object, "status", "version", "running")
		want, found, _ := unstructured.NestedString(xr.Object, "spec", "version")
		if !found {
			want = armada.DefaultVersion
		}
		return s == "True" && running == want, fmt.Sprintf("Ready=%s %s %s; running %q, want %q", s, r, m, running, want)
	})
	t.Logf("Armada %s/%s Ready %s after the first health report", ns, name, time.Since(start).Round(time.Millisecond))
}

// clusterScoped lists what is cluster-scoped and labelled as composed by
// function-armada for the Armada named name in namespace ns: PriorityClasses
// (named after the namespace) and ClusterRoles and bindings (armada:<ns>:).
func clusterScoped(t *testing.T, ns, name string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	pcs := &schedulingv1.PriorityClassList{}
	crs := &rbacv1.ClusterRoleList{}
	crbs := &rbacv1.ClusterRoleBindingList{}
	sel := client.MatchingLabels{"app.kubernetes.io/managed-by": "function-armada", "app.kubernetes.io/instance": name}
	for _, l := range []client.ObjectList{pcs, crs, crbs} {
		if err := kube().List(ctx, l, sel); err != nil {
			t.Fatal(err)
		}
	}
	for _, pc := range pcs.Items {
		if strings.HasPrefix(pc.Name, ns+"-") {
			out = append(out, "PriorityClass "+pc.Name)
		}
	}
	for _, cr := range crs.Items {
		if strings.HasPrefix(cr.Name, "armada:"+ns+":") {
			out = append(out, "ClusterRole "+cr.Name)
		}
	}
	for _, crb := range crbs.Items {
		if strings.HasPrefix(crb.Name, "armada:"+ns+":") {
			out = append(out, "ClusterRoleBinding "+crb.Name)
		}
	}
	// Its job namespaces, annotated for it, and its admission policy and
	// binding, named for it.
	nss := &corev1.NamespaceList{}
	vaps := &admissionv1.ValidatingAdmissionPolicyList{}
	vapbs := &admissionv1.ValidatingAdmissionPolicyBindingList{}
	if err := kube().List(ctx, nss); err != nil {
		t.Fatal(err)
	}
	for _, l := range []client.ObjectList{vaps, vapbs} {
		if err := kube().List(ctx, l, sel); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nss.Items {
		if n.Annotations[armada.AnnotationArmada] == ns+"/"+name && n.DeletionTimestamp == nil {
			out = append(out, "Namespace "+n.Name)
		}
	}
	policy := name + "." + ns + ".jobs.armadaproject.io"
	for _, p := range vaps.Items {
		if p.Name == policy {
			out = append(out, "ValidatingAdmissionPolicy "+p.Name)
		}
	}
	for _, b := range vapbs.Items {
		if b.Name == policy {
			out = append(out, "ValidatingAdmissionPolicyBinding "+b.Name)
		}
	}
	sort.Strings(out)
	return out
}

// wrapped lists the cluster-scoped objects the provider-kubernetes Objects
// among refs carry.
func wrapped(t *testing.T, refs []ref) []string {
	t.Helper()
	var out []string
	for _, r := range byKind(refs, "Object") {
		o := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name)
		if o == nil {
			continue
		}
		m, _, _ := unstructured.NestedMap(o.Object, "spec", "forProvider", "manifest")
		meta, _ := m["metadata"].(map[string]any)
		if meta["namespace"] == nil {
			out = append(out, fmt.Sprintf("%s %s", m["kind"], meta["name"]))
		}
	}
	sort.Strings(out)
	return out
}

// TestNamespaced is the tenancy proof of the Crossplane v2-native API: two
// teams' namespaced Armadas (examples/namespaced.yaml in two namespaces),
// each created by a team member who has only namespace-scoped RBAC
// (impersonated), compose and, with health simulated, become Ready beside
// a claim-based Armada. Nothing they compose is cluster-scoped or in
// another namespace, except what their provider-kubernetes Objects carry:
// their PriorityClasses and ClusterRoles and bindings, named after their
// namespace, so the two never collide. Workloads pass restricted Pod
// Security admission. A member cannot read the other team's Armada. An
// Armada without spec.clusterScope is refused on its Accepted condition.
// Team b's namespaced ArmadaQueue on team a's Armada composes, through
// Objects in team b's namespace only, the Queue beside team a's Armada and
// the job namespace, and deleting it removes both. Deleting one team's Armada (as that member) garbage-collects all it
// composed, cluster-scoped objects included, and leaves the other team's
// and the claim's untouched.
func TestNamespaced(t *testing.T) {
	parallel(t)
	teams := []string{"e2e-ns-a", "e2e-ns-b"}
	members := map[string]client.Client{}
	// The platform lets both teams compose cluster-scoped objects through
	// the control plane's ClusterProviderConfig, and team b's queues attach
	// to team a's Armada.
	scope := []any{map[string]any{"kind": "ClusterProviderConfig", "name": controlplane.ProviderConfigName}}
	tenancyPolicy(t, teams[0], map[string]any{"providerConfigs": map[string]any{"clusterScope": scope}})
	tenancyPolicy(t, teams[1], map[string]any{
		"providerConfigs": map[string]any{"clusterScope": scope},
		"queueArmadas":    []any{map[string]any{"namespace": teams[0], "name": "armada"}},
	})
	for i, ns := range teams {
		namespace(t, ns)
		members[ns] = teamMember(t, ns, fmt.Sprintf("member-%c", 'a'+i))
		docs := exampleDocs(t, "namespaced", ns)
		for _, d := range docs {
			if d.GetKind() == "Secret" {
				apply(t, d)
			}
		}
		xr := namespacedArmada(t, ns)
		if err := members[ns].Create(context.Background(), xr); err != nil {
			t.Fatalf("a member with only namespace rights cannot create their Armada in %s: %v", ns, err)
		}
		t.Cleanup(func() {
			_ = kube().Delete(context.Background(), xr)
			waitFor(t, "cluster-scoped objects of "+ns+" collected", func() (bool, string) {
				left := clusterScoped(t, ns, xr.GetName())
				return len(left) == 0, fmt.Sprintf("%d left: %v", len(left), left)
			})
		})
	}
	claim := applyExample(t, "minimal", "e2e-ns-claim")
	for _, ns := range teams {
		nsConverge(t, ns, "armada")
	}
	converge(t, claim)
	claimAccepted(t, claim, "True")

	for _, ns := range teams {
		xr, refs := nsComposed(t, ns, "armada")
		if s, _, m := condition(xr, "Accepted"); s != "True" {
			t.Errorf("Armada %s Accepted=%s: %s", ns, s, m)
		}
		for _, r := range refs {
			if clusterScopedKind[r.Kind] {
				t.Errorf("Armada %s composed %s directly", ns, r)
			}
			if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
				t.Errorf("composed %s does not exist", r)
			}
		}
		// Every cluster-scoped object of this Armada is one its Objects
		// carry, and each exists.
		got, want := clusterScoped(t, ns, "armada"), wrapped(t, refs)
		if strings.Join(got, ",") != strings.Join(want, ",") || len(want) == 0 {
			t.Errorf("Armada %s: cluster-scoped objects %v, want exactly those its provider-kubernetes Objects carry: %v", ns, got, want)
		}
		t.Logf("Armada %s: %d composed in its namespace, %d cluster-scoped through provider-kubernetes: %v", ns, len(refs), len(want), want)
		restrictedAdmission(t, ns, refs)
	}
	a, b := clusterScoped(t, teams[0], "armada"), clusterScoped(t, teams[1], "armada")
	for _, x := range a {
		for _, y := range b {
			if x == y {
				t.Errorf("both teams compose %s", x)
			}
		}
	}

	t.Run("OtherTeamForbidden", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(claimAPIVersion)
		u.SetKind(kindArmada)
		err := members[teams[0]].Get(context.Background(), client.ObjectKey{Namespace: teams[1], Name: "armada"}, u)
		if !kerrors.IsForbidden(err) {
			t.Errorf("member of %s reading %s's Armada: got %v, want Forbidden", teams[0], teams[1], err)
		}
		if err := members[teams[0]].Get(context.Background(), client.ObjectKey{Namespace: teams[0], Name: "armada"}, u); err != nil {
			t.Errorf("member of %s cannot read their own Armada: %v", teams[0], err)
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(claimAPIVersion)
		list.SetKind(kindArmada + "List")
		if err := members[teams[0]].List(context.Background(), list); !kerrors.IsForbidden(err) {
			t.Errorf("member of %s listing Armadas cluster-wide: got %v, want Forbidden", teams[0], err)
		}
	})

	t.Run("RefusedWithoutClusterScope", func(t *testing.T) {
		xr := namespacedArmada(t, teams[0])
		xr.SetName("unscoped")
		unstructured.RemoveNestedField(xr.Object, "spec", "clusterScope")
		if err := members[teams[0]].Create(context.Background(), xr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube().Delete(context.Background(), xr) })
		waitFor(t, "Armada without spec.clusterScope refused", func() (bool, string) {
			u := get(t, claimAPIVersion, kindArmada, teams[0], "unscoped")
			s, r, m := condition(u, "Accepted")
			return s == "False" && r == "Refused" && strings.Contains(m, "spec.clusterScope.providerConfigRef: Required value"),
				fmt.Sprintf("Accepted=%s %s: %s", s, r, m)
		})
		if _, refs := nsComposed(t, teams[0], "unscoped"); len(refs) != 0 {
			t.Errorf("a refused Armada composed %d resources", len(refs))
		}
	})

	t.Run("TeamQueue", func(t *testing.T) {
		// Team b's namespaced ArmadaQueue on team a's Armada: its Queue lands
		// beside team a's provider-armada config and its job namespace is
		// cluster-scoped, both through Objects in team b's namespace, for
		// team a's spec.clusterScope. provider-armada does not run here, so
		// the Queue only has to exist.
		q := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": claimAPIVersion, "kind": "ArmadaQueue",
			"metadata": map[string]any{"name": "research", "namespace": teams[1]},
			"spec": map[string]any{
				"armada":      map[string]any{"name": "armada", "namespace": teams[0]},
				"groupOwners": []any{"team-research"},
				"namespaces":  []any{teams[1] + "-research"},
			},
		}}
		if err := members[teams[1]].Create(context.Background(), q); err != nil {
			t.Fatalf("a member with only namespace rights cannot create their ArmadaQueue: %v", err)
		}
		jobs, queue := teams[1]+"-research", "armada-queue-research"
		waitFor(t, "team b's queue composed", func() (bool, string) {
			u := get(t, claimAPIVersion, "ArmadaQueue", teams[1], "research")
			s, r, m := condition(u, "Accepted")
			ns := get(t, "v1", "Namespace", "", jobs)
			mr := get(t, "armada.m.armadaproject.io/v1alpha1", "Queue", teams[0], queue)
			return s == "True" && ns != nil && mr != nil,
				fmt.Sprintf("Accepted=%s %s: %s; namespace %s exists %t; Queue %s/%s exists %t", s, r, m, jobs, ns != nil, teams[0], queue, mr != nil)
		})
		u := get(t, claimAPIVersion, "ArmadaQueue", teams[1], "research")
		raw, _, _ := unstructured.NestedSlice(u.Object, "spec", "crossplane", "resourceRefs")
		for _, r := range raw {
			if k := r.(map[string]any)["kind"]; k != "Object" {
				t.Errorf("team b's ArmadaQueue composed a %v directly, want only provider-kubernetes Objects", k)
			}
		}
		// The queue, the namespace, its default ServiceAccount and the
		// RoleBindings there of team a's executor and binoculars
		// (docs/guides/least-privilege.md).
		if len(raw) != 5 {
			t.Errorf("team b's ArmadaQueue composed %d resources, want 5 Objects (queue, namespace, ServiceAccount and two RoleBindings)", len(raw))
		}
		waitFor(t, "team a's executor and binoculars bound in team b's job namespace", func() (bool, string) {
			rbs := &rbacv1.RoleBindingList{}
			if err := kube().List(context.Background(), rbs, client.InNamespace(jobs)); err != nil {
				return false, err.Error()
			}
			var roles []string
			for _, rb := range rbs.Items {
				roles = append(roles, rb.RoleRef.Name)
			}
			sort.Strings(roles)
			roles = slices.Compact(roles)
			want := []string{armada.FixedJobRoleName("binoculars"), armada.FixedJobRoleName("executor")}
			return slices.Equal(roles, want), fmt.Sprintf("RoleBindings in %s bind %v, want %v", jobs, roles, want)
		})
		// The job namespace's Object may only observe and create until it
		// has recorded creating the namespace, and is then composed again
		// with the policies that delete it with the queue
		// (docs/guides/tenancy.md): deleting the queue before that leaves
		// the namespace, by design. Wait for it, as a user would see it.
		waitFor(t, "team b's job namespace Object composed to delete its namespace", func() (bool, string) {
			for _, r := range raw {
				ref := r.(map[string]any)
				o := get(t, fmt.Sprint(ref["apiVersion"]), "Object", teams[1], fmt.Sprint(ref["name"]))
				if o == nil {
					continue
				}
				if kind, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "manifest", "kind"); kind != "Namespace" {
					continue
				}
				p, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "managementPolicies")
				return slices.Contains(p, "*") || slices.Contains(p, "Delete"), fmt.Sprintf("Object %s has managementPolicies %v", o.GetName(), p)
			}
			return false, "no Object of team b's queue composes its job namespace"
		})
		if err := members[teams[1]].Delete(context.Background(), q); err != nil {
			t.Fatalf("a member with only namespace rights cannot delete their ArmadaQueue: %v", err)
		}
		waitFor(t, "team b's queue and job namespace deleted", func() (bool, string) {
			ns := get(t, "v1", "Namespace", "", jobs)
			mr := get(t, "armada.m.armadaproject.io/v1alpha1", "Queue", teams[0], queue)
			return ns == nil && mr == nil, fmt.Sprintf("namespace left %t, Queue left %t", ns != nil, mr != nil)
		})
	})

	t.Run("DeleteOneTeam", func(t *testing.T) {
		before := settled(t, claim)
		_, otherRefs := nsComposed(t, teams[1], "armada")
		otherScoped := clusterScoped(t, teams[1], "armada")
		_, refs := nsComposed(t, teams[0], "armada")
		xr := get(t, claimAPIVersion, kindArmada, teams[0], "armada")
		if err := members[teams[0]].Delete(context.Background(), xr); err != nil {
			t.Fatalf("a member with only namespace rights cannot delete their Armada: %v", err)
		}
		d := waitFor(t, "team a's composed objects deleted", func() (bool, string) {
			left := 0
			for _, r := range refs {
				if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) != nil {
					left++
				}
			}
			scoped := clusterScoped(t, teams[0], "armada")
			return left == 0 && len(scoped) == 0, fmt.Sprintf("%d of %d composed left, cluster-scoped left: %v", left, len(refs), scoped)
		})
		t.Logf("team a's %d composed objects and their cluster-scoped objects deleted %s after the Armada", len(refs), d.Round(time.Millisecond))
		time.Sleep(3 * time.Second) // let any stray update land
		unchanged(t, before, snapshot(t, claim))
		for _, r := range otherRefs {
			if get(t, r.APIVersion, r.Kind, r.Namespace, r.Name) == nil {
				t.Errorf("team b's %s went with team a's Armada", r)
			}
		}
		if got := clusterScoped(t, teams[1], "armada"); strings.Join(got, ",") != strings.Join(otherScoped, ",") {
			t.Errorf("team b's cluster-scoped objects changed: %v, were %v", got, otherScoped)
		}
	})
}

// clusterScopedKind are the kinds a namespaced XR must not compose itself.
var clusterScopedKind = map[string]bool{"PriorityClass": true, "ClusterRole": true, "ClusterRoleBinding": true, "Namespace": true}
