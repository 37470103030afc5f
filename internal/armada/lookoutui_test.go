package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestLookoutUIConfig proves what the composed Lookout tells the browser
// and what the servers the page calls allow: the server's REST URL and
// binoculars' URL as a user reaches them (HTTPS with spec.tls, the Ingress
// hosts with spec.ingress, which is not covered here: binoculars has no
// Ingress host yet), a title naming the Armada, Armada's own
// commandSpecs (not overridden: they name the run's cluster and the job's
// namespace), and Lookout's origin, alone, allowed by the server, Lookout
// and binoculars. test/jobflow's TestLookoutUI opens it in Chromium.
func TestLookoutUIConfig(t *testing.T) {
	type view struct {
		APIBaseURL, BinocularsURL, Title, Commands any
		Origins                                    map[string]any
	}
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   view
	}{
		"TLS": {
			reason: "TLS on (the default): every URL the page calls is HTTPS, at the Service names.",
			spec:   spec(withTLS),
			want: view{
				APIBaseURL: "https://armada-server.armada.svc:8080", BinocularsURL: "https://armada-binoculars.armada.svc:8080",
				Title: "Armada armada/armada",
				Origins: map[string]any{
					"server": []any{"https://armada-lookout.armada.svc:8080"}, "lookout": []any{"https://armada-lookout.armada.svc:8080"},
					"binoculars": []any{"https://armada-lookout.armada.svc:8080"},
				},
			},
		},
		"TLSOff": {
			reason: "TLS off: the same URLs over plain HTTP.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(false)} }),
			want: view{
				APIBaseURL: "http://armada-server.armada.svc:8080", BinocularsURL: "http://armada-binoculars.armada.svc:8080",
				Title: "Armada armada/armada",
				Origins: map[string]any{
					"server": []any{"http://armada-lookout.armada.svc:8080"}, "lookout": []any{"http://armada-lookout.armada.svc:8080"},
					"binoculars": []any{"http://armada-lookout.armada.svc:8080"},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLS(t, tc.spec, "k", nil, tlsCreated)
			lookout := componentCfg(t, out, "lookout")
			got := view{
				APIBaseURL:    get(lookout, "uiConfig", "armadaApiBaseUrl"),
				BinocularsURL: get(lookout, "uiConfig", "binocularsBaseUrlPattern"),
				Title:         get(lookout, "uiConfig", "customTitle"),
				Commands:      get(lookout, "uiConfig", "commandSpecs"),
				Origins:       map[string]any{},
			}
			for _, c := range []string{"server", "lookout", "binoculars"} {
				got.Origins[c] = get(componentCfg(t, out, c), "corsAllowedOrigins")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
