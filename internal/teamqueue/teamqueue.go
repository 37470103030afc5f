// Package teamqueue renders a team's queue on a shared Armada (an
// XArmadaQueue, claimed with an ArmadaQueueClaim): a provider-armada Queue
// owned by the team's groups, in the target Armada's namespace where its
// ProviderConfig lives, and the namespaces the team's jobs run in. It is
// pure: spec and target in, typed objects out.
package teamqueue

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// Labels Crossplane puts on an XR created from a claim.
const (
	labelClaimName      = "crossplane.io/claim-name"
	labelClaimNamespace = "crossplane.io/claim-namespace"
	// LabelQueue marks the namespaces of a queue's jobs.
	LabelQueue = "armadaproject.io/queue"
	// defaultPriorityFactor is Armada's neutral factor.
	defaultPriorityFactor = "1"
)

// Composition resource names.
const (
	KeyQueue           = "queue"
	keyNamespacePrefix = "namespace-"
)

// XR is the part of an XArmadaQueue that rendering needs.
type XR struct {
	Name   string
	Labels map[string]string
	Spec   v1alpha1.ArmadaQueueSpec
}

// Target returns the ArmadaClaim the queue belongs to: spec.armada, its
// namespace defaulting to the queue claim's.
func (xr XR) Target() (name, namespace string) {
	namespace = xr.Spec.Armada.Namespace
	if namespace == "" {
		namespace = xr.Labels[labelClaimNamespace]
	}
	return xr.Spec.Armada.Name, namespace
}

// QueueName is the queue's name in Armada: spec.queueName, else the claim's
// name, else the XR's.
func (xr XR) QueueName() string {
	switch {
	case xr.Spec.QueueName != "":
		return xr.Spec.QueueName
	case xr.Labels[labelClaimName] != "":
		return xr.Labels[labelClaimName]
	}
	return xr.Name
}

// Output is what a team queue composes.
type Output struct {
	Objects []armada.Object
	Status  v1alpha1.ArmadaQueueStatus
}

// Render composes the team's queue on target, the defaulted install of the
// target Armada. Every rejection names its field.
func Render(xr XR, target *armada.Install) (*Output, field.ErrorList) {
	sp := field.NewPath("spec")
	name := xr.QueueName()
	var errs field.ErrorList
	for i, q := range target.Spec.Queues {
		if q.Name == name {
			errs = append(errs, field.Invalid(sp.Child("queueName"), name,
				fmt.Sprintf("the platform already defines this queue in the ArmadaClaim's spec.queues[%d]; choose another name", i)))
		}
	}
	classes := map[string]bool{}
	for _, pc := range target.PriorityClasses() {
		classes[pc] = true
	}
	p := armadav1.QueueParameters{
		PriorityFactor: xr.Spec.PriorityFactor,
		GroupOwners:    slices.Clone(xr.Spec.GroupOwners),
		UserOwners:     slices.Clone(xr.Spec.UserOwners),
		Permissions:    slices.Clone(xr.Spec.Permissions),
	}
	if p.PriorityFactor == "" {
		p.PriorityFactor = defaultPriorityFactor
	}
	if len(p.GroupOwners) == 0 {
		errs = append(errs, field.Required(sp.Child("groupOwners"), "the team's groups own its queue"))
	}
	errs = append(errs, armada.ValidateQueueParameters(sp, &p)...)
	for _, pc := range slices.Sorted(maps.Keys(xr.Spec.Quota)) {
		if !classes[pc] {
			errs = append(errs, field.NotSupported(sp.Child("quota").Key(pc), pc, slices.Sorted(maps.Keys(classes))))
			continue
		}
		if p.ResourceLimitsByPriorityClassName == nil {
			p.ResourceLimitsByPriorityClassName = map[string]armadav1.PriorityClassResourceLimits{}
		}
		errs = append(errs, armada.ValidateFractions(sp.Child("quota").Key(pc), xr.Spec.Quota[pc])...)
		p.ResourceLimitsByPriorityClassName[pc] = armadav1.PriorityClassResourceLimits{MaximumResourceFraction: maps.Clone(xr.Spec.Quota[pc])}
	}
	if len(errs) > 0 {
		return nil, errs
	}

	out := &Output{Status: v1alpha1.ArmadaQueueStatus{
		Queue:      name,
		Armada:     target.Namespace + "/" + target.Name,
		Endpoint:   target.Endpoints().GRPC,
		Namespaces: slices.Clone(xr.Spec.Namespaces),
	}}
	out.Objects = append(out.Objects, armada.Object{Key: KeyQueue, Object: target.Queue(name, p, "team-queue")})
	for _, ns := range xr.Spec.Namespaces {
		obj := &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
				LabelQueue:                     name,
				"app.kubernetes.io/managed-by": "function-armada",
				"app.kubernetes.io/part-of":    "armada",
			}},
		}
		key := keyNamespacePrefix + ns
		out.Objects = append(out.Objects, armada.Object{Key: key, Object: obj})
		// Jobs run wherever the Armada has executors: the namespace must
		// exist in each worker cluster too.
		out.Objects = append(out.Objects, target.InWorkerClusters("team-"+name+"-"+key, obj)...)
	}
	return out, nil
}
