package controlplane

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
)

// Crossplane's identity with Options.LeastPrivilege: the ServiceAccount and
// ClusterRole Crossplane's Helm chart creates, with the chart's own rules
// (read from the chart at CrossplaneVersion in the module cache), plus
// every ClusterRole that aggregates into it: cluster/rbac's and what
// Crossplane's RBAC manager would grant, rendered as it renders them: the
// system role of each XRD of PackageDir and, for the providers whose CRDs
// the control plane applies directly rather than as packages, the "edit"
// role of their ProviderRevision. Crossplane reaches the API server with a
// TokenRequest token for that ServiceAccount, not the admin token.

const (
	// CrossplaneServiceAccount is the ServiceAccount Crossplane runs as
	// with Options.LeastPrivilege, in CrossplaneNamespace, as the chart
	// names it.
	CrossplaneServiceAccount = "crossplane"
	// crossplaneClusterRole is the chart's aggregated ClusterRole.
	crossplaneClusterRole = "crossplane"
	// chartNameTemplate is the chart's name template.
	chartNameTemplate = `{{ template "crossplane.name" . }}`
	// tokenSeconds is the lifetime of Crossplane's token: longer than any
	// control plane lives.
	tokenSeconds = 7 * 24 * 3600
	// labelAggregateToCrossplane selects the ClusterRoles that aggregate
	// into Crossplane's.
	labelAggregateToCrossplane = "rbac.crossplane.io/aggregate-to-crossplane"
)

// aggregated labels a ClusterRole to aggregate into Crossplane's, and into
// the roles named by extra (such as "rbac.crossplane.io/aggregate-to-edit").
func aggregated(extra ...string) map[string]string {
	l := map[string]string{labelAggregateToCrossplane: "true"}
	for _, k := range extra {
		l[k] = l[labelAggregateToCrossplane]
	}
	return l
}

// CrossplaneUser is the Kubernetes user Crossplane authenticates as with
// Options.LeastPrivilege.
const CrossplaneUser = "system:serviceaccount:" + CrossplaneNamespace + ":" + CrossplaneServiceAccount

// chartClusterRoles renders the chart's clusterrole.yaml with the RBAC
// manager deployed: the aggregated "crossplane" ClusterRole and
// "crossplane:system:aggregate-to-crossplane" with the chart's rules. The
// template's only directives are the name, labels and the rbacManager
// conditional, so substituting the name and dropping the other directive
// lines renders it. The rendered file is kept in the data directory.
func (c *ControlPlane) chartClusterRoles(crossplaneDir string) ([]*unstructured.Unstructured, error) {
	path := filepath.Join(crossplaneDir, "cluster", "charts", "crossplane", "templates", "clusterrole.yaml")
	b, err := os.ReadFile(path) //nolint:gosec // A file of the pinned Crossplane module.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read Crossplane's chart ClusterRole")
	}
	var out []string
	for l := range strings.SplitSeq(string(b), "\n") {
		l = strings.ReplaceAll(l, chartNameTemplate, crossplaneClusterRole)
		if !strings.Contains(l, "{{") {
			out = append(out, l)
		}
	}
	rendered := filepath.Join(c.dir, "crossplane-clusterrole.yaml")
	if err := os.WriteFile(rendered, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		return nil, errors.Wrap(err, "cannot write rendered chart ClusterRole")
	}
	roles, err := manifest.ReadFile(rendered)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse rendered chart ClusterRole")
	}
	names := make([]string, 0, len(roles))
	for _, r := range roles {
		names = append(names, r.GetName())
	}
	if want := []string{crossplaneClusterRole, crossplaneClusterRole + ":system:aggregate-to-crossplane"}; !slices.Equal(names, want) {
		return nil, errors.Errorf("rendering %s gave ClusterRoles %v, want %v: the chart changed", path, names, want)
	}
	if rules, _, _ := unstructured.NestedSlice(roles[1].Object, "rules"); len(rules) == 0 {
		return nil, errors.Errorf("rendering %s gave no rules", path)
	}
	return roles, nil
}

