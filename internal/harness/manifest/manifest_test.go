package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSplit(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []map[string]any
		wantErr bool
	}{
		"LeadingSeparatorAndEmptyDocuments": {
			in:   "---\na: 1\n---\n---\n# only a comment\n---\nb: x\n",
			want: []map[string]any{{"a": float64(1)}, {"b": "x"}},
		},
		"SeparatorWithComment": {
			in:   "a: 1\n--- # next\nb: 2\n",
			want: []map[string]any{{"a": float64(1)}, {"b": float64(2)}},
		},
		// A "---" inside a block scalar is text, not a separator.
		"IndentedDashesAreText": {
			in:   "a: |\n  x\n  ---\n  y\n",
			want: []map[string]any{{"a": "x\n---\ny\n"}},
		},
		"JSON": {
			in:   `{"kind": "ConfigMap"}`,
			want: []map[string]any{{"kind": "ConfigMap"}},
		},
		"Empty": {in: ""},
		"Invalid": {
			in:      "a: 1\n---\nb: [\n",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Split([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Split(): error %v, want error %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Split(): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": "False", "reason": "Creating", "message": "waiting"},
		"not a condition",
		map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
	}}}}
	want := []Condition{
		{Type: "Ready", Status: "False", Reason: "Creating", Message: "waiting"},
		{Type: "Synced", Status: "True", Reason: "ReconcileSuccess"},
	}
	if diff := cmp.Diff(want, Conditions(u)); diff != "" {
		t.Errorf("Conditions(): -want, +got:\n%s", diff)
	}
	if c, ok := ConditionOf(u, "Synced"); !ok || c != want[1] {
		t.Errorf("ConditionOf(Synced) = %v, %t; want %v, true", c, ok, want[1])
	}
	if c, ok := ConditionOf(u, "Healthy"); ok {
		t.Errorf("ConditionOf(Healthy) = %v, true; want none", c)
	}
	if got, want := ConditionSummary(u), "Ready=False (Creating): waiting; Synced=True (ReconcileSuccess): "; got != want {
		t.Errorf("ConditionSummary() = %q, want %q", got, want)
	}
	if got := ConditionSummary(&unstructured.Unstructured{Object: map[string]any{}}); got != "(none)" {
		t.Errorf("ConditionSummary() of no conditions = %q, want (none)", got)
	}
}

// TestDocuments checks that comment-only documents are left out and a
// leading separator stays with the first document (it is valid YAML).
func TestDocuments(t *testing.T) {
	got, err := Documents([]byte("---\na: 1\n--- # second\n# only a comment\n\n---\nb: |\n  ---\n  x\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"---\na: 1\n", "b: |\n  ---\n  x\n"}
	gotS := make([]string, 0, len(got))
	for _, d := range got {
		gotS = append(gotS, string(d))
	}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("Documents(): -want, +got:\n%s", diff)
	}
}

func TestJoin(t *testing.T) {
	cases := map[string]struct {
		docs []string
		want string
	}{
		"RoundTrip":      {docs: []string{"a: 1\n", "b: 2\n"}, want: "a: 1\n---\nb: 2\n"},
		"NoFinalNewline": {docs: []string{"a: 1", "b: 2"}, want: "a: 1\n---\nb: 2\n"},
		"NoDocuments":    {want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			docs := make([][]byte, 0, len(tc.docs))
			for _, d := range tc.docs {
				docs = append(docs, []byte(d))
			}
			if diff := cmp.Diff(tc.want, string(Join(docs))); diff != "" {
				t.Errorf("Join(): -want, +got:\n%s", diff)
			}
		})
	}
}
