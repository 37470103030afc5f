package armada

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

// Job namespaces. Jobs never run beside the Armada: its own namespace (in
// this cluster and in every worker cluster, where it holds the executor's
// identity) holds its Secrets and its components, so the executor may
// create pods only in namespaces composed for jobs: the claim's
// spec.jobNamespaces for its spec.queues, and each team queue's
// spec.namespaces for that queue. One builder composes them all
// (JobNamespaceObjects): the Namespace with the annotations the Armada's
// admission policy reads (admission.go), its default ServiceAccount with
// no token mounted, and the RoleBindings of the Armada's executors and
// binoculars there, in this cluster and in each worker cluster.

const (
	// AnnotationArmada names, on a job namespace, the Armada whose
	// executors may create pods there: <namespace>/<name>.
	AnnotationArmada = "armadaproject.io/armada"
	// AnnotationQueues lists, on a job namespace, the queues whose jobs
	// may run there: sorted, comma-separated.
	AnnotationQueues = "armadaproject.io/queues"
	// defaultJobNamespaceSuffix names the claim's default job namespace
	// after the Armada's.
	defaultJobNamespaceSuffix = "-jobs"
	// KeyJobNamespacePrefix prefixes the composition resource names of
	// the claim's job namespaces.
	KeyJobNamespacePrefix = "jobnamespace-"
	// partOfArmada is the part-of label of what the function composes.
	partOfArmada = "armada"
	// defaultServiceAccount is the ServiceAccount a pod without one runs
	// as.
	defaultServiceAccount = "default"
)

// JobNamespaces are the namespaces the jobs of the claim's own queues run
// in: spec.jobNamespaces, else <namespace>-jobs.
func (in *Install) JobNamespaces() []string {
	if len(in.Spec.JobNamespaces) > 0 {
		return slices.Clone(in.Spec.JobNamespaces)
	}
	return []string{in.Namespace + defaultJobNamespaceSuffix}
}

// ArmadaRef is the value of AnnotationArmada for the install.
func (in *Install) ArmadaRef() string { return in.Namespace + "/" + in.Name }

// checkJobNamespaces refuses a job namespace that is the Armada's own,
// and a default one whose name would be too long.
func (in *Install) checkJobNamespaces() field.ErrorList {
	p := field.NewPath("spec", "jobNamespaces")
	if len(in.Spec.JobNamespaces) == 0 {
		name := in.Namespace + defaultJobNamespaceSuffix
		if in.Namespace != "" && len(validation.IsDNS1123Label(name)) > 0 {
			return field.ErrorList{field.Required(p, fmt.Sprintf(
				"the default job namespace %s is longer than Kubernetes' 63 characters: name the namespaces the jobs of spec.queues run in", name))}
		}
		return nil
	}
	var errs field.ErrorList
	for i, ns := range in.Spec.JobNamespaces {
		if ns == in.Namespace {
			errs = append(errs, field.Forbidden(p.Index(i), fmt.Sprintf(
				"namespace %s is the Armada's own, which holds its Secrets and components: jobs never run there; "+
					"name a namespace for the jobs that does not exist yet (the default is %s%s)", ns, in.Namespace, defaultJobNamespaceSuffix)))
		}
	}
	return errs
}

// JobNamespace is a job namespace ns where the jobs of queues run, marked
// for owner. labels are added to the Armada's own.
func (in *Install) JobNamespace(owner Owner, ns string, queues []string, labels map[string]string) *corev1.Namespace {
	l := jobObjectLabels()
	maps.Copy(l, labels)
	q := slices.Clone(queues)
	slices.Sort(q)
	obj := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l, Annotations: map[string]string{
			AnnotationArmada: in.ArmadaRef(),
			AnnotationQueues: strings.Join(slices.Compact(q), ","),
		}},
	}
	owner.Stamp(obj)
	return obj
}

// jobObjectLabels are a job namespace's labels, and its ServiceAccount's:
// not a component's, whose Services and NetworkPolicies select on them.
func jobObjectLabels() map[string]string {
	return map[string]string{labelPartOf: partOfArmada, labelManagedBy: "function-armada"}
}

// jobServiceAccount is a job namespace's default ServiceAccount: a job's
// pod runs as it and mounts no token (the admission policy refuses a pod
// with one).
func jobServiceAccount(ns string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   metav1.ObjectMeta{Name: defaultServiceAccount, Namespace: ns, Labels: jobObjectLabels()},
		AutomountServiceAccountToken: ptr.To(false),
	}
}

// JobNamespaceSpec is one job namespace to compose.
type JobNamespaceSpec struct {
	// Name is the namespace's.
	Name string
	// Queues are the queues whose jobs may run there.
	Queues []string
	// Labels are added to the Armada's own.
	Labels map[string]string
	// Key is the Namespace's composition resource name, e.g.
	// "namespace-team-a"; its ServiceAccount's and RoleBindings' derive
	// from it.
	Key string
	// WorkerKey is the worker clusters' copies' (Key if empty), each
	// prefixed by its cluster.
	WorkerKey string
	// Guard is what the tenant's ArmadaTenancyPolicy puts on the
	// namespace (its Pod Security labels) and in it (a ResourceQuota, a
	// LimitRange), each object keyed Key plus its suffix.
	Guard tenancy.JobNamespace
}

