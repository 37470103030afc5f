package armada

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestOwnedConfigKeys checks a user's config override cannot change a key
// the composition sets, except the supported ones, and can set any other.
func TestOwnedConfigKeys(t *testing.T) {
	cases := map[string]struct {
		set  func(*v1alpha1.ArmadaSpec, *runtime.RawExtension)
		cfg  map[string]any
		want string // a substring of the error; empty means accepted
	}{
		"Port": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg:  map[string]any{"grpcPort": 1234},
			want: "spec.components.server.config.grpcPort: Forbidden: the composition sets Armada's grpcport from the component table",
		},
		"PortInAnotherCase": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg:  map[string]any{"GRPCPORT": 1234},
			want: "spec.components.server.config.GRPCPORT: Forbidden",
		},
		"DatabaseConnection": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Scheduler.Config = r },
			cfg:  map[string]any{"postgres": map[string]any{"connection": map[string]any{"host": "elsewhere"}}},
			want: "spec.components.scheduler.config.postgres.connection.host: Forbidden: the composition sets Armada's postgres.connection.host from spec.postgres",
		},
		"RemovingAuth": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Scheduler.Config = r },
			cfg:  map[string]any{"auth": nil},
			want: "spec.components.scheduler.config.auth: Forbidden: the composition sets Armada's auth from spec.auth",
		},
		"ReplacingAnObject": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg:  map[string]any{"pulsar": "pulsar://x:6650"},
			want: "spec.components.server.config.pulsar: Forbidden: the composition sets Armada's pulsar from spec.pulsar",
		},
		"PerExecutor": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) {
				s.Executors = []v1alpha1.Executor{{ClusterID: "a", Pool: "default"}, {ClusterID: "b", Pool: "default", Config: r}}
			},
			cfg:  map[string]any{"application": map[string]any{"clusterId": "c"}},
			want: "spec.executors[1].config.application.clusterId: Forbidden: the composition sets Armada's application.clusterid from spec.executors[]",
		},
		"TLS": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Scheduler.Config = r },
			cfg:  map[string]any{"grpc": map[string]any{"tls": map[string]any{"enabled": false}}},
			want: "spec.components.scheduler.config.grpc.tls.enabled: Forbidden: the composition sets Armada's grpc.tls.enabled from spec.tls",
		},
		"LookoutBinocularsURL": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Lookout.Config = r },
			cfg: map[string]any{"uiConfig": map[string]any{"binocularsBaseUrlPattern": "https://binoculars.example.com"}},
		},
		"LookoutTitle": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Lookout.Config = r },
			cfg: map[string]any{"uiConfig": map[string]any{"customTitle": "Batch"}},
		},
		"LookoutAPIURL": {
			set:  func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Lookout.Config = r },
			cfg:  map[string]any{"uiConfig": map[string]any{"armadaApiBaseUrl": "https://api.example.com"}},
			want: "spec.components.lookout.config.uiConfig.armadaApiBaseUrl: Forbidden",
		},
		"TuningBesideOwnedKeys": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Server.Config = r },
			cfg: map[string]any{"pulsar": map[string]any{"maxConnectionsPerBroker": 4}, "submission": map[string]any{"maxPodSpecSizeBytes": 1024}},
		},
		"Supported": {
			set: func(s *v1alpha1.ArmadaSpec, r *runtime.RawExtension) { s.Components.Lookout.Config = r },
			cfg: map[string]any{"corsAllowedOrigins": []any{"https://portal.example.com"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(func(s *v1alpha1.ArmadaSpec) { tc.set(s, rawConfig(t, tc.cfg)) })
			in, errs := New(claimed(s))
			if len(errs) > 0 {
				t.Fatalf("New(...): %v", errs)
			}
			_, err := Render(in, Options{Rand: KeyedRand([]byte("test"), "xr")})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Render(...): %v, want it accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Render(...): %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
