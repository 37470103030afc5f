package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespacesFirst(t *testing.T) {
	ns := Object{Key: "ns", Object: &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}}
	in := func(key, namespace string) Object {
		return Object{Key: key, Object: &corev1.ServiceAccount{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: namespace},
		}}
	}
	objs := []Object{ns, in("sa", "jobs"), in("rb", "jobs"), in("other", "armada")}
	cases := map[string]struct {
		reason   string
		observed map[string]bool
		want     []string
	}{
		"NamespaceNotObserved": {
			reason: "What lives in a namespace composed here waits until Crossplane has observed the namespace; the rest goes out.",
			want:   []string{"ns", "other"},
		},
		"NamespaceObserved": {
			reason:   "Once the namespace is observed, everything goes out.",
			observed: map[string]bool{"ns": true},
			want:     []string{"ns", "sa", "rb", "other"},
		},
		"AlreadyComposed": {
			reason:   "An object already observed is never held back (it would be deleted), even when its namespace is not observed.",
			observed: map[string]bool{"rb": true},
			want:     []string{"ns", "rb", "other"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, o := range NamespacesFirst(objs, tc.observed) {
				got = append(got, o.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nNamespacesFirst(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
