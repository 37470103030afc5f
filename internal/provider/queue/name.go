package queue

import (
	"regexp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// validName matches a Kubernetes label value of at least one character.
// Armada's executor labels every pod it runs with its queue's name
// (armada_queue_id), so a queue whose name is not a valid label value
// cannot run jobs.
var validName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// Name returns the Armada name of cr's queue: its external name, or its
// metadata.name when that is unset.
func Name(cr *v1alpha1.Queue) (string, error) {
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
