package function

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNotReadyTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		reason string
		since  time.Time
		want   time.Duration
	}{
		"Unknown":        {reason: "Without a Ready=False time, call again soon.", want: progressTTL},
		"JustNotReady":   {reason: "A rollout in its first minute gets 5 s calls.", since: now.Add(-30 * time.Second), want: progressTTL},
		"TwoMinutes":     {reason: "Two minutes not Ready: a tenth of that.", since: now.Add(-2 * time.Minute), want: 12 * time.Second},
		"StuckForAnHour": {reason: "A claim that cannot converge is called once a minute, not every 5 s.", since: now.Add(-time.Hour), want: maxProgressTTL},
		"ClockSkew":      {reason: "A transition in the future is treated as unknown.", since: now.Add(time.Minute), want: progressTTL},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, notReadyTTL(tc.since, now)); diff != "" {
				t.Errorf("%s\nnotReadyTTL(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNotReadySince(t *testing.T) {
	xr := map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Synced", "status": "True", "lastTransitionTime": "2026-01-01T10:00:00Z"},
		map[string]any{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:00:00Z"},
	}}}
	if diff := cmp.Diff(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC), notReadySince(xr)); diff != "" {
		t.Errorf("notReadySince(Ready=False): -want, +got:\n%s", diff)
	}
	ready := map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T11:00:00Z"},
	}}}
	if got := notReadySince(ready); !got.IsZero() {
		t.Errorf("notReadySince(Ready=True) = %s, want zero", got)
	}
}
