package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// access is one SubjectAccessReview's question.
type access struct {
	verb, group, resource, sub, ns, name string
}

func (a access) String() string {
	r := a.resource
	if a.sub != "" {
		r += "/" + a.sub
	}
	if a.group != "" {
		r += "." + a.group
	}
	where := "cluster-wide"
	if a.ns != "" {
		where = "in " + a.ns
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s %s", a.verb, r, a.name, where))
}

// canI asks the API server's authorizer whether user, in groups, may.
func canI(t *testing.T, user string, groups []string, a access) bool {
	t.Helper()
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authzv1.ResourceAttributes{
		Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.ns, Name: a.name,
	}}}
	if err := kube().Create(context.Background(), sar); err != nil {
		t.Fatalf("cannot create SubjectAccessReview: %v", err)
	}
	return sar.Status.Allowed
}

// serviceAccountGroups are the groups the API server gives a
// ServiceAccount's token.
func serviceAccountGroups(ns string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

// beyondReach is what no composed ServiceAccount and no tenant may do
// outside the tenant's namespace ns (own lists what the tenant's edit role
// grants in ns itself): impersonate, mint tokens, place pods outside the
// Armada's job namespaces, write nodes, read Secrets, or grant itself
// more.
func beyondReach(ns, other string, own bool) []access {
	out := []access{
		{verb: "impersonate", resource: "users", name: "admin"},
		{verb: "impersonate", resource: "users"},
		{verb: "impersonate", resource: "groups", name: "system:masters"},
		{verb: "impersonate", resource: "groups"},
		{verb: "impersonate", resource: "serviceaccounts", ns: "kube-system"},
		{verb: "impersonate", resource: "serviceaccounts", ns: other},
		{verb: "impersonate", group: "authentication.k8s.io", resource: "userextras", sub: "scopes"},
		{verb: "create", resource: "serviceaccounts", sub: "token", ns: "kube-system"},
		{verb: "create", resource: "serviceaccounts", sub: "token", ns: other},
		{verb: "create", resource: "pods"},
		{verb: "create", resource: "pods", ns: "default"},
		{verb: "create", resource: "pods", ns: "kube-system"},
		{verb: "create", resource: "pods", ns: other},
		{verb: "delete", resource: "pods", ns: other},
		{verb: "patch", resource: "nodes"},
		{verb: "update", resource: "nodes"},
		{verb: "patch", resource: "nodes", sub: "status"},
		{verb: "get", resource: "nodes", sub: "proxy"},
		{verb: "get", resource: "secrets"},
		{verb: "list", resource: "secrets"},
		{verb: "get", resource: "secrets", ns: "kube-system"},
		{verb: "list", resource: "secrets", ns: "kube-system"},
		{verb: "get", resource: "secrets", ns: other},
		{verb: "list", resource: "secrets", ns: other},
		{verb: "escalate", group: rbacv1.GroupName, resource: "clusterroles"},
		{verb: "bind", group: rbacv1.GroupName, resource: "clusterroles"},
		{verb: "create", group: rbacv1.GroupName, resource: "clusterrolebindings"},
		{verb: "create", group: rbacv1.GroupName, resource: "rolebindings", ns: other},
	}
	if !own {
		// Only the tenant's edit role grants these in its own namespace,
		// and no composed identity may place a pod in the Armada's own
		// namespace: jobs never run beside the Armada.
		out = append(out,
			access{verb: "create", resource: "pods", ns: ns},
			access{verb: "impersonate", resource: "serviceaccounts", ns: ns},
			access{verb: "create", resource: "serviceaccounts", sub: "token", ns: ns},
			access{verb: "get", resource: "secrets", ns: ns},
			access{verb: "create", group: rbacv1.GroupName, resource: "rolebindings", ns: ns},
		)
	}
	return out
}

// TestComposedIdentitiesLeastPrivilege composes examples/team-a.yaml and
// a team queue of its own on it, then asks the API server's authorizer,
// as every ServiceAccount in the Armada's namespace (each component's, and
// "default", which the migration and topic Jobs run as) and as a tenant
// holding only the built-in "edit" role there, for what neither may do:
// impersonate, mint tokens, create pods outside the Armada's job
// namespaces, write nodes, read Secrets elsewhere, grant rights. Each
// identity's own needs are asked too, so a binding that is not applied
// fails the test rather than passing it. Finally it takes the tenant's
// route of issue 23 for real: as the tenant, it creates a token for the
// executor's ServiceAccount and uses it to impersonate system:masters and
// list every Secret, which the API server must refuse.
func TestComposedIdentitiesLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	ns, other := "e2e-least", "e2e-least-other"
	claim := install(t, "team-a", ns)
	queue := teamQueueClaim(ns, ns, claim.GetName())
	apply(t, queue)
	t.Cleanup(func() { _ = kube().Delete(ctx, queue) })
	// The claim's own job namespace and the team queue's.
	jobs, team := ns+"-jobs", ns+"-ml"

	executorSA := claim.GetName() + "-executor-team-a"
	binocularsSA := claim.GetName() + "-binoculars"
	// What each composed identity needs, by ServiceAccount.
	needs := map[string][]access{
		executorSA: {
			{verb: "list", resource: "pods"},
			{verb: "watch", resource: "nodes"},
			{verb: "list", resource: "events"},
			{verb: "create", resource: "pods", ns: jobs},
			{verb: "delete", resource: "pods", ns: jobs},
			{verb: "patch", resource: "pods", ns: jobs},
			{verb: "create", resource: "services", ns: jobs},
			{verb: "create", group: "networking.k8s.io", resource: "ingresses", ns: jobs},
			{verb: "create", resource: "pods", ns: team},
		},
		binocularsSA: {{verb: "get", resource: "pods", sub: "log", ns: jobs}, {verb: "get", resource: "pods", sub: "log", ns: team}},
	}
	waitFor(t, "the composed identities bound in the Armada's job namespaces", func() (bool, string) {
		for sa, as := range needs {
			for _, a := range as {
				if !canI(t, "system:serviceaccount:"+ns+":"+sa, serviceAccountGroups(ns), a) {
					return false, sa + " may not yet " + a.String()
				}
			}
		}
		return true, ""
	})

	sas := &corev1.ServiceAccountList{}
	if err := kube().List(ctx, sas, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(sas.Items))
	for _, sa := range sas.Items {
		names = append(names, sa.Name)
	}
	for _, want := range []string{executorSA, binocularsSA, claim.GetName() + "-scheduler", claim.GetName() + "-server"} {
		if !slices.Contains(names, want) {
			t.Fatalf("ServiceAccounts in %s are %v; want %s among them", ns, names, want)
		}
	}
	// The Jobs and Redis run as "default", which Kubernetes' ServiceAccount
	// controller creates in a real cluster (the local control plane does
	// not run it); the authorizer answers for it all the same.
	if !slices.Contains(names, "default") {
		names = append(names, "default")
	}
	for _, sa := range names {
		user := "system:serviceaccount:" + ns + ":" + sa
		for _, a := range beyondReach(ns, other, false) {
			t.Run(sa+"/"+a.String(), func(t *testing.T) {
				if canI(t, user, serviceAccountGroups(ns), a) {
					t.Errorf("ServiceAccount %s may %s", sa, a)
				}
			})
		}
	}

	// A tenant: a user holding only the built-in edit role in ns.
	tenant, groups := "e2e-tenant", []string{"e2e-tenants", "system:authenticated"}
	edit := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-tenant-edit", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}},
	}
	if err := kube().Create(ctx, edit); err != nil {
		t.Fatal(err)
	}
	// The authorizer reads RoleBindings from an informer, so the binding
	// takes effect a moment after it is created.
	waitFor(t, "the tenant's edit role in force", func() (bool, string) {
		for _, a := range []access{{verb: "create", resource: "pods", ns: ns}, {verb: "get", resource: "secrets", ns: ns}} {
			if !canI(t, tenant, groups, a) {
				return false, "the tenant may not yet " + a.String()
			}
		}
		return true, ""
	})
	for _, a := range beyondReach(ns, other, true) {
		t.Run("tenant/"+a.String(), func(t *testing.T) {
			if canI(t, tenant, groups, a) {
				t.Errorf("the tenant, with edit in %s, may %s", ns, a)
			}
		})
	}

	// The tenant's route for real: edit may mint a token for any
	// ServiceAccount in its namespace, so what the executor may do, the
	// tenant may do.
	asTenant := cp.RESTConfig()
	asTenant.Impersonate = rest.ImpersonationConfig{UserName: tenant, Groups: groups}
	tc, err := kubernetes.NewForConfig(asTenant)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, executorSA, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the tenant cannot mint a token for %s (edit allows it): %v", executorSA, err)
	}
	asExecutor := rest.AnonymousClientConfig(cp.RESTConfig())
	asExecutor.BearerToken = tr.Status.Token
	ec, err := kubernetes.NewForConfig(asExecutor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("with the executor's token, listing pods (its informer's need) fails: %v", err)
	}
	if _, err := ec.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1}); !kerrors.IsForbidden(err) {
		t.Errorf("with the executor's token, listing every Secret: got %v, want Forbidden", err)
	}
	asMasters := rest.CopyConfig(asExecutor)
	asMasters.Impersonate = rest.ImpersonationConfig{UserName: "e2e-anyone", Groups: []string{"system:masters"}}
	mc, err := kubernetes.NewForConfig(asMasters)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{Limit: 1}); !kerrors.IsForbidden(err) {
		t.Errorf("with the executor's token, impersonating system:masters to list kube-system's Secrets: got %v, want Forbidden", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-escape", Namespace: other},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := ec.CoreV1().Pods(other).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !kerrors.IsForbidden(err) {
		t.Errorf("with the executor's token, creating a pod in another tenant's namespace %s: got %v, want Forbidden", other, err)
	}
}
