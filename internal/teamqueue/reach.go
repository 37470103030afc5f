package teamqueue

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// What a team queue may reach. Its job namespaces and its Queue are
// composed by name, so each name must be free or already this queue's:
// Crossplane would otherwise adopt what exists (another team's namespace
// with its Secrets, another team's queue) and delete it with the claim.

// Kinds are the team queue's kinds.
var Kinds = armada.Kinds{Cluster: "XArmadaQueue", Claim: "ArmadaQueueClaim", Namespaced: "ArmadaQueue"}

// platformNamespaces are namespaces no team's jobs run in: Kubernetes' and
// Crossplane's (where the function and providers run). Names starting
// with kubePrefix are Kubernetes' too.
var platformNamespaces = []string{"default", "crossplane-system"}

const kubePrefix = "kube-"

// Owner is who composes what the queue composes.
func (xr XR) Owner() armada.Owner { return armada.NewOwner(Kinds, xr.Name, xr.Namespace, xr.Labels) }

// Existing is what the function found of the names a team queue composes.
type Existing struct {
	// Namespaces are the job namespaces that exist, by name.
	Namespaces map[string]metav1.Object
	// Queue is the provider-armada Queue of the queue's name in the
	// target Armada's namespace, nil if there is none.
	Queue metav1.Object
	// Composed are the composition resource names the XR already composes
	// (observed): what it composed stays its own.
	Composed map[string]bool
}

// CheckReach refuses a team queue that would compose, and so adopt and
// later delete, what is not its own: a job namespace that is the target
// Armada's, the platform's, or exists without this queue's ownership mark;
// a Queue of the same name another claim composes.
func CheckReach(xr XR, target *armada.Install, found Existing) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	owner := xr.Owner()
	for i, ns := range xr.Spec.Namespaces {
		p := sp.Child("namespaces").Index(i)
		switch {
		case ns == target.Namespace:
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"namespace %s is Armada %s/%s's own; name a namespace for the team's jobs that does not exist yet", ns, target.Namespace, target.Name)))
			continue
		case slices.Contains(target.JobNamespaces(), ns):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"namespace %s is a job namespace of Armada %s/%s's own queues (its spec.jobNamespaces); name a namespace for the team's jobs that does not exist yet",
				ns, target.Namespace, target.Name)))
			continue
		case strings.HasPrefix(ns, kubePrefix) || slices.Contains(platformNamespaces, ns):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"namespace %s is the platform's; name a namespace for the team's jobs that does not exist yet", ns)))
			continue
		}
		obj, ok := found.Namespaces[ns]
		if !ok || found.Composed[keyNamespacePrefix+ns] {
			continue
		}
		if owned, holder := owner.Owns(obj); !owned {
			errs = append(errs, field.Forbidden(p, existsMessage("namespace "+ns, holder,
				"it is not adopted (nor ever deleted) by this queue: name a namespace that does not exist yet")))
		}
	}
	if found.Queue != nil && !found.Composed[KeyQueue] {
		if owned, holder := owner.Owns(found.Queue); !owned {
			errs = append(errs, field.Invalid(sp.Child("queueName"), xr.QueueName(), existsMessage(
				fmt.Sprintf("queue %s of Armada %s/%s", xr.QueueName(), target.Namespace, target.Name), holder,
				"choose another spec.queueName (it defaults to the claim's name)")))
		}
	}
	return errs
}

// existsMessage says what exists and is not the queue's, who holds it if
// anything says, and what to do.
func existsMessage(what, holder, todo string) string {
	if holder != "" {
		return fmt.Sprintf("%s already exists and belongs to %s; %s", what, holder, todo)
	}
	return fmt.Sprintf("%s already exists and was not created by this queue; %s", what, todo)
}
