package podrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestTemplateHash checks which changes to a pod template restart its pod:
// any change to its spec, labels or annotations, as a Deployment rolls
// (the composed config hash is a template annotation).
func TestTemplateHash(t *testing.T) {
	base := Workload{
		Kind: "Deployment", Name: "armada-server",
		Pod:         corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "gresearch/armada-server:0.22.7"}}},
		Labels:      map[string]string{"app": "server"},
		Annotations: map[string]string{"armadaproject.io/config-hash": "a"},
	}
	cases := map[string]struct {
		change func(w *Workload)
		want   bool
	}{
		"Unchanged":         {change: func(*Workload) {}, want: false},
		"ImageChanged":      {change: func(w *Workload) { w.Pod.Containers[0].Image = "gresearch/armada-server:0.22.8" }, want: true},
		"LabelChanged":      {change: func(w *Workload) { w.Labels = map[string]string{"app": "other"} }, want: true},
		"AnnotationChanged": {change: func(w *Workload) { w.Annotations = map[string]string{"armadaproject.io/config-hash": "b"} }, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := base
			w.Pod = *base.Pod.DeepCopy()
			tc.change(&w)
			if diff := cmp.Diff(tc.want, templateHash(w) != templateHash(base)); diff != "" {
				t.Errorf("templateHash changed (-want +got):\n%s", diff)
			}
		})
	}
}
