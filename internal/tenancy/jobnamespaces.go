package tenancy

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
)

// Job namespaces: where a tenant's jobs run. Armada lets whoever submits a
// job choose its pod's spec, so the namespace itself holds the line: it
// enforces a Pod Security level (Kubernetes' Pod Security admission refuses
// a privileged or host-PID pod there, whoever creates it, Armada's executor
// included), and carries the platform's ResourceQuota and LimitRange.

// Pod Security admission's namespace labels, and the version they pin.
const (
	labelPodSecurity       = "pod-security.kubernetes.io/"
	podSecurityVersion     = "latest"
	defaultJobNamespaceFmt = "{namespace}-*"
	namespacePlaceholder   = "{namespace}"
	// JobGuardName names the ResourceQuota and LimitRange in a job
	// namespace.
	JobGuardName = "armada-jobs"
)

// podSecurityModes are the Pod Security admission modes a job namespace
// sets, each at the policy's level.
var podSecurityModes = []string{"enforce", "warn", "audit"}

// JobNamespace is what a job namespace carries under a policy: labels for
// the Namespace, and objects composed in it.
type JobNamespace struct {
	// Labels to put on the Namespace: Pod Security admission's, at the
	// policy's level.
	Labels map[string]string
	// Objects to compose in the namespace, each with the suffix of its
	// composition resource name: the ResourceQuota ("-quota") and the
	// LimitRange ("-limits") when the policy gives them.
	Objects []NamespaceObject
}

// NamespaceObject is an object composed in a job namespace.
type NamespaceObject struct {
	// Suffix is appended to the namespace's composition resource name.
	Suffix string
	Object client.Object
}

// PodSecurity is the Pod Security level job namespaces enforce:
// spec.jobNamespaces.podSecurity, restricted unless the policy lowers it.
func (p Policy) PodSecurity() string {
	if l := p.Spec.JobNamespaces.PodSecurity; l != "" {
		return l
	}
	return tenancyv1.PodSecurityRestricted
}

// JobNamespace is what job namespace ns carries under the policy. It is
// pure: the same policy and name give the same labels and objects.
func (p Policy) JobNamespace(ns string) JobNamespace {
	level := p.PodSecurity()
	out := JobNamespace{Labels: map[string]string{}}
	for _, mode := range podSecurityModes {
		out.Labels[labelPodSecurity+mode] = level
		out.Labels[labelPodSecurity+mode+"-version"] = podSecurityVersion
	}
	jn := p.Spec.JobNamespaces
	if q := jn.ResourceQuota; q != nil {
		out.Objects = append(out.Objects, NamespaceObject{Suffix: "-quota", Object: &corev1.ResourceQuota{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: guardMeta(ns),
			Spec:       *q.DeepCopy(),
		}})
	}
	if l := jn.LimitRange; l != nil {
		out.Objects = append(out.Objects, NamespaceObject{Suffix: "-limits", Object: &corev1.LimitRange{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: guardMeta(ns),
			Spec:       *l.DeepCopy(),
		}})
	}
	return out
}

// guardMeta is the metadata of a job namespace's ResourceQuota or
// LimitRange.
func guardMeta(ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: JobGuardName, Namespace: ns, Labels: map[string]string{
		"app.kubernetes.io/managed-by": "function-armada",
		"app.kubernetes.io/part-of":    "armada",
	}}
}

// jobNamespaceNames are the patterns a tenant's job namespaces must match,
// with the tenant's namespace put in.
func (p Policy) jobNamespaceNames(tenant string) []string {
	names := p.Spec.JobNamespaces.Names
	if len(names) == 0 {
		names = []string{defaultJobNamespaceFmt}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ReplaceAll(n, namespacePlaceholder, tenant)
	}
	return out
}

// allowsJobNamespace reports whether ns matches one of patterns, in which
// "*" matches any run of characters (the schema allows no other pattern
// syntax, and namespace names hold none).
func allowsJobNamespace(patterns []string, ns string) bool {
	for _, pat := range patterns {
		if ok, err := path.Match(pat, ns); err == nil && ok {
			return true
		}
	}
	return false
}

// CheckJobNamespaces refuses job namespace names (at path, the field that
// lists them) that the tenant's policy does not allow: by default, names
// other than the tenant's namespace, a dash and more. It needs only the
// claim's spec, so the function checks it before it asks whether the
// namespaces exist.
func (p Policy) CheckJobNamespaces(tenant string, fp *field.Path, names []string) field.ErrorList {
	patterns := p.jobNamespaceNames(tenant)
	var errs field.ErrorList
	for i, ns := range names {
		if allowsJobNamespace(patterns, ns) {
			continue
		}
		errs = append(errs, field.Forbidden(fp.Index(i), p.rule("jobNamespaces.names", fmt.Sprintf(
			"namespace %s is not a name tenant %s's job namespaces may have; name one matching %s",
			ns, tenant, strings.Join(patterns, " or ")))))
	}
	return errs
}
