package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// notRun are the non-Armada images an example may compose, by repository
// (podrun.ImageIs), with why the test does not run them and what stands in.
var notRun = map[string]string{
	"library/redis": "the in-cluster Redis; the test's private Redis stands in for it at its Service's address (see farEnds)",
}

// notRunReason returns why a non-Armada image is not run, or false if the
// test does not account for it.
func notRunReason(image string) (string, bool) {
	for repo, why := range notRun {
		if podrun.ImageIs(image, repo) {
			return why, true
		}
	}
	return "", false
}

// CheckAccounting compares what the test runs of an example with what the
// claim asks for, counted independently of the render: one of each
// control-plane component, one executor per spec.executors entry (one by
// default) in this cluster or in its worker cluster, and one migration Job
// per database of the release (its row in the version table).
func CheckAccounting(t *testing.T, r *Render, runs []*Run, version string) {
	t.Helper()
	rel, ok := armada.ReleaseOf(version)
	if !ok {
		t.Fatalf("Armada %s is not in the version table", version)
	}
	want := map[string]int{}
	for _, c := range []string{"server", "scheduler", "scheduleringester", "lookout", "lookoutingester", "eventingester", "binoculars"} {
		want[c] = 1
	}
	executors, _, _ := unstructured.NestedSlice(r.XR.Object, "spec", "executors")
	if len(executors) == 0 {
		want["executor"] = 1
	}
	for _, x := range executors {
		m, _ := x.(map[string]any)
		if _, remote, _ := unstructured.NestedMap(m, "cluster", "providerConfigRef"); remote {
			want["executor (worker cluster)"]++
		} else {
			want["executor"]++
		}
	}
	want["migration Jobs"] = len(rel.Schema)

	got := map[string]int{}
	for _, rn := range runs {
		switch {
		case rn.Job:
			got["migration Jobs"]++
		case rn.Cluster != "":
			got[rn.Inv.Component+" (worker cluster)"]++
		default:
			got[rn.Inv.Component]++
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Armada containers run, by component, differ from what the claim asks for (-want, +got):\n%s", diff)
	}
}
