package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
)

// crossplaneClient is a client with the credentials Crossplane core runs
// with.
func crossplaneClient(t *testing.T) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.CrossplaneKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCrossplaneLeastPrivilege proves that the Crossplane which composes
// every example in this suite is not an admin: it runs as its chart's
// ServiceAccount, and its aggregated rights (the chart's, cluster/rbac's
// and the RBAC manager's, as it renders them) let it bind the fixed
// ClusterRoles of the executor and binoculars and nothing else: no
// escalate, no other role to bind, no ClusterRole to create or change.
// SubjectAccessReviews ask the API server's RBAC authorizer; dry-run
// requests with Crossplane's own token show the same answers on the real
// path.
func TestCrossplaneLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	xp := crossplaneClient(t)

	ssr := &authnv1.SelfSubjectReview{}
	if err := xp.Create(ctx, ssr); err != nil {
		t.Fatalf("cannot review Crossplane's identity: %v", err)
	}
	if got := ssr.Status.UserInfo.Username; got != controlplane.CrossplaneUser {
		t.Fatalf("Crossplane authenticates as %q, want its ServiceAccount %q", got, controlplane.CrossplaneUser)
	}

	fixed := armada.FixedClusterRoles()
	for _, want := range fixed {
		got := &rbacv1.ClusterRole{}
		if err := kube().Get(ctx, client.ObjectKey{Name: want.Name}, got); err != nil {
			t.Fatalf("fixed ClusterRole %s is not applied: %v", want.Name, err)
		}
		if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
			t.Errorf("ClusterRole %s in the cluster differs from the component table's rules (-want +got):\n%s", want.Name, diff)
		}
	}

	rbac := func(verb, resource, name, ns string) authzv1.ResourceAttributes {
		return authzv1.ResourceAttributes{Group: rbacv1.GroupName, Resource: resource, Verb: verb, Name: name, Namespace: ns}
	}
	cases := map[string]struct {
		ra   authzv1.ResourceAttributes
		want bool
	}{
		"EscalateAnyClusterRole":     {ra: rbac("escalate", "clusterroles", "", "")},
		"EscalateClusterAdmin":       {ra: rbac("escalate", "clusterroles", "cluster-admin", "")},
		"EscalateAnyRole":            {ra: rbac("escalate", "roles", "", "armada")},
		"BindAnyClusterRole":         {ra: rbac("bind", "clusterroles", "", "")},
		"BindClusterAdmin":           {ra: rbac("bind", "clusterroles", "cluster-admin", "")},
		"BindAdmin":                  {ra: rbac("bind", "clusterroles", "admin", "")},
		"BindOldPerInstallRole":      {ra: rbac("bind", "clusterroles", "armada:armada:armada-executor", "")},
		"BindClusterRoleInNamespace": {ra: rbac("bind", "clusterroles", "edit", "armada")},
		"BindAnyRole":                {ra: rbac("bind", "roles", "", "armada")},
		"CreateClusterRoles":         {ra: rbac("create", "clusterroles", "", "")},
		"UpdateClusterRoles":         {ra: rbac("update", "clusterroles", armada.FixedClusterRoleName("executor"), "")},
		"PatchClusterRoles":          {ra: rbac("patch", "clusterroles", armada.FixedClusterRoleName("executor"), "")},
		"CreateClusterRoleBindings":  {ra: rbac("create", "clusterrolebindings", "", ""), want: true},
	}
	for _, r := range fixed {
		cases["Bind"+r.Name] = struct {
			ra   authzv1.ResourceAttributes
			want bool
		}{ra: rbac("bind", "clusterroles", r.Name, ""), want: true}
		cases["Escalate"+r.Name] = struct {
			ra   authzv1.ResourceAttributes
			want bool
		}{ra: rbac("escalate", "clusterroles", r.Name, "")}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := cp.CanI(ctx, controlplane.CrossplaneUser, tc.ra)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("SubjectAccessReview: %s may %s %s %q in %q: %t, want %t", controlplane.CrossplaneUser, tc.ra.Verb, tc.ra.Resource, tc.ra.Name, tc.ra.Namespace, got, tc.want)
			}
		})
	}

	// The same, on the real path: Crossplane's own token, dry-run.
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "armada-executor", Namespace: "default"}}
	binding := func(role string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "least-privilege-probe"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
	}
	dry := client.DryRunAll
	for _, r := range fixed {
		if err := xp.Create(ctx, binding(r.Name), dry); err != nil {
			t.Errorf("Crossplane cannot bind fixed ClusterRole %s: %v", r.Name, err)
		}
	}
	for _, role := range []string{"cluster-admin", "admin", "edit"} {
		if err := xp.Create(ctx, binding(role), dry); !kerrors.IsForbidden(err) {
			t.Errorf("Crossplane binding ClusterRole %s: got %v, want Forbidden", role, err)
		}
	}
	// Rules Crossplane itself holds, so that only the missing verb, not
	// escalation prevention, refuses it.
	probe := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "least-privilege-probe"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}
	if err := xp.Create(ctx, probe, dry); !kerrors.IsForbidden(err) {
		t.Errorf("Crossplane creating a ClusterRole: got %v, want Forbidden", err)
	}
}

