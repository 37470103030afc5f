package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBracketKey(t *testing.T) {
	cases := map[string]struct {
		path string
		key  string
		ok   bool
	}{
		"Key":          {path: "data[token]", key: "token", ok: true},
		"DottedKey":    {path: "data[ca.crt]", key: "ca.crt", ok: true},
		"NotData":      {path: "stringData[token]"},
		"NoBracket":    {path: "data.token"},
		"Unterminated": {path: "data[token"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			key, ok := bracketKey(tc.path)
			if diff := cmp.Diff([2]any{tc.key, tc.ok}, [2]any{key, ok}); diff != "" {
				t.Errorf("bracketKey(%q): -want, +got:\n%s", tc.path, diff)
			}
		})
	}
}

func TestComposedDatabases(t *testing.T) {
	obj := func(apiVersion, kind string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: fields}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u
	}
	r := &Render{Objects: []*unstructured.Unstructured{
		obj("postgresql.cnpg.io/v1", "Database", map[string]any{"spec": map[string]any{"name": "scheduler", "owner": "armada"}}),
		obj("postgresql.sql.crossplane.io/v1alpha1", "Database", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"crossplane.io/external-name": "lookout"}},
			"spec":     map[string]any{"forProvider": map[string]any{"owner": "armada"}},
		}),
		obj("example.org/v1", "Database", map[string]any{"spec": map[string]any{"name": "other", "owner": "x"}}),
		obj("postgresql.cnpg.io/v1", "Cluster", map[string]any{"spec": map[string]any{"name": "cluster"}}),
	}}
	want := map[string]string{"scheduler": "armada", "lookout": "armada"}
	if diff := cmp.Diff(want, composedDatabases(r)); diff != "" {
		t.Errorf("composedDatabases(...): -want, +got:\n%s", diff)
	}
}
