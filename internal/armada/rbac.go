package armada

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Least privilege, for Crossplane and for what it composes
// (docs/guides/least-privilege.md; Armada's calls in docs/dev/rbac.md).
//
// The executor reads pods, nodes, events, services, ingresses and
// endpointslices in every namespace (its informers are cluster-wide), and
// writes only in the Armada's job namespaces: the claim's (never the
// Armada's own, see jobns.go) and those of the team queues attached to it. So each component with Kubernetes
// rights has up to two fixed ClusterRoles: armada-crossplane:<component>
// with its cluster-wide reads, bound by a ClusterRoleBinding, and
// armada-crossplane:<component>-jobs with its writes, bound only by
// RoleBindings in job namespaces. Binoculars has only the second.
//
// Creating a ClusterRole that grants these rights would need Crossplane
// to hold them too, or "escalate"; binding one needs "bind". So the
// ClusterRoles are fixed objects the platform applies once with
// Crossplane's own RBAC (cluster/rbac/armada-crossplane-roles.yaml,
// generated from the component table by internal/build/cmd/rbacgen), and the
// function composes only bindings to them. Crossplane then needs "bind" on
// exactly these names and no "escalate", and creates no ClusterRole.
//
// A worker cluster has no such platform step: provider-kubernetes, with
// the credentials of that cluster's ProviderConfig, creates the install's
// own copies of the executor's two ClusterRoles there (same rules, named
// after the install so that deleting one Armada never removes a role
// another binds). Crossplane's identity only creates the Objects here.

const (
	// fixedRolePrefix prefixes the names of the fixed ClusterRoles.
	fixedRolePrefix = "armada-crossplane:"
	// fixedRolePartOf is the fixed ClusterRoles' part-of label.
	fixedRolePartOf = "armada"
	// apiVersionRBAC is the RBAC objects' apiVersion.
	apiVersionRBAC = "rbac.authorization.k8s.io/v1"
	// jobsSuffix suffixes the names of roles and bindings of job rules.
	jobsSuffix = "-jobs"
)

// FixedClusterRoleName names the fixed ClusterRole of a component's
// cluster-wide rules.
func FixedClusterRoleName(component string) string { return fixedRolePrefix + component }

// FixedJobRoleName names the fixed ClusterRole of a component's job
// rules, which only RoleBindings in job namespaces refer to.
func FixedJobRoleName(component string) string { return fixedRolePrefix + component + jobsSuffix }

// FixedClusterRoles are the ClusterRoles of the components with
// Kubernetes rights, in component-table order, each component's
// cluster-wide role before its job role: what cluster/rbac ships and
// Crossplane may bind.
func FixedClusterRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	role := func(name, component string, rules []rbacv1.PolicyRule) rbacv1.ClusterRole {
		return rbacv1.ClusterRole{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: map[string]string{labelPartOf: fixedRolePartOf, labelComponent: component},
			},
			Rules: rules,
		}
	}
	for i := range components {
		c := &components[i]
		if len(c.ClusterRules) > 0 {
			out = append(out, role(FixedClusterRoleName(c.Name), c.Name, c.ClusterRules))
		}
		if len(c.JobRules) > 0 {
			out = append(out, role(FixedJobRoleName(c.Name), c.Name, c.JobRules))
		}
	}
	return out
}

// instanceClusterRole is the ClusterRole an instance's ClusterRoleBinding
// refers to: the fixed one in this cluster, the install's own in a worker
// cluster.
func (in *Install) instanceClusterRole(inst *instance) string {
	if remoteCluster(inst.Executor) != nil {
		return in.clusterObject(inst.component.Name)
	}
	return FixedClusterRoleName(inst.component.Name)
}

// instanceJobRole is the ClusterRole an instance's RoleBindings in job
// namespaces refer to, likewise.
func (in *Install) instanceJobRole(inst *instance) string {
	if remoteCluster(inst.Executor) != nil {
		return in.clusterObject(inst.component.Name + jobsSuffix)
	}
	return FixedJobRoleName(inst.component.Name)
}

// jobRoleBinding grants an instance's job rules in namespace ns, through
// the ClusterRole role.
func (in *Install) jobRoleBinding(ns, role, instance string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: in.clusterObject(instance + jobsSuffix), Namespace: ns, Labels: in.labels(instance)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.object(instance), Namespace: in.Namespace}},
	}
}