// TestOldClusterRolesRemoved upgrades an Armada composed by a function that
// still composed its own ClusterRoles: the XR references such a
// ClusterRole, which the current function no longer desires. Crossplane
// may not remove it: its garbage collector first updates the role's
// labels, which RBAC refuses to anyone not holding the role's rights (or
// escalate). The XR says so, naming the role, and nothing else is lost;
// once the platform deletes the old roles (the README's upgrade step, by
// their managed-by label), the XR is Synced without them.
func TestOldClusterRolesRemoved(t *testing.T) {
	claim := install(t, "minimal", "e2e-rbac-upgrade")
	// Converged: what lives in the job namespace follows the namespace
	// by one reconcile.
	waitFor(t, "the job namespace's ServiceAccount", func() (bool, string) {
		return get(t, "v1", "ServiceAccount", claim.GetNamespace()+"-jobs", "default") != nil, "not yet"
	})
	xr, refs := composed(t, claim)
	name := "armada:" + claim.GetNamespace() + ":" + claim.GetName() + "-binoculars"
	labels := maps.Clone(xr.GetLabels())
	labels["crossplane.io/composite"] = xr.GetName()
	labels["app.kubernetes.io/managed-by"] = "function-armada"
	old := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{"crossplane.io/composition-resource-name": "binoculars-clusterrole"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: xr.GetAPIVersion(), Kind: xr.GetKind(), Name: xr.GetName(), UID: xr.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Rules: armada.FixedClusterRoles()[0].Rules,
	}
	if err := kube().Create(context.Background(), old); err != nil {
		t.Fatalf("cannot create the old ClusterRole: %v", err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), old) })
	// Reference it from the XR, as the earlier function's reconcile left
	// it; a reconcile already under way may write its references over ours,
	// so add it again until Crossplane has seen it.
	waitFor(t, "the XR reporting the old ClusterRole it may not remove", func() (bool, string) {
		x, now := composed(t, claim)
		if len(byKind(now, "ClusterRole")) == 0 {
			return addResourceRef(t, x, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": name})
		}
		s, r, m := condition(x, "Synced")
		return s == "False" && strings.Contains(m, name) && strings.Contains(m, "forbidden"), fmt.Sprintf("Synced=%s %s: %s", s, r, m)
	})
	if _, now := composed(t, claim); len(now) != len(refs)+1 {
		t.Errorf("the XR references %d objects, want its %d and the old ClusterRole", len(now), len(refs))
	}
	// The upgrade step, as the platform's admin.
	if err := kube().DeleteAllOf(context.Background(), &rbacv1.ClusterRole{}, client.MatchingLabels{"app.kubernetes.io/managed-by": "function-armada"}); err != nil {
		t.Fatalf("cannot delete the old ClusterRoles: %v", err)
	}
	for _, r := range armada.FixedClusterRoles() {
		if get(t, "rbac.authorization.k8s.io/v1", "ClusterRole", "", r.Name) == nil {
			t.Errorf("the upgrade step deleted fixed ClusterRole %s", r.Name)
		}
	}
	waitFor(t, "XR Synced without the old ClusterRole", func() (bool, string) {
		x, now := composed(t, claim)
		s, r, m := condition(x, "Synced")
		if crs := byKind(now, "ClusterRole"); len(crs) > 0 {
			return false, fmt.Sprintf("still references %v", crs)
		}
		return s == "True" && len(now) == len(refs), fmt.Sprintf("Synced=%s %s: %s; %d references, want %d", s, r, m, len(now), len(refs))
	})
}

// addResourceRef adds a reference to an XR's spec.resourceRefs. It is
// never done: the caller checks what Crossplane made of it.
func addResourceRef(t *testing.T, xr *unstructured.Unstructured, ref map[string]any) (bool, string) {
	t.Helper()
	refs, _, _ := unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	if err := unstructured.SetNestedSlice(xr.Object, append(refs, ref), "spec", "resourceRefs"); err != nil {
		t.Fatal(err)
	}
	if err := kube().Update(context.Background(), xr); err != nil {
		return false, "cannot add the reference: " + err.Error()
	}
	return false, "reference added"
}
