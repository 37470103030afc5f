package docscheck

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	nsv1alpha1 "github.com/armadaproject/armada-crossplane/apis/namespaced/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// TestDocsArmadasRender checks that every ArmadaClaim and namespaced
// Armada in a YAML block of README.md and docs/ is accepted by the
// function too, not only by the schema: its spec decodes with no unknown
// field, passes the function's validation (what the schema cannot
// express) and renders.
func TestDocsArmadasRender(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		for _, b := range p.Blocks {
			if b.Lang != "yaml" && b.Lang != "yml" {
				continue
			}
			docs, err := objects(b.Text)
			if err != nil {
				continue // TestDocsYAML reports it.
			}
			for _, d := range docs {
				xr, ok, err := armadaXR(d)
				if err != nil {
					t.Errorf("%s:%d: %v", p.Path, b.Line, err)
					continue
				}
				if !ok {
					continue
				}
				n++
				in, errs := armada.New(xr)
				if len(errs) > 0 {
					t.Errorf("%s:%d: the function refuses the Armada: %v", p.Path, b.Line, errs.ToAggregate())
					continue
				}
				if _, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("docs"), xr.Name)}); err != nil {
					t.Errorf("%s:%d: the Armada does not render: %v", p.Path, b.Line, err)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no ArmadaClaim or Armada found in any YAML block: the parser is broken")
	}
	t.Logf("%d Armadas rendered", n)
}

// armadaXR reads an ArmadaClaim or a namespaced Armada as the function
// sees its XR; ok is false for other kinds.
func armadaXR(doc string) (armada.XR, bool, error) {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return armada.XR{}, false, err
	}
	if head.Kind != "ArmadaClaim" && head.Kind != "Armada" {
		return armada.XR{}, false, nil
	}
	var obj struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Metadata   map[string]any        `json:"metadata"`
		Spec       nsv1alpha1.ArmadaSpec `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(doc), &obj); err != nil {
		return armada.XR{}, false, errors.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
	}
	if head.Kind == "Armada" {
		xr := armada.XR{Name: head.Metadata.Name, Namespace: head.Metadata.Namespace, Spec: obj.Spec.ArmadaSpec}
		if obj.Spec.ClusterScope != nil {
			xr.ClusterScope = &obj.Spec.ClusterScope.ProviderConfigRef
		}
		return xr, true, nil
	}
	if obj.Spec.ClusterScope != nil {
		return armada.XR{}, false, errors.Errorf("ArmadaClaim %s: spec.clusterScope is only for a namespaced Armada", head.Metadata.Name)
	}
	return armada.XR{
		Name: head.Metadata.Name + "-docs",
		Labels: map[string]string{
			"crossplane.io/claim-name": head.Metadata.Name, "crossplane.io/claim-namespace": head.Metadata.Namespace,
		},
		Spec: obj.Spec.ArmadaSpec,
	}, true, nil
}