// JobNamespaceObjects are everything one job namespace needs: the
// Namespace (JobNamespace) and its default ServiceAccount, and the
// RoleBindings there of the install's executors and binoculars
// (JobAccess). Local ones are for this cluster, unwrapped; the worker
// clusters' copies are wrapped in provider-kubernetes Objects in namespace
// home, as InWorkerClusters does. Every job namespace, the claim's and
// each team queue's, is composed here.
func (in *Install) JobNamespaceObjects(owner Owner, home string, spec JobNamespaceSpec) (local, remote []Object) {
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, spec.Guard.Labels)
	obj := in.JobNamespace(owner, spec.Name, spec.Queues, labels)
	workerKey := spec.WorkerKey
	if workerKey == "" {
		workerKey = spec.Key
	}
	objs := make([]tenancy.NamespaceObject, 0, 2+len(spec.Guard.Objects))
	objs = append(objs, tenancy.NamespaceObject{Object: obj}, tenancy.NamespaceObject{Suffix: "-serviceaccount", Object: jobServiceAccount(spec.Name)})
	for _, g := range spec.Guard.Objects {
		owner.Stamp(g.Object)
		objs = append(objs, g)
	}
	for _, o := range objs {
		local = append(local, Object{Key: spec.Key + o.Suffix, Object: o.Object})
		remote = append(remote, in.InWorkerClusters(home, workerKey+o.Suffix, o.Object)...)
	}
	l, r := in.JobAccess(home, spec.Name, spec.Key+"-")
	return append(local, l...), append(remote, r...)
}

// jobNamespaces composes the claim's job namespaces for its own queues.
// The local ones only with a local executor: jobs run where executors
// are. A namespaced XR composes them through its cluster-scope config.
func (r *renderer) jobNamespaces() {
	in := r.in
	queues := make([]string, 0, len(in.Spec.Queues))
	for _, q := range in.Spec.Queues {
		queues = append(queues, q.Name)
	}
	for _, ns := range in.JobNamespaces() {
		local, remote := in.JobNamespaceObjects(in.owner, in.Namespace, JobNamespaceSpec{
			Name: ns, Queues: queues, Key: KeyJobNamespacePrefix + ns, Guard: r.opt.Tenancy.JobNamespace(ns),
		})
		if in.hasLocalExecutor() {
			for _, o := range local {
				r.addClusterScoped(nil, o.Key, o.Object, r.exists(o.Key))
			}
		}
		for _, o := range remote {
			o.Ready = r.opt.Observed.Ready[o.Key]
			r.out.Objects = append(r.out.Objects, o)
		}
	}
}

// CheckJobNamespaces refuses job namespaces of the claim that exist and
// are not this install's: the platform's, another team's or another
// Armada's, which Crossplane would otherwise adopt, relabel and delete
// with the claim. existing maps a name to the Namespace found; composed
// names what the XR already composes (observed), which stays its own.
func (in *Install) CheckJobNamespaces(existing map[string]metav1.Object, composed []string) field.ErrorList {
	if !in.hasLocalExecutor() {
		return nil
	}
	p := field.NewPath("spec", "jobNamespaces")
	var errs field.ErrorList
	for i, ns := range in.JobNamespaces() {
		obj, ok := existing[ns]
		if !ok || slices.Contains(composed, ns) {
			continue
		}
		owned, holder := in.owner.Owns(obj)
		if owned {
			continue
		}
		fp := p
		if len(in.Spec.JobNamespaces) > 0 {
			fp = p.Index(i)
		}
		what := "was not created by this Armada"
		if holder != "" {
			what = "belongs to " + holder
		}
		errs = append(errs, field.Invalid(fp, ns, fmt.Sprintf("namespace %s already exists and %s; it is not adopted (nor ever deleted): "+
			"name in spec.jobNamespaces namespaces for the jobs that do not exist yet", ns, what)))
	}
	return errs
}

// NamespacesFirst holds back the objects that live in a namespace the same
// output composes until Crossplane has observed that Namespace: Crossplane
// applies desired resources in no set order and stops at the first that
// fails, so a RoleBinding tried before its new namespace would fail the
// whole apply, again and again (seen in the e2e suite: a claim that never
// converged in 90 s). An object already observed is always kept: it is
// never dropped for a missing observation. observed are the composition
// resource names observed.
func NamespacesFirst(objs []Object, observed map[string]bool) []Object {
	pending := map[string]bool{}
	for _, o := range objs {
		if o.Object.GetObjectKind().GroupVersionKind().Kind == "Namespace" && !observed[o.Key] {
			pending[o.Object.GetName()] = true
		}
	}
	if len(pending) == 0 {
		return objs
	}
	out := make([]Object, 0, len(objs))
	for _, o := range objs {
		if ns := o.Object.GetNamespace(); ns != "" && pending[ns] && !observed[o.Key] {
			continue
		}
		out = append(out, o)
	}
	return out
}
