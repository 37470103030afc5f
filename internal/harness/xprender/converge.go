package xprender

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// Step is one render of a convergence.
type Step struct {
	// Output is the render's YAML.
	Output []byte
	// Composed are the composed resources in it.
	Composed []map[string]any
}

// Converge renders opt.XR repeatedly, feeding each render's composed
// resources back as observed state, as a cluster would report them once
// pods run: Jobs complete and workloads available. It stops when a render
// repeats the previous one (converged) or after maxSteps renders.
func (t Tools) Converge(ctx context.Context, opt RenderOptions, maxSteps int) ([]Step, error) {
	dir, err := os.MkdirTemp("", "xpconverge-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create temporary directory")
	}
	defer os.RemoveAll(dir) //nolint:errcheck // Best effort cleanup of a temp dir.

	var steps []Step
	for i := range maxSteps {
		if i > 0 {
			opt.Observed = dir
		}
		out, err := t.Render(ctx, opt)
		if err != nil {
			return steps, errors.Wrapf(err, "cannot render step %d", i+1)
		}
		docs, err := manifest.Split(out)
		if err != nil {
			return steps, err
		}
		s := Step{Output: out, Composed: Composed(docs)}
		if len(steps) > 0 && bytes.Equal(steps[len(steps)-1].Output, out) {
			return steps, nil
		}
		steps = append(steps, s)
		if err := WriteObserved(dir, s.Composed); err != nil {
			return steps, err
		}
	}
	return steps, errors.Errorf("cannot converge within %d renders", maxSteps)
}

// Composed returns the composed resources of a render output: everything
// but the XR (the first document) and render results.
func Composed(docs []map[string]any) []map[string]any {
	var out []map[string]any
	for i, d := range docs {
		if i == 0 || d["apiVersion"] == "render.crossplane.io/v1beta1" {
			continue
		}
		out = append(out, d)
	}
	return out
}

// WriteObserved replaces dir's content with the composed resources as a
// cluster would report them once their pods run.
func WriteObserved(dir string, composed []map[string]any) error {
	old, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return errors.Wrap(err, "cannot list observed resources")
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return errors.Wrap(err, "cannot remove observed resource")
		}
	}
	for i, obj := range composed {
		simulate.AsCreated(&unstructured.Unstructured{Object: obj}, time.Time{})
		b, err := yaml.Marshal(obj)
		if err != nil {
			return errors.Wrap(err, "cannot encode observed resource")
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.yaml", i)), b, 0o600); err != nil {
			return errors.Wrap(err, "cannot write observed resource")
		}
	}
	return nil
}
