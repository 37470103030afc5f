package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestXRDSchemasAcceptedAsCRDs runs the API server's own validation of a
// new CustomResourceDefinition (structural schema, CEL compilation and
// its estimated cost budget) on each XRD version's schema, as the CRD
// Crossplane generates from it will carry it. crossplane resource
// validate does not estimate CEL cost: a rule over an unbounded map passed
// it and the render goldens, and the API server refused the claim's CRD.
func TestXRDSchemasAcceptedAsCRDs(t *testing.T) {
	s := runtime.NewScheme()
	if err := extv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"definition.yaml", "namespaced-definition.yaml", "queue-definition.yaml", "namespaced-queue-definition.yaml"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, "package", "xarmada", file))
			if err != nil {
				t.Fatal(err)
			}
			var xrd struct {
				Spec struct {
					Group    string                              `json:"group"`
					Names    extv1.CustomResourceDefinitionNames `json:"names"`
					Versions []struct {
						Name   string `json:"name"`
						Schema struct {
							OpenAPIV3Schema extv1.JSONSchemaProps `json:"openAPIV3Schema"`
						} `json:"schema"`
					} `json:"versions"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(b, &xrd); err != nil {
				t.Fatal(err)
			}
			names := xrd.Spec.Names
			names.Singular, names.ListKind = strings.ToLower(names.Kind), names.Kind+"List"
			crd := &extv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: names.Plural + "." + xrd.Spec.Group},
				Spec:       extv1.CustomResourceDefinitionSpec{Group: xrd.Spec.Group, Names: names, Scope: extv1.ClusterScoped},
			}
			for i, v := range xrd.Spec.Versions {
				schema := v.Schema.OpenAPIV3Schema
				crd.Spec.Versions = append(crd.Spec.Versions, extv1.CustomResourceDefinitionVersion{
					Name: v.Name, Served: true, Storage: i == 0,
					Schema: &extv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
				})
			}
			crd.Status.StoredVersions = []string{xrd.Spec.Versions[0].Name}
			var internal apiextensions.CustomResourceDefinition
			if err := s.Convert(crd, &internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
				t.Errorf("%s: the API server would refuse its CRD:\n%v", file, errs.ToAggregate())
			}
		})
	}
}
