package testutil

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// recorder is a TB that records a failure instead of ending the test.
type recorder struct{ failed string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestWaitUntil(t *testing.T) {
	cases := map[string]struct {
		holdsAt  int // the poll at which cond first holds; 0 for never
		wantFail string
		wantCall int
	}{
		"HoldsAtOnce":  {holdsAt: 1, wantCall: 1},
		"HoldsLater":   {holdsAt: 3, wantCall: 3},
		"NeverHolds":   {wantFail: "timed out after 30ms waiting for the thing; last: poll "},
		"LogsOnFailed": {wantFail: "\nprocess logs"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &recorder{}
			w := Wait{Timeout: 30 * time.Millisecond, Interval: time.Millisecond}
			if name == "LogsOnFailed" {
				w.Logs = func() string { return "process logs" }
			}
			calls := 0
			w.Until(r, "the thing", func() (bool, string) {
				calls++
				return calls == tc.holdsAt, fmt.Sprintf("poll %d", calls)
			})
			if tc.wantFail == "" {
				if r.failed != "" || calls != tc.wantCall {
					t.Errorf("Until(): failed %q after %d polls, want success after %d", r.failed, calls, tc.wantCall)
				}
				return
			}
			if !strings.Contains(r.failed, tc.wantFail) {
				t.Errorf("Until(): failure %q, want it to contain %q", r.failed, tc.wantFail)
			}
		})
	}
}

// broken is a client whose every read fails.
type broken struct{ client.Reader }

func (broken) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("no kind ConfigMap is served")
}

func TestGet(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "there"},
		Data:       map[string]string{"k": "v"},
	}).Build()
	r := &recorder{}
	u := Get(t.Context(), r, c, "v1", "ConfigMap", "ns", "there")
	if u == nil || r.failed != "" {
		t.Fatalf("Get(there) = %v, failure %q; want the ConfigMap", u, r.failed)
	}
	if diff := cmp.Diff(map[string]any{"k": "v"}, u.Object["data"]); diff != "" {
		t.Errorf("Get(there) data: -want, +got:\n%s", diff)
	}
	if u := Get(t.Context(), r, c, "v1", "ConfigMap", "ns", "absent"); u != nil || r.failed != "" {
		t.Errorf("Get(absent) = %v, failure %q; want nil and no failure", u, r.failed)
	}
	// Any other error (a kind not served yet) fails, naming the object.
	if u := Get(t.Context(), r, broken{c}, "v1", "ConfigMap", "ns", "x"); u != nil || !strings.Contains(r.failed, "cannot get ConfigMap ns/x: no kind") {
		t.Errorf("Get(on an error) = %v, failure %q; want a failure naming it", u, r.failed)
	}
}

func TestPaths(t *testing.T) {
	for _, p := range []string{Path("go.mod"), Example("minimal.yaml")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestWaitProgressAndContext checks that each new report reaches Progress
// once and that a done Context ends the wait at once.
func TestWaitProgressAndContext(t *testing.T) {
	var reports []string
	r := &recorder{}
	calls := 0
	Wait{Timeout: time.Minute, Interval: time.Millisecond, Progress: func(m string) { reports = append(reports, m) }}.Until(r, "x", func() (bool, string) {
		calls++
		return calls == 4, fmt.Sprintf("step %d", (calls+1)/2)
	})
	if diff := cmp.Diff([]string{"step 1", "step 2"}, reports); diff != "" || r.failed != "" {
		t.Errorf("Progress reports: -want, +got:\n%s (failure %q)", diff, r.failed)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	Wait{Timeout: time.Minute, Context: ctx}.Until(r, "the thing", func() (bool, string) { return false, "not yet" })
	if !strings.Contains(r.failed, "stopped waiting for the thing: context canceled; last: not yet") || time.Since(start) > 10*time.Second {
		t.Errorf("Until() with a done context: failure %q after %s, want it stopped at once", r.failed, time.Since(start))
	}
}

// TestApply checks that Apply creates an object and applies it again as
// read back, even with a stale resource version and managed fields.
func TestApply(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "cm"},
		"data":     map[string]any{"k": "v1"},
	}}
	r := &recorder{}
	Apply(t.Context(), r, c, "testutil", cm)
	got := Get(t.Context(), r, c, "v1", "ConfigMap", "ns", "cm")
	if r.failed != "" || got == nil {
		t.Fatalf("Apply() then Get(): %v, failure %q", got, r.failed)
	}
	got.Object["data"] = map[string]any{"k": "v2"}
	Apply(t.Context(), r, c, "testutil", cm) // got's resource version is stale now
	Apply(t.Context(), r, c, "testutil", got)
	again := Get(t.Context(), r, c, "v1", "ConfigMap", "ns", "cm")
	if diff := cmp.Diff(map[string]any{"k": "v2"}, again.Object["data"]); diff != "" || r.failed != "" {
		t.Errorf("Apply() of an object read back: data -want, +got:\n%s (failure %q)", diff, r.failed)
	}
}