// providerEditRoles are the ClusterRoles the RBAC manager would create for
// the ProviderRevisions of the providers whose CRDs the control plane
// applies directly (crossplane:provider:NAME:aggregate-to-edit in
// Crossplane's internal/controller/rbac/provider/roles): every verb on
// each CRD's kind and status, aggregated to Crossplane. CloudNativePG and
// prometheus-operator are not Crossplane providers; cluster/rbac grants
// Crossplane their kinds.
func (c *ControlPlane) providerEditRoles(ctx context.Context) ([]*unstructured.Unstructured, error) {
	sets := map[string][]*unstructured.Unstructured{}
	if !c.opts.SkipProviderKubernetes {
		crds, err := manifest.ReadDir(c.opts.ProviderKubernetesCRDDir)
		if err != nil {
			return nil, err
		}
		sets["provider-kubernetes"] = crds
	}
	own, err := manifest.ReadDir(filepath.Join(c.opts.RepoRoot, "package", "provider", "crds"))
	if err != nil {
		return nil, err
	}
	sets["provider-armada"] = own
	if !c.opts.SkipBackingServiceCRDs {
		for _, p := range thirdparty.Pinned {
			if !strings.HasPrefix(p.Name, "provider-") || p.Name == "provider-kubernetes" {
				continue
			}
			d, err := p.CRDPath(ctx)
			if err != nil {
				return nil, err
			}
			crds, err := manifest.ReadDir(d)
			if err != nil {
				return nil, err
			}
			sets[p.Name] = crds
		}
	}
	var roles []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		r, err := editRole(name, sets[name])
		if err != nil {
			return nil, err
		}
		roles = append(roles, r)
	}
	return roles, nil
}

// editRole renders the RBAC manager's edit ClusterRole of a provider.
func editRole(provider string, crds []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	resources := map[string][]string{}
	for _, crd := range crds {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		p, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		resources[g] = append(resources[g], p, p+"/status")
	}
	role := &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   "crossplane:provider:" + provider + ":aggregate-to-edit",
			Labels: aggregated("rbac.crossplane.io/aggregate-to-admin", "rbac.crossplane.io/aggregate-to-edit"),
		},
	}
	for _, g := range slices.Sorted(maps.Keys(resources)) {
		rs := resources[g]
		sort.Strings(rs)
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: rs, Verbs: []string{rbacv1.VerbAll}})
	}
	return toUnstructured(role)
}

// toUnstructured converts a typed object for apply.
func toUnstructured(o runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, errors.Wrap(err, "cannot convert object")
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// applyCrossplaneIdentity creates Crossplane's ServiceAccount, its chart
// ClusterRole and binding, cluster/rbac's ClusterRoles, the providers' edit
// roles and the XRDs' system roles, waits until aggregation has given the
// ServiceAccount its rights and writes a kubeconfig with a token for it,
// which Crossplane then runs with.
func (c *ControlPlane) applyCrossplaneIdentity(ctx context.Context) error {
	dir, err := moduleDir(ctx, c.dir, crossplaneModule, CrossplaneVersion)
	if err != nil {
		return err
	}
	objs, err := c.chartClusterRoles(dir)
	if err != nil {
		return err
	}
	rbac, err := manifest.ReadDir(filepath.Join(c.opts.RepoRoot, "cluster", "rbac"))
	if err != nil {
		return err
	}
	objs = append(objs, rbac...)
	edit, err := c.providerEditRoles(ctx)
	if err != nil {
		return err
	}
	objs = append(objs, edit...)
	xrds, err := c.xrdSystemRoles()
	if err != nil {
		return err
	}
	objs = append(objs, xrds...)
	sa, err := toUnstructured(&corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: CrossplaneServiceAccount, Namespace: CrossplaneNamespace},
	})
	if err != nil {
		return err
	}
	// As the chart's clusterrolebinding.yaml.
	binding, err := toUnstructured(&rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: crossplaneClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crossplaneClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: CrossplaneServiceAccount, Namespace: CrossplaneNamespace}},
	})
	if err != nil {
		return err
	}
	if err := c.apply(ctx, append(objs, sa, binding)...); err != nil {
		return err
	}
	// Aggregation is asynchronous (kube-controller-manager's
	// clusterrole-aggregation controller): wait until the ServiceAccount
	// holds one right from each source.
	if err := c.procs[ProcKubeControllerManager].waitReady(ctx, stepTimeout, "Crossplane's ClusterRole aggregated", func(ctx context.Context) error {
		for _, ra := range []authzv1.ResourceAttributes{
			{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "create"},
			{Group: "apps", Resource: "deployments", Verb: "create", Namespace: "default"},
			{Group: "postgresql.cnpg.io", Resource: "clusters", Verb: "create", Namespace: "default"},
			{Group: "armada.m.armadaproject.io", Resource: "queues", Verb: "create", Namespace: "default"},
			{Group: "platform.armadaproject.io", Resource: "xarmadas", Verb: "update"},
		} {
			ok, err := c.CanI(ctx, CrossplaneUser, ra)
			if err != nil {
				return err
			}
			if !ok {
				return errors.Errorf("%s cannot yet %s %s", CrossplaneUser, ra.Verb, ra.Resource)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return c.writeCrossplaneKubeconfig(ctx)
}

// writeCrossplaneKubeconfig writes a kubeconfig with a TokenRequest token
// for Crossplane's ServiceAccount.
func (c *ControlPlane) writeCrossplaneKubeconfig(ctx context.Context) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: CrossplaneServiceAccount, Namespace: CrossplaneNamespace}}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenSeconds)}}
	if err := c.client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return errors.Wrap(err, "cannot request a token for Crossplane's ServiceAccount")
	}
	const name = "crossplane"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.apiServerURL(), CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return errors.Wrap(err, "cannot serialize Crossplane's kubeconfig")
	}
	c.crossplaneKubeconfig = filepath.Join(c.dir, "crossplane.kubeconfig")
	return errors.Wrap(os.WriteFile(c.crossplaneKubeconfig, b, 0o600), "cannot write Crossplane's kubeconfig")
}