// instanceRBAC composes an instance's cluster-wide reads. While rendering
// for a worker cluster (to) they go there. Its job rules are bound only in
// job namespaces, never in the Armada's own (JobNamespaceObjects).
func (r *renderer) instanceRBAC(inst *instance, to *clusterRef) {
	in, name := r.in, inst.Name
	if len(inst.ClusterRules) > 0 {
		key := name + "-clusterrolebinding"
		r.addClusterScoped(to, key, in.clusterRoleBinding(in.instanceClusterRole(inst), name), r.exists(key))
	}
}

// JobAccess is what lets an install's executors and binoculars work in a
// team queue's job namespace ns: a RoleBinding per instance with job
// rules, keyed prefix<instance>-jobs. Local ones are for this cluster,
// unwrapped; a remote executor's is wrapped in a provider-kubernetes
// Object in namespace home for its worker cluster, as InWorkerClusters
// wraps the namespace itself.
func (in *Install) JobAccess(home, ns, prefix string) (local, remote []Object) {
	for _, inst := range instances(in) {
		if len(inst.JobRules) == 0 {
			continue
		}
		key := prefix + inst.Name + jobsSuffix
		rb := in.jobRoleBinding(ns, in.instanceJobRole(inst), inst.Name)
		c := remoteCluster(inst.Executor)
		if c == nil {
			local = append(local, Object{Key: key, Object: rb})
			continue
		}
		k := c.keyPrefix() + key
		u := in.remoteObject(k, *c, rb, remoteOptions{})
		u.SetNamespace(home)
		remote = append(remote, Object{Key: k, Object: u})
	}
	return local, remote
}

// An ungrantedKey is a config key that makes Armada call the Kubernetes
// API with rights this function does not grant, and what it would need.
type ungrantedKey struct {
	component string
	key       []string
	needs     string
}

// ungrantedKeys: impersonating the job's submitter (users and, with them,
// any group they name), minting tokens for the executor's ServiceAccount,
// and reading kubelet stats through nodes/proxy (whose "get" also reaches
// the kubelet's exec).
var ungrantedKeys = []ungrantedKey{
	{component: "executor", key: []string{"kubernetes", "impersonateUsers"}, needs: "impersonation of any user and group"},
	{component: "executor", key: []string{"executorApiConnection", "kubernetesNativeAuth", "enabled"}, needs: "serviceaccounts/token"},
	{component: "executor", key: []string{"metric", "exposeQueueUsageMetrics"}, needs: "nodes/proxy on every node"},
	{component: "binoculars", key: []string{"impersonateUsers"}, needs: "impersonation of any user and group"},
}

// checkUngranted refuses a config override that turns on an ungranted key.
// Armada reads keys case-insensitively, and so does this check.
func checkUngranted(p *field.Path, component string, cfg map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, u := range ungrantedKeys {
		if u.component != component {
			continue
		}
		v, ok := lookupFold(cfg, u.key)
		if !ok || !strings.EqualFold(fmt.Sprint(v), "true") {
			continue
		}
		fp := p
		for _, k := range u.key {
			fp = fp.Child(k)
		}
		errs = append(errs, field.Forbidden(fp, fmt.Sprintf("it needs %s, which the %s's ServiceAccount is not granted: it would reach "+
			"beyond the Armada's job namespaces (docs/guides/least-privilege.md); remove it or set it to false", u.needs, component)))
	}
	return errs
}

// lookupFold finds a nested key in a config, ignoring case.
func lookupFold(cfg map[string]any, key []string) (any, bool) {
	var cur any = cfg
	for _, k := range key {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		found := false
		for mk, mv := range m {
			if strings.EqualFold(mk, k) {
				cur, found = mv, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return cur, true
}

// clusterRole grants a component's cluster-wide rules in a worker cluster,
// where provider-kubernetes creates it for this install (see remote.go).
func (in *Install) clusterRole(component string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: in.clusterObject(component), Labels: in.labels(component)},
		Rules:      rules,
	}
}

// clusterRoleBinding binds the ClusterRole role to an instance's
// ServiceAccount.
func (in *Install) clusterRoleBinding(role, instance string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: in.clusterObject(instance), Labels: in.labels(instance)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.object(instance), Namespace: in.Namespace}},
	}
}

// leaseRole lets a leader-elected component hold its lease, in its own
// namespace only.
func (in *Install) leaseRole(name string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "Role"},
		ObjectMeta: in.meta(in.object(name+"-leader"), name),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"coordination.k8s.io"},
			Resources: []string{"leases"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "RoleBinding"},
		ObjectMeta: in.meta(in.object(name+"-leader"), name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.object(name), Namespace: in.Namespace}},
	}
	return role, binding
}
