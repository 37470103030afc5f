package armada

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

func rawConfig(t *testing.T, v map[string]any) *runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: b}
}

// TestConfigOverrideKeys checks a config override is refused, naming the
// field, exactly when Armada's component does not read one of its keys.
func TestConfigOverrideKeys(t *testing.T) {
	cases := map[string]struct {
		set func(*v1alpha1.ArmadaSpec, *runtime.RawExtension)
		cfg map[string]any
		// errs is how many errors; want are substrings of them.
		errs int
		want []string
	}{
		"DeepKeyAccepted": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Scheduler.Config = r },
			cfg: map[string]any{"scheduling": map[string]any{"maximumSchedulingRate": 200.0, "maxRetries": 3}},
		},
		"MapAndListKeysAccepted": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Scheduler.Config = r },
			cfg: map[string]any{"scheduling": map[string]any{
				"priorityClasses": map[string]any{"anything": map[string]any{"priority": 5, "preemptible": true}},
				"pools":           []any{map[string]any{"name": "cpu"}},
			}},
		},
		"KeysMatchInAnyCase": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg: map[string]any{"Submission": map[string]any{"MAXPODSPECSIZEBYTES": 1024}},
		},
		"Misspelt": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg:  map[string]any{"submission": map[string]any{"maxPodSpecSizeByte": 1024}},
			errs: 1,
			want: []string{`spec.components.server.config.submission.maxPodSpecSizeByte: Invalid value: "maxPodSpecSizeByte": ` +
				`Armada ` + DefaultVersion + `'s server has no config key "submission.maxPodSpecSizeByte" (did you mean "maxPodSpecSizeBytes"?)`},
		},
		"AnotherComponentsKey": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg:  map[string]any{"cyclePeriod": "1s"},
			errs: 1,
			want: []string{`spec.components.server.config.cyclePeriod`, `the scheduler reads it: set it under spec.components.scheduler.config`},
		},
		"InsideAList": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Scheduler.Config = r },
			cfg:  map[string]any{"scheduling": map[string]any{"pools": []any{map[string]any{"name": "cpu", "poolName": "x"}}}},
			errs: 1,
			want: []string{`spec.components.scheduler.config.scheduling.pools[0].poolName`},
		},
		"ObjectForASingleValue": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg:  map[string]any{"grpcPort": map[string]any{"port": 1}},
			errs: 1,
			want: []string{`spec.components.server.config.grpcPort: Invalid value: "{...}": Armada's "grpcPort" is a single value, not an object`},
		},
		"EveryUnknownKey": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Lookout.Config = r },
			cfg:  map[string]any{"a": 1, "b": map[string]any{"c": 2}},
			errs: 2,
			want: []string{"spec.components.lookout.config.a", "spec.components.lookout.config.b"},
		},
		"PerExecutor": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) {
				s.Executors = []v1alpha1.Executor{{ClusterID: "a", Pool: "default", Config: r}}
			},
			cfg:  map[string]any{"kubernetes": map[string]any{"trackedNodeLabel": []any{"x"}}},
			errs: 1,
			want: []string{`spec.executors[0].config.kubernetes.trackedNodeLabel`, `did you mean "trackedNodeLabels"?`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(func(s *v1alpha1.ArmadaSpec) { tc.set(s, rawConfig(t, tc.cfg)) })
			_, errs := New(claimed(s))
			if len(errs) != tc.errs {
				t.Fatalf("New(...): got %d errors, want %d: %v", len(errs), tc.errs, errs)
			}
			got := errs.ToAggregate()
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("New(...): %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

// TestComposedConfigKeys renders every example at every supported Armada
// version and checks Armada's component reads every key the function
// composes. A setting that needs a newer Armada is refused instead.
func TestComposedConfigKeys(t *testing.T) {
	paths, err := filepath.Glob(testutil.Example("*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	checked, refused := 0, 0
	for _, path := range paths {
		for _, s := range exampleSpecs(t, path) {
			for _, v := range SupportedVersions {
				s.Version = v
				in, errs := New(claimed(s))
				if len(errs) > 0 {
					t.Fatalf("%s at %s: New(...): %v", path, v, errs)
				}
				for _, inst := range instances(in) {
					cfg, err := in.componentConfig(inst)
					if err != nil {
						if !strings.Contains(err.Error(), "which this claim's settings need") {
							t.Errorf("%s at %s: componentConfig(%s): %v", path, v, inst.Name, err)
						}
						refused++
						continue
					}
					if errs := checkConfigKeys(nil, v, inst.component.Name, cfg); len(errs) > 0 {
						t.Errorf("%s at %s: %s: %v", path, v, inst.Name, errs)
					}
					checked++
				}
			}
		}
	}
	if checked < 50*len(SupportedVersions)/2 {
		t.Errorf("checked only %d configs", checked)
	}
	t.Logf("%d composed configs read in full by Armada, %d refused as needing a newer Armada", checked, refused)
}

// TestSettingNeedsNewerArmada: 0.22.6's scheduler has no per-pool job
// defaults, which an executor's nodeTaint needs.
func TestSettingNeedsNewerArmada(t *testing.T) {
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Version = "0.22.6"
		s.Executors = []v1alpha1.Executor{{ClusterID: "a", Pool: "default", NodeTaint: &v1alpha1.NodeTaint{Key: "team"}}}
	})
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	_, err := Render(in, Options{Rand: KeyedRand([]byte("test"), "xr")})
	want := "Armada 0.22.6's scheduler does not read scheduling.pools[0].jobDefaults, which this claim's settings need"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Render(...): %v, want an error containing %q", err, want)
	}
}

// TestConfigKeysForEveryVersion: every supported version has its keys.
func TestConfigKeysForEveryVersion(t *testing.T) {
	var missing []string
	for _, v := range SupportedVersions {
		for name := range ConfigTypes() {
			if _, err := configKeysFor(v, name); err != nil {
				missing = append(missing, v+"/"+name)
			}
		}
	}
	slices.Sort(missing)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("versions and components without config keys: %s", diff)
	}
}
