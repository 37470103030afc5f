package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseRender(t *testing.T) {
	type want struct {
		xr       string
		objects  []string
		wrappers []string
		worker   []string
		err      string
	}
	cases := map[string]struct {
		reason string
		in     string
		want   want
	}{
		"XRThenComposed": {
			reason: "The first document is the XR; render.crossplane.io documents are dropped.",
			in: `apiVersion: armada.io/v1alpha1
kind: XArmada
metadata: {name: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: render.crossplane.io/v1beta1
kind: Result
metadata: {name: r}
`,
			want: want{xr: "XArmada/a", objects: []string{"ConfigMap/cm"}},
		},
		"ObjectUnwrapped": {
			reason: "A provider-kubernetes Object is unwrapped to its manifest; one whose providerConfigRef an executor names is that worker cluster's.",
			in: `apiVersion: armada.io/v1alpha1
kind: XArmada
metadata: {name: a}
spec:
  executors:
  - cluster: {providerConfigRef: {kind: ProviderConfig, name: worker-1}}
---
apiVersion: kubernetes.crossplane.io/v1alpha2
kind: Object
metadata: {name: wrap-sa}
spec:
  providerConfigRef: {kind: ProviderConfig, name: worker-1}
  forProvider:
    manifest: {apiVersion: v1, kind: ServiceAccount, metadata: {name: executor}}
---
apiVersion: kubernetes.crossplane.io/v1alpha2
kind: Object
metadata: {name: wrap-ns}
spec:
  providerConfigRef: {kind: ProviderConfig, name: other}
  forProvider:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: ns}}
`,
			want: want{
				xr:       "XArmada/a",
				objects:  []string{"ServiceAccount/executor", "Namespace/ns"},
				wrappers: []string{"Object/wrap-sa", "Object/wrap-ns"},
				worker:   []string{"ServiceAccount/executor"},
			},
		},
		"Empty": {
			reason: "An output without documents is refused.",
			in:     "# nothing\n",
			want:   want{err: "render output is empty"},
		},
	}
	ids := func(r *Render, f func(*Render) []string) []string {
		if r == nil {
			return nil
		}
		return f(r)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := ParseRender([]byte(tc.in))
			got := want{
				objects:  ids(r, func(r *Render) []string { return kindNames(r.Objects) }),
				wrappers: ids(r, func(r *Render) []string { return kindNames(r.Wrappers) }),
				worker:   ids(r, func(r *Render) []string { return kindNames(r.RemoteManifests("worker-1")) }),
			}
			if r != nil {
				got.xr = r.XR.GetKind() + "/" + r.XR.GetName()
			}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nParseRender(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// kindNames names objects as Kind/name, in order.
func kindNames(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, u := range objs {
		out = append(out, u.GetKind()+"/"+u.GetName())
	}
	return out
}