// CanI asks the API server, with a SubjectAccessReview, whether user (a
// ServiceAccount's, with its groups) may do ra.
func (c *ControlPlane) CanI(ctx context.Context, user string, ra authzv1.ResourceAttributes) (bool, error) {
	groups := []string{"system:authenticated"}
	if parts := strings.Split(user, ":"); len(parts) == 4 && parts[1] == "serviceaccount" {
		groups = append(groups, "system:serviceaccounts", "system:serviceaccounts:"+parts[2])
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &ra}}
	if err := c.client.Create(ctx, sar); err != nil {
		return false, errors.Wrap(err, "cannot create SubjectAccessReview")
	}
	return sar.Status.Allowed, nil
}

// CrossplaneKubeconfig is the kubeconfig Crossplane core runs with: the
// ServiceAccount's with Options.LeastPrivilege, else the admin one.
func (c *ControlPlane) CrossplaneKubeconfig() string {
	if c.crossplaneKubeconfig != "" {
		return c.crossplaneKubeconfig
	}
	return c.kubeconfig
}

// xrdSystemRoles are the ClusterRoles the RBAC manager creates for each XRD
// of PackageDir (crossplane:composite:NAME:aggregate-to-crossplane in
// Crossplane's internal/controller/rbac/definition): every verb on the XR
// and claim kinds and their status, and updating their finalizers. The
// real RBAC manager (`crossplane rbac start`) is not run: its metrics
// listener is fixed at :8080 (no flag in this version), which collides
// between control planes running side by side.
func (c *ControlPlane) xrdSystemRoles() ([]*unstructured.Unstructured, error) {
	var roles []*unstructured.Unstructured
	for _, f := range packageFiles {
		objs, err := manifest.ReadFile(filepath.Join(c.opts.PackageDir, f))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetKind() != "CompositeResourceDefinition" {
				continue
			}
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			role := &rbacv1.ClusterRole{
				TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{
					Name:   "crossplane:composite:" + o.GetName() + ":aggregate-to-crossplane",
					Labels: aggregated(),
				},
			}
			for _, names := range []string{"names", "claimNames"} {
				p, found, _ := unstructured.NestedString(o.Object, "spec", names, "plural")
				if !found {
					continue
				}
				role.Rules = append(role.Rules,
					rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{p, p + "/status"}, Verbs: []string{rbacv1.VerbAll}},
					rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{p + "/finalizers"}, Verbs: []string{"update"}},
				)
			}
			u, err := toUnstructured(role)
			if err != nil {
				return nil, err
			}
			roles = append(roles, u)
		}
	}
	return roles, nil
}
