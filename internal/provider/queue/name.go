package queue

import (
	"regexp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// validName matches a Kubernetes label value of at least one character.
// Armada's executor labels every pod it runs with its queue's name
// (armada_queue_id), so a queue whose name is not a valid label value
// cannot run jobs.
var validName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// Name returns the Armada name of cr's queue: its external name, or its
// metadata.name when that is unset.
func Name(cr *armadav1.Queue) (string, error) {
	name := meta.GetExternalName(cr)
	if name == "" {
		name = cr.GetName()
	}
	if !validName.MatchString(name) {
		return "", errors.Errorf("invalid queue name %q: Armada uses it as a Kubernetes label value, so it must be at most 63 "+
			"letters, digits, '-', '_' or '.', starting and ending with a letter or digit "+
			"(set the crossplane.io/external-name annotation to choose another name)", name)
	}
	return name, nil
}

// AnnotationCreated on a Queue records the name of the queue it created in
// Armada. The provider acts only on that queue: a Queue whose external
// name later names another queue is refused, and deleting it deletes the
// queue it created, never the one it now names.
const AnnotationCreated = "armadaproject.io/created-queue"

// Created returns the name of the queue cr created, empty if it created
// none (or did so before the provider recorded the name).
func Created(cr *armadav1.Queue) string { return cr.GetAnnotations()[AnnotationCreated] }

// target returns the queue the provider may act on for cr: its Name,
// unless cr created a queue under another name. Then a Queue being
// deleted deletes the queue it created, and any other is refused.
func target(cr *armadav1.Queue) (string, error) {
	name, err := Name(cr)
	created := Created(cr)
	switch {
	case created == "" || created == name:
		return name, err
	case meta.WasDeleted(cr):
		return created, nil
	}
	return "", errors.Errorf("this Queue created queue %s in Armada and now names queue %s (crossplane.io/external-name): a Queue's "+
		"queue name cannot change, and the provider neither changes nor deletes a queue it did not create; set the external name "+
		"back to %s, or create another Queue for queue %s", created, name, created, name)
}
