package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const schema = `
type: object
properties:
  apiVersion: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [mode]
    x-kubernetes-validations:
    - rule: "self.a || self.b"
      message: "spec needs a or b"
    properties:
      mode: {type: string, default: External, enum: [External, InCluster], description: "Mode of\n  it."}
      port: {type: integer, format: int32, minimum: 1, maximum: 65535}
      name: {type: string, pattern: '^[a-z]+$', maxLength: 63, description: "Name, as <name>-x; see ` + "`<ns>`" + `."}
      labels:
        type: object
        additionalProperties: {type: string, maxLength: 256}
      config: {type: object, x-kubernetes-preserve-unknown-fields: true}
      users:
        type: array
        maxItems: 2
        items:
          type: object
          properties:
            name: {type: string}
`

func TestRows(t *testing.T) {
	cases := map[string]struct {
		reason string
		want   []Row
	}{
		"EveryKindOfField": {
			reason: "Every field gets a row with its type, default, validation (required, enum, pattern, bounds, CEL with its message) and one-line description; map values and list items get their own rows; apiVersion and metadata are left out.",
			want: []Row{
				{Path: "spec", Type: "object", Validation: "CEL `self.a \\|\\| self.b`: spec needs a or b"},
				{Path: "spec.config", Type: "object (any fields)"},
				{Path: "spec.labels", Type: "map[string]string"},
				{Path: "spec.labels[key]", Type: "string", Validation: "length at most 256"},
				{Path: "spec.mode", Type: "string", Default: "`\"External\"`", Validation: "required; one of `\"External\"`, `\"InCluster\"`", Description: "Mode of it."},
				{Path: "spec.name", Type: "string", Validation: "pattern `^[a-z]+$`; length at most 63", Description: "Name, as <name>-x; see `<ns>`."},
				{Path: "spec.port", Type: "integer (int32)", Validation: ">= 1; <= 65535"},
				{Path: "spec.users", Type: "[]object", Validation: "items at most 2"},
				{Path: "spec.users[].name", Type: "string"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var k Kind
			ks, err := ParseKinds([]byte(crd(t, schema)), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if len(ks) != 1 {
				t.Fatalf("ParseKinds: got %d kinds, want 1", len(ks))
			}
			k = ks[0]
			if diff := cmp.Diff(tc.want, Rows(k.Schema)); diff != "" {
				t.Errorf("%s\nRows(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	cases := map[string]struct {
		in, want string
	}{
		"AngleBracketsOutsideCode": {in: "Secret <name>-tls, `<name>` stays", want: "Secret &lt;name&gt;-tls, `<name>` stays"},
		"Pipes":                    {in: "a | b", want: `a \| b`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, escape(tc.in)); diff != "" {
				t.Errorf("escape(%q): -want +got:\n%s", tc.in, diff)
			}
		})
	}
}

// TestAPIReferenceCurrent fails when docs/reference/api.md is not what
// make generate writes from the committed XRDs and CRDs, and checks that
// generating twice gives the same bytes.
func TestAPIReferenceCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	a, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("Generate is not deterministic: two runs differ")
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "reference", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(a), string(got)); diff != "" {
		t.Errorf("docs/reference/api.md is stale: run make generate (-generated +committed):\n%s", diff)
	}
}

func crd(t *testing.T, schemaYAML string) string {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(schemaYAML), &s); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"spec": map[string]any{
			"group": "example.org", "scope": "Namespaced", "names": map[string]any{"kind": "Thing"},
			"versions": []any{map[string]any{"name": "v1", "schema": map[string]any{"openAPIV3Schema": s}}},
		},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return "---\n" + string(b)
}
