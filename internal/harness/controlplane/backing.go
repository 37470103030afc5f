package controlplane

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
)

// backingServiceCRDs are the CRDs of the pinned providers and operators
// other than provider-kubernetes, read from their Go modules (or, for
// prometheus-operator, generated from its pinned types), so that the
// monitoring objects apply too. No
// controller runs for them here: the API server validates the objects the
// function composes, and tests report their status as the provider would.
func backingServiceCRDs(ctx context.Context) ([]*unstructured.Unstructured, error) {
	var crds []*unstructured.Unstructured
	for _, p := range thirdparty.Pinned {
		if p.Name == "provider-kubernetes" {
			continue
		}
		d, err := p.CRDPath(ctx)
		if err != nil {
			return nil, err
		}
		objs, err := manifest.ReadDir(d)
		if err != nil {
			return nil, err
		}
		crds = append(crds, objs...)
	}
	return crds, nil
}
