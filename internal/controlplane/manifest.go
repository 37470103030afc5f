package controlplane

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// fieldOwner is the server-side apply field manager of everything the
// control plane applies.
const fieldOwner = "armada-controlplane"

// readManifests reads every object in a multi-document YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path) //nolint:gosec // Paths come from the control plane's options.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", path)
	}
	d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, errors.Wrapf(err, "cannot decode %s", path)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
}

// readManifestDir reads every object in the *.yaml files of dir, in file
// name order.
func readManifestDir(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list %s", dir)
	}
	if len(files) == 0 {
		return nil, errors.Errorf("cannot find manifests: %s has no *.yaml files", dir)
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		o, err := readManifests(f)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

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
