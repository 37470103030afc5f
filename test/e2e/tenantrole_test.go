package e2e

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestTenantRole applies examples/tenant-role.yaml, the role the tenancy
// guide recommends instead of Crossplane's aggregated crossplane-edit,
// with its RoleBinding moved to a namespace of the test's, and asks the
// API server's authorizer, as a member of the bound group, what it grants:
// the claim kinds and namespaced XRs in that namespace, and none of the
// Crossplane kinds crossplane-edit would add (provider-kubernetes Objects,
// provider-armada Queues and provider configs, cluster-scoped XRs), nor
// anything in another namespace, nor Secrets.
func TestTenantRole(t *testing.T) {
	const ns, other, group = "e2e-tenant-role", "e2e-tenant-role-other", "team-a"
	namespace(t, ns)
	docs, err := manifest.ReadFile(testutil.Example("tenant-role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		if d.GetKind() == "RoleBinding" {
			d.SetNamespace(ns)
		}
		objs = append(objs, d)
	}
	apply(t, objs...)
	t.Cleanup(func() {
		for _, o := range objs {
			_ = kube().Delete(context.Background(), o)
		}
	})

	const user = "tenant-role-member"
	groups := []string{group, "system:authenticated"}
	const platform = "platform.armadaproject.io"
	kinds := []string{"armadaclaims", "armadaqueueclaims", "armadas", "armadaqueues"}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	allowed := make([]access, 0, len(kinds)*len(verbs)+2)
	for _, res := range kinds {
		for _, verb := range verbs {
			allowed = append(allowed, access{verb: verb, group: platform, resource: res, ns: ns})
		}
	}
	allowed = append(allowed, access{verb: "list", resource: "events", ns: ns}, access{verb: "list", group: "events.k8s.io", resource: "events", ns: ns})
	// The authorizer reads RoleBindings from an informer.
	waitFor(t, "the tenant role in force", func() (bool, string) {
		return canI(t, user, groups, allowed[0]), user + " may not yet " + allowed[0].String()
	})
	for _, a := range allowed {
		if !canI(t, user, groups, a) {
			t.Errorf("the tenant role does not grant %s", a)
		}
	}

	denied := []access{
		// The same kinds outside the bound namespace.
		{verb: "create", group: platform, resource: "armadaclaims", ns: other},
		{verb: "list", group: platform, resource: "armadaqueueclaims", ns: other},
		{verb: "list", group: platform, resource: "armadaclaims"},
		// Cluster-scoped XRs and the platform's policy.
		{verb: "create", group: platform, resource: "xarmadas"},
		{verb: "create", group: platform, resource: "xarmadaqueues"},
		{verb: "update", group: platform, resource: "armadatenancypolicies"},
		// What crossplane-edit adds in the namespace: managed resources
		// and provider configs of every provider.
		{verb: "create", group: "kubernetes.m.crossplane.io", resource: "objects", ns: ns},
		{verb: "create", group: "kubernetes.m.crossplane.io", resource: "providerconfigs", ns: ns},
		{verb: "create", group: "kubernetes.crossplane.io", resource: "objects"},
		{verb: "create", group: "armada.m.armadaproject.io", resource: "queues", ns: ns},
		{verb: "create", group: "armada.m.armadaproject.io", resource: "providerconfigs", ns: ns},
		{verb: "create", group: "armada.m.armadaproject.io", resource: "clusterproviderconfigs"},
		{verb: "create", group: "helm.m.crossplane.io", resource: "releases", ns: ns},
		{verb: "create", group: "apiextensions.crossplane.io", resource: "compositions"},
		{verb: "create", group: "protection.crossplane.io", resource: "usages", ns: ns},
		// Nothing of Kubernetes' own beyond reading events: in
		// particular no way to act as a ServiceAccount of the namespace
		// (an Armada's executor's among them).
		{verb: "get", resource: "secrets", ns: ns},
		{verb: "create", resource: "serviceaccounts", sub: "token", ns: ns},
		{verb: "impersonate", resource: "serviceaccounts", ns: ns},
		{verb: "create", resource: "pods", ns: ns},
		{verb: "create", resource: "events", ns: ns},
		{verb: "create", group: rbacv1.GroupName, resource: "rolebindings", ns: ns},
	}
	for _, a := range denied {
		if canI(t, user, groups, a) {
			t.Errorf("the tenant role grants %s", a)
		}
	}
}
