// Package teamqueue renders a team's queue on a shared Armada (an
// XArmadaQueue, claimed with an ArmadaQueueClaim): a provider-armada Queue
// owned by the team's groups, in the target Armada's namespace where its
// ProviderConfig lives, the namespaces the team's jobs run in, and the
// RoleBindings there that let the target's executors and binoculars work
// in them (armada.JobAccess). It is pure: spec and target in, typed
// objects out.
package teamqueue

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/tenancy"
)

const (
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

// XR is the part of an XArmadaQueue, or of a namespaced ArmadaQueue, that
// rendering needs.
type XR struct {
	Name   string
	Labels map[string]string
	Spec   v1alpha1.ArmadaQueueSpec
	// Namespace is a namespaced ArmadaQueue's own namespace, empty for an
	// XArmadaQueue; ClusterScope is its spec.clusterScope.providerConfigRef.
	Namespace    string
	ClusterScope *v1alpha1.ProviderConfigRef
}

// Target returns the Armada the queue belongs to: spec.armada, its
// namespace defaulting to the queue's (the claim's for an XArmadaQueue).
func (xr XR) Target() (name, namespace string) {
	namespace = xr.Spec.Armada.Namespace
	switch {
	case namespace != "":
	case xr.Namespace != "":
		namespace = xr.Namespace
	default:
		namespace = xr.Labels[xcrd.LabelKeyClaimNamespace]
	}
	return xr.Spec.Armada.Name, namespace
}

// QueueName is the queue's name in Armada: spec.queueName, else the claim's
// name, else the XR's.
func (xr XR) QueueName() string {
	switch {
	case xr.Spec.QueueName != "":
		return xr.Spec.QueueName
	case xr.Namespace == "" && xr.Labels[xcrd.LabelKeyClaimName] != "":
		return xr.Labels[xcrd.LabelKeyClaimName]
	}
	return xr.Name
}

// scopeRef is the provider-kubernetes config a namespaced queue composes
// outside its namespace through: its own spec.clusterScope, else the
// target Armada's when that is a ClusterProviderConfig (a ProviderConfig
// lives in the Armada's namespace, out of the queue's reach).
func (xr XR) scopeRef(target *armada.Install) *v1alpha1.ProviderConfigRef {
	if ref := armada.ClusterScopeRef(xr.ClusterScope); ref != nil {
		return ref
	}
	if ref := target.ClusterScope(); ref != nil && ref.Kind == "ClusterProviderConfig" {
		return ref
	}
	return nil
}

// Output is what a team queue composes.
type Output struct {
	Objects []armada.Object
	Status  v1alpha1.ArmadaQueueStatus
}

// queueObject places the team's Queue: beside the Armada's provider-armada
// config, through a provider-kubernetes Object when a namespaced queue
// lives in another namespace than its Armada.
func (xr XR) queueObject(target *armada.Install, ref *v1alpha1.ProviderConfigRef, queue *armadav1.Queue) armada.Object {
	if xr.Namespace != "" && xr.Namespace != target.Namespace {
		return target.ObjectIn(xr.Namespace, xr.Name+"-"+KeyQueue, KeyQueue, *ref, queue, true)
	}
	return armada.Object{Key: KeyQueue, Object: queue}
}

// Render composes the team's queue on target, the defaulted install of the
// target Armada, under policy, the tenancy policy of the queue's tenant
// (the built-in one for a queue without a tenant), which sets what every
// job namespace carries. Every rejection names its field. It reads as its
// steps: validate the spec into the Queue's parameters, then compose the
// Queue and, one by one, its job namespaces.
func Render(xr XR, target *armada.Install, policy tenancy.Policy) (*Output, field.ErrorList) {
	name := xr.QueueName()
	errs := xr.validateName(target, name)
	params, perrs := xr.queueParameters(target)
	errs = append(errs, perrs...)
	ref := xr.scopeRef(target)
	errs = append(errs, xr.validateScope(target, ref)...)
	if len(errs) > 0 {
		return nil, errs
	}
	out := &Output{Status: xr.status(target, name)}
	out.Objects = append(out.Objects, xr.composeQueue(target, ref, name, params))
	out.Objects = append(out.Objects, xr.jobNamespaces(target, ref, policy, name)...)
	return out, nil
}

// validateName refuses a queue name the platform already defines in the
// target's spec.queues.
func (xr XR) validateName(target *armada.Install, name string) field.ErrorList {
	var errs field.ErrorList
	for i, q := range target.Spec.Queues {
		if q.Name == name {
			errs = append(errs, field.Invalid(field.NewPath("spec", "queueName"), name,
				fmt.Sprintf("the platform already defines this queue in the ArmadaClaim's spec.queues[%d]; choose another name", i)))
		}
	}
	return errs
}

// queueParameters are the Queue's parameters from the spec: the owners,
// permissions, priority factor (defaulted) and, for each priority class
// of target the quota names, its resource fractions. Each invalid field is
// an error.
func (xr XR) queueParameters(target *armada.Install) (armadav1.QueueParameters, field.ErrorList) {
	sp := field.NewPath("spec")
	p := armadav1.QueueParameters{
		PriorityFactor: xr.Spec.PriorityFactor,
		GroupOwners:    slices.Clone(xr.Spec.GroupOwners),
		UserOwners:     slices.Clone(xr.Spec.UserOwners),
		Permissions:    slices.Clone(xr.Spec.Permissions),
	}
	if p.PriorityFactor == "" {
		p.PriorityFactor = defaultPriorityFactor
	}
	var errs field.ErrorList
	if len(p.GroupOwners) == 0 {
		errs = append(errs, field.Required(sp.Child("groupOwners"), "the team's groups own its queue"))
	}
	errs = append(errs, armada.ValidateQueueParameters(sp, &p)...)
	classes := map[string]bool{}
	for _, pc := range target.PriorityClasses() {
		classes[pc] = true
	}
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
	return p, errs
}

// validateScope requires a namespaced queue that composes anything outside
// its namespace through provider-kubernetes Objects (job namespaces, or its
// Queue beside an Armada in another namespace) to have a config for them,
// ref, its own or its Armada's.
func (xr XR) validateScope(target *armada.Install, ref *v1alpha1.ProviderConfigRef) field.ErrorList {
	if xr.Namespace == "" || ref != nil || (len(xr.Spec.Namespaces) == 0 && target.Namespace == xr.Namespace) {
		return nil
	}
	return field.ErrorList{field.Required(field.NewPath("spec", "clusterScope", "providerConfigRef"), fmt.Sprintf(
		"a namespaced ArmadaQueue composes its job namespaces and, for an Armada in another namespace, its queue there as "+
			"provider-kubernetes Objects in namespace %s; name the kubernetes.m.crossplane.io ClusterProviderConfig (or a "+
			"ProviderConfig in this namespace) that reaches this cluster, or set it on Armada %s/%s",
		xr.Namespace, target.Namespace, target.Name))}
}

// status is what the queue's status says: its name, its Armada, where to
// submit and its job namespaces.
func (xr XR) status(target *armada.Install, name string) v1alpha1.ArmadaQueueStatus {
	return v1alpha1.ArmadaQueueStatus{
		Queue:      name,
		Armada:     target.Namespace + "/" + target.Name,
		Endpoint:   target.Endpoints().GRPC,
		Namespaces: slices.Clone(xr.Spec.Namespaces),
	}
}

// composeQueue is the team's Queue on target, owned by the XR and placed
// by queueObject.
func (xr XR) composeQueue(target *armada.Install, ref *v1alpha1.ProviderConfigRef, name string, p armadav1.QueueParameters) armada.Object {
	queue := target.Queue(name, p, "team-queue")
	xr.Owner().Stamp(queue)
	return xr.queueObject(target, ref, queue)
}

// jobNamespaces composes each of the spec's job namespaces in turn.
func (xr XR) jobNamespaces(target *armada.Install, ref *v1alpha1.ProviderConfigRef, policy tenancy.Policy, name string) []armada.Object {
	out := make([]armada.Object, 0, len(xr.Spec.Namespaces))
	for _, ns := range xr.Spec.Namespaces {
		out = append(out, xr.jobNamespace(target, ref, policy, name, ns)...)
	}
	return out
}

// jobNamespace composes job namespace ns of queue name on target through
// the shared job-namespace builder: the Namespace (for this queue's jobs
// only) with the policy's guard rails (a Pod Security level on it, its
// ResourceQuota and LimitRange in it), its default ServiceAccount and the
// Armada's executors' and binoculars' RoleBindings there, here and (jobs
// run wherever the Armada has executors) in each worker cluster. A
// namespaced queue composes what is in this cluster through Objects of
// ref in its own namespace.
func (xr XR) jobNamespace(target *armada.Install, ref *v1alpha1.ProviderConfigRef, policy tenancy.Policy, name, ns string) []armada.Object {
	home := target.Namespace
	if xr.Namespace != "" {
		home = xr.Namespace
	}
	key := keyNamespacePrefix + ns
	local, remote := target.JobNamespaceObjects(xr.Owner(), home, armada.JobNamespaceSpec{
		Name: ns, Queues: []string{name}, Labels: map[string]string{LabelQueue: name}, Key: key, WorkerKey: "team-" + name + "-" + key,
		Guard: policy.JobNamespace(ns),
	})
	out := make([]armada.Object, 0, len(local)+len(remote))
	for _, o := range local {
		if xr.Namespace != "" {
			o = target.ObjectIn(home, xr.Name+"-"+o.Key, o.Key, *ref, o.Object, false)
		}
		out = append(out, o)
	}
	return append(out, remote...)
}
