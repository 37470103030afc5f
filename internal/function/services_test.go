package function

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestObservedServices: what the XR's status reports of its backing
// services reaches the guards: the mode, the deletion policy and the mode
// allowModeChange allowed.
func TestObservedServices(t *testing.T) {
	xr := map[string]any{"status": map[string]any{"backingServices": map[string]any{
		"redis":  map[string]any{"mode": "InCluster", "deletionPolicy": "Delete", "modeChangedTo": "InCluster", "ready": true},
		"pulsar": map[string]any{"mode": "External"},
		"bogus":  "not a map",
	}}}
	want := map[string]v1alpha1.BackingServiceStatus{
		"redis":  {Mode: "InCluster", DeletionPolicy: "Delete", ModeChangedTo: "InCluster"},
		"pulsar": {Mode: "External"},
	}
	if diff := cmp.Diff(want, observedServices(xr)); diff != "" {
		t.Errorf("observedServices(...): -want, +got:\n%s", diff)
	}
}
