package controlplane

import (
	"context"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// fieldOwner is the server-side apply field manager of everything the
// control plane applies.
const fieldOwner = "armada-controlplane"

// apply server-side applies objs, a few at a time, forcing ownership.
func (c *ControlPlane) apply(ctx context.Context, objs ...*unstructured.Unstructured) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, o := range objs {
		g.Go(func() error {
			err := c.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(fieldOwner), client.ForceOwnership)
			return errors.Wrapf(err, "cannot apply %s %s", o.GetKind(), o.GetName())
		})
	}
	return g.Wait()
}
