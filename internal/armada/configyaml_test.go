package armada

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	yamlfile "github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// TestConfigsEncodeAsSigsYAML checks that every config generated for every
// example is written by structenc's one-pass encoder, byte for byte as
// sigs.k8s.io/yaml writes it.
func TestConfigsEncodeAsSigsYAML(t *testing.T) {
	paths, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	checked := 0
	for _, path := range paths {
		for _, spec := range exampleSpecs(t, path) {
			in, errs := New(claimed(spec))
			if len(errs) > 0 {
				t.Fatalf("%s: New(...): %v", path, errs)
			}
			configs := map[string]map[string]any{}
			for _, inst := range instances(in) {
				cfg, err := in.componentConfig(inst)
				if err != nil {
					t.Fatalf("%s: componentConfig(%s): %v", path, inst.Name, err)
				}
				configs[inst.Name] = cfg
			}
			for _, m := range migrations {
				configs["migrate-"+m.Name] = migrationConfig(in, m)
			}
			for name, cfg := range configs {
				want, err := yaml.Marshal(cfg)
				if err != nil {
					t.Fatal(err)
				}
				got, err := structenc.MarshalYAML(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s %s: structenc.MarshalYAML(...): -sigs.k8s.io/yaml, +structenc:\n%s", path, name, diff)
				}
				if !structenc.YAMLEncodable(cfg) {
					t.Errorf("%s %s: config needs sigs.k8s.io/yaml, the slow path", path, name)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d configs", checked)
	}
}

// exampleSpecs reads the ArmadaClaims' specs in an example file.
func exampleSpecs(t *testing.T, path string) []v1alpha1.ArmadaSpec {
	t.Helper()
	objs, err := yamlfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var specs []v1alpha1.ArmadaSpec
	for _, u := range objs {
		// Other kinds' specs (an ArmadaTenancyPolicy's) are not decoded.
		if u.GetKind() != "ArmadaClaim" {
			continue
		}
		b, err := json.Marshal(u.Object["spec"])
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var spec v1alpha1.ArmadaSpec
		if err := json.Unmarshal(b, &spec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		specs = append(specs, spec)
	}
	return specs
}

// BenchmarkConfigYAML writes every config of the production example, with
// structenc and with sigs.k8s.io/yaml.
func BenchmarkConfigYAML(b *testing.B) {
	spec := exampleSpecs(&testing.T{}, testutil.Example("production.yaml"))[0]
	in, errs := New(claimed(spec))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	configs := make([]map[string]any, 0, len(instances(in))+len(migrations))
	for _, inst := range instances(in) {
		cfg, err := in.componentConfig(inst)
		if err != nil {
			b.Fatal(err)
		}
		configs = append(configs, cfg)
	}
	for _, m := range migrations {
		configs = append(configs, migrationConfig(in, m))
	}
	for name, marshal := range map[string]func(map[string]any) ([]byte, error){
		"structenc": structenc.MarshalYAML,
		"sigs":      func(m map[string]any) ([]byte, error) { return yaml.Marshal(m) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, c := range configs {
					out, err := marshal(c)
					if err != nil {
						b.Fatal(err)
					}
					n += len(out)
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "bytes/op")
		})
	}
}
