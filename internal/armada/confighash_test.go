package armada

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// observeHealthy observes every object of out as applied and healthy.
func observeHealthy(t *testing.T, out *Output) Observed {
	t.Helper()
	return Observe(seenAll(t, out, true)).WithServices(out.Status.BackingServices)
}

// convergedHealthy renders s until it composes nothing new, each render
// observing everything the last one composed as applied and healthy, and
// returns the last render.
func convergedHealthy(t *testing.T, s v1alpha1.ArmadaSpec, o Observed) *Output {
	t.Helper()
	var out *Output
	for n := -1; out == nil || len(out.Objects) != n; o = observeHealthy(t, out) {
		if out != nil {
			n = len(out.Objects)
		}
		out = render(t, s, o)
	}
	return out
}

// TestConfigHashFollowsObservedSecret: a config change rolls a workload's
// pods only in the pass that observes the changed config Secret, never in
// the pass that changes it. Crossplane applies the Secret and the workload
// of one pass in no set order; a template that changed first restarted the
// scheduler on its old config, and nothing restarted it when the Secret
// changed after (seen in the job flow: a remote executor refused as
// Unauthenticated until the test timed out).
func TestConfigHashFollowsObservedSecret(t *testing.T) {
	before := spec()
	after := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Components.Scheduler.Config = &runtime.RawExtension{Raw: []byte(`{"scheduling":{"maxQueueLookback":1234}}`)}
	})
	settled := convergedHealthy(t, before, Observed{})
	hash := func(out *Output) string { return podTemplateOf(t, out, "scheduler").Annotations[annotationConfigHash] }
	config := func(out *Output) string {
		return string(find(out, "scheduler-config").Object.(*corev1.Secret).Data[configKey])
	}

	changing := render(t, after, observeHealthy(t, settled))
	if config(changing) == config(settled) {
		t.Fatal("the edit did not change the scheduler's config: the test proves nothing")
	}
	if got, was := hash(changing), hash(settled); got != was {
		t.Errorf("the pass that changes scheduler-config changes the pod template's %s (%s -> %s): the pods may restart before the Secret holds the new config", annotationConfigHash, was, got)
	}

	changed := render(t, after, observeHealthy(t, changing))
	if got, want := hash(changed), configHash([]byte(config(changing))); !strings.HasPrefix(got, want) {
		t.Errorf("the pass that observes the new scheduler-config leaves the pod template's %s at %s, want the new config's %s: the pods never see it", annotationConfigHash, got, want)
	}
}
