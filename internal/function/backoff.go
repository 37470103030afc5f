package function

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// While Armada converges the function asks Crossplane to call again soon
// (the response TTL, which Crossplane uses as the XR's requeue interval).
// A claim that cannot converge (a failed Job, an image that never pulls)
// must not re-apply every object every 5 s forever, so the TTL grows with
// how long the XR has been not Ready: a tenth of that time, between
// progressTTL and maxProgressTTL. A rollout that takes a minute still gets
// 5 s calls; one stuck for ten minutes or more gets a call a minute.
// Crossplane still reconciles at once when a composed resource it watches
// changes.
const (
	progressTTL    = 5 * time.Second
	maxProgressTTL = time.Minute
)

// notReadyTTL is the response TTL at now of an XR not Ready from the time
// since on (zero if unknown).
func notReadyTTL(since, now time.Time) time.Duration {
	if since.IsZero() || now.Before(since) {
		return progressTTL
	}
	return min(max(now.Sub(since)/10, progressTTL), maxProgressTTL)
}

// notReadySince is when the XR's Ready condition last became False, or
// zero when it is not False or carries no time.
func notReadySince(xr map[string]any) time.Time {
	conds, _, _ := unstructured.NestedSlice(xr, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" || m["status"] != "False" {
			continue
		}
		s, _ := m["lastTransitionTime"].(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}
		}
		return t
	}
	return time.Time{}
}
