package simulate

import (
	"context"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Ref names one object.
type Ref struct{ APIVersion, Kind, Namespace, Name string }

// RefsOf returns the composed resource references of an XR.
func RefsOf(xr *unstructured.Unstructured) []Ref {
	raw, _, _ := unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	refs := make([]Ref, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		refs = append(refs, Ref{s("apiVersion"), s("kind"), s("namespace"), s("name")})
	}
	return refs
}

// MarkHealthy writes the status HealthyStatus gives to each referenced
// object that has one. provider-kubernetes Objects are left to
// provider-kubernetes, which runs: the manifest each wraps (a CloudNativePG
// Cluster) is marked instead, and provider-kubernetes derives the Object's
// readiness from it. Objects that are gone, or changed meanwhile, are
// skipped; the caller's next round tries again.
func MarkHealthy(ctx context.Context, c client.Client, refs []Ref) error {
	all := append([]Ref(nil), refs...)
	for _, r := range refs {
		if r.Kind != kindObject {
			continue
		}
		u, err := get(ctx, c, r)
		if err != nil || u == nil {
			continue
		}
		m, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider", "manifest")
		w := &unstructured.Unstructured{Object: m}
		all = append(all, Ref{w.GetAPIVersion(), w.GetKind(), w.GetNamespace(), w.GetName()})
	}
	for _, r := range all {
		if r.Kind == kindObject {
			continue
		}
		u, err := get(ctx, c, r)
		if err != nil {
			return err
		}
		if u == nil {
			continue
		}
		status, ok := HealthyStatus(u, time.Now())
		if !ok {
			continue
		}
		u.Object["status"] = status
		if err := c.Status().Update(ctx, u); err != nil && !kerrors.IsConflict(err) && !kerrors.IsNotFound(err) {
			return errors.Wrapf(err, "cannot mark %s %s healthy", r.Kind, r.Name)
		}
	}
	return nil
}

// get reads r, nil if it does not exist.
func get(ctx context.Context, c client.Client, r Ref) (*unstructured.Unstructured, error) {
	u, err := testutil.Lookup(ctx, c, r.APIVersion, r.Kind, r.Namespace, r.Name)
	return u, errors.Wrapf(err, "cannot get %s %s", r.Kind, r.Name)
}
