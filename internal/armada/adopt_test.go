package armada

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNotAdopted(t *testing.T) {
	const ns, role = "cluster-worker-a-namespace", "cluster-worker-a-executor-clusterrole"
	composedAs := []any{"Observe", "Create", "Update", "LateInitialize"} // spec.deletionPolicy Orphan's
	object := func(annotations map[string]string, atProvider map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiK8sObject, "kind": "Object"}}
		u.SetAnnotations(annotations)
		if atProvider != nil {
			u.Object["status"] = map[string]any{"atProvider": map[string]any{"manifest": atProvider}}
		}
		return u
	}
	existing := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "armada"}}
	type want struct {
		policies, rolePolicies []any
		foreign                []string
	}
	cases := map[string]struct {
		reason   string
		observed map[string]*unstructured.Unstructured
		want     want
	}{
		"NotObservedYet": {
			reason: "Until the Object is known to have created its namespace, it may only observe and create it.",
			want:   want{policies: createOnly, rolePolicies: composedAs},
		},
		"CreatedByTheObject": {
			reason:   "An Object that created its namespace keeps the policies it was composed with.",
			observed: map[string]*unstructured.Unstructured{ns: object(map[string]string{annotationCreateSucceeded: "2026-12-02T07:00:00Z"}, existing)},
			want:     want{policies: composedAs, rolePolicies: composedAs},
		},
		"FoundThere": {
			reason:   "An Object that found its namespace already there (it never created it) only observes it, and that is reported.",
			observed: map[string]*unstructured.Unstructured{ns: object(nil, existing)},
			want: want{policies: observeOnly, rolePolicies: composedAs, foreign: []string{
				"namespace armada already exists in the cluster of provider config worker-a and was not created here: it is observed only, never changed or deleted",
			}},
		},
		"GoneSince": {
			reason: "An Object that found its namespace there, which has gone since (its reconcile fails), may create it again.",
			observed: map[string]*unstructured.Unstructured{ns: func() *unstructured.Unstructured {
				u := object(nil, existing)
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Synced", "status": "False", "message": "external resource does not exist"}},
					"status", "conditions")
				return u
			}()},
			want: want{policies: createOnly, rolePolicies: composedAs},
		},
		"ObservedNotReached": {
			reason:   "An Object that has not reached its cluster yet says nothing of the namespace.",
			observed: map[string]*unstructured.Unstructured{ns: object(nil, nil)},
			want:     want{policies: createOnly, rolePolicies: composedAs},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := render(t, remoteSpec(), Observed{})
			foreign := NotAdopted(out.Objects, tc.observed)
			policies := func(key string) []any {
				o := find(out, key)
				if o == nil {
					t.Fatalf("no %s composed", key)
				}
				p, _, _ := unstructured.NestedSlice(o.Object.(*unstructured.Unstructured).Object, "spec", "managementPolicies")
				return p
			}
			got := want{policies: policies(ns), rolePolicies: policies(role), foreign: foreign}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNotAdopted(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNotAdoptedPriorityClass(t *testing.T) {
	out := render(t, remoteSpec(), Observed{})
	var key, name string
	for _, o := range out.Objects {
		if n, ok := strings.CutPrefix(o.Key, "cluster-worker-a-priorityclass-"); ok {
			key, name = o.Key, n
			break
		}
	}
	if key == "" {
		t.Fatal("no PriorityClass composed in worker cluster worker-a")
	}
	there := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiK8sObject, "kind": "Object", "status": map[string]any{
		"atProvider": map[string]any{"manifest": map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": name}}},
	}}}
	type want struct {
		policies []any
		foreign  []string
	}
	cases := map[string]struct {
		reason   string
		observed map[string]*unstructured.Unstructured
		want     want
	}{
		"NotObservedYet": {
			reason: "Until the Object is known to have created its PriorityClass, it may only observe and create it.",
			want:   want{policies: createOnly},
		},
		"FoundThere": {
			reason:   "A PriorityClass the worker cluster already has (another Armada's, the platform's) is observed only, and reported.",
			observed: map[string]*unstructured.Unstructured{key: there},
			want: want{policies: observeOnly, foreign: []string{"PriorityClass " + name +
				" already exists in the cluster of provider config worker-a and was not created here: it is observed only, never changed or deleted"}},
		},
	}
	for cname, tc := range cases {
		t.Run(cname, func(t *testing.T) {
			out := render(t, remoteSpec(), Observed{})
			foreign := NotAdopted(out.Objects, tc.observed)
			foreign = slices.DeleteFunc(foreign, func(m string) bool { return strings.HasPrefix(m, "namespace ") })
			p, _, _ := unstructured.NestedSlice(find(out, key).Object.(*unstructured.Unstructured).Object, "spec", "managementPolicies")
			if diff := cmp.Diff(tc.want, want{policies: p, foreign: foreign}, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNotAdopted(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
