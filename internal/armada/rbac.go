package armada

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Least privilege for Crossplane. The executor and binoculars need rights
// cluster-wide (pods and nodes in every namespace). Creating a ClusterRole
// that grants them would need Crossplane to hold them too, or "escalate";
// binding one needs "bind". So the ClusterRoles are fixed objects the
// platform applies once with Crossplane's own RBAC
// (cluster/rbac/armada-crossplane-roles.yaml, generated from the component
// table by internal/cmd/rbacgen), and in this cluster the function composes
// only ClusterRoleBindings to them. Crossplane then needs "bind" on exactly
// these names and no "escalate", and creates no ClusterRole.
//
// A worker cluster has no such platform step: provider-kubernetes, with
// the credentials of that cluster's ProviderConfig, creates the install's
// own copy of the executor's ClusterRole there (same rules, named after the
// install so that deleting one Armada never removes a role another binds).
// Crossplane's identity only creates the Object in this cluster.

const (
	// fixedRolePrefix prefixes the names of the fixed ClusterRoles.
	fixedRolePrefix = "armada-crossplane:"
	// fixedRolePartOf is the fixed ClusterRoles' part-of label.
	fixedRolePartOf = "armada"
	// apiVersionRBAC is the RBAC objects' apiVersion.
	apiVersionRBAC = "rbac.authorization.k8s.io/v1"
)

// FixedClusterRoleName names the fixed ClusterRole of a component with
// cluster rules.
func FixedClusterRoleName(component string) string { return fixedRolePrefix + component }

// FixedClusterRoles are the ClusterRoles of the components with cluster
// rules, in component-table order: what cluster/rbac ships and
// Crossplane may bind.
func FixedClusterRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	for i := range components {
		c := &components[i]
		if len(c.ClusterRules) == 0 {
			continue
		}
		out = append(out, rbacv1.ClusterRole{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{
				Name:   FixedClusterRoleName(c.Name),
				Labels: map[string]string{labelPartOf: fixedRolePartOf, labelComponent: c.Name},
			},
			Rules: c.ClusterRules,
		})
	}
	return out
}

// instanceClusterRole is the ClusterRole an instance's binding refers to:
// the fixed one in this cluster, the install's own in a worker cluster.
func (in *Install) instanceClusterRole(inst *instance) string {
	if remoteCluster(inst.Executor) != nil {
		return in.clusterObject(inst.component.Name)
	}
	return FixedClusterRoleName(inst.component.Name)
}
