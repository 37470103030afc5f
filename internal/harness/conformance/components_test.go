package conformance

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

func TestMarkers(t *testing.T) {
	rn := &Run{Inv: &podrun.Invocation{}, Cfg: &armadaConfig{Base: map[string]any{"pulsar": map[string]any{"URL": "pulsar://pulsar.armada.svc:6650"}}}}
	noHost := &Run{Inv: &podrun.Invocation{}, Cfg: &armadaConfig{Base: map[string]any{"pulsar": map[string]any{"URL": "not a url"}}}}
	moved := map[string]int{"metricsPort": 20001}
	cases := map[string]struct {
		reason    string
		templates []string
		rn        *Run
		log       string
		want      bool
		err       string
	}{
		"PortMoved": {
			reason:    "{port:KEY} is the port KEY moved to, as a whole number.",
			templates: []string{`listening on {port:metricsPort}`},
			log:       "Starting http server listening on 20001\n",
			want:      true,
		},
		"PortPrefixOnly": {
			reason:    "A longer port that starts with the moved one does not match.",
			templates: []string{`listening on {port:metricsPort}`},
			log:       "Starting http server listening on 200011\n",
		},
		"PulsarHost": {
			reason:    "{pulsar} is a connection to the host of the effective pulsar.URL.",
			templates: []string{`{pulsar}`},
			log:       `INFO Connecting to broker remote_addr={"Scheme":"pulsar","Host":"pulsar.armada.svc:6650"}` + "\n",
			want:      true,
		},
		"PulsarOtherHost": {
			reason:    "A connection to another broker is not the rendered one.",
			templates: []string{`{pulsar}`},
			log:       `INFO Connecting to broker remote_addr={"Scheme":"pulsar","Host":"elsewhere:6650"}` + "\n",
		},
		"KubeInOrder": {
			reason:    "{kube} is a failed list against the fake API server; markers match in order.",
			templates: []string{`Running with default client configuration`, `{kube}`},
			log:       "Running with default client configuration\nfailed to list *v1.Pod: Get \"https://127.0.0.1:30000/api/v1/pods\"\n",
			want:      true,
		},
		"OutOfOrder": {
			reason:    "Markers that appear in the other order do not match.",
			templates: []string{`{kube}`, `Running with default client configuration`},
			log:       "Running with default client configuration\nfailed to list *v1.Pod: Get \"https://127.0.0.1:30000/api/v1/pods\"\n",
		},
		"PortNotSet": {
			reason:    "A marker naming a port key the config does not set is an error.",
			templates: []string{`listening on {port:grpcPort}`},
			err:       `marker "listening on {port:grpcPort}" names a port the loaded config files do not set`,
		},
		"PulsarNoHost": {
			reason:    "{pulsar} with an effective pulsar.URL without a host is an error.",
			templates: []string{`{pulsar}`},
			rn:        noHost,
			err:       `the effective pulsar.URL "not a url" has no host`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := rn
			if tc.rn != nil {
				r = tc.rn
			}
			res, err := markers(tc.templates, r, moved, 30000)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.err, got); diff != "" {
				t.Fatalf("%s\nmarkers(...) error: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, inOrder(tc.log, res)); err == nil && diff != "" {
				t.Errorf("%s\ninOrder(%q, %v): -want, +got:\n%s", tc.reason, tc.log, res, diff)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	cases := map[string]struct {
		log  string
		want string
	}{
		"First":  {log: "INFO a\n  WARN Forbidden one \nWARN forbidden two", want: "WARN Forbidden one"},
		"NoLine": {log: "INFO a\nINFO b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, firstLine(tc.log, regexp.MustCompile(`(?i)\bforbidden\b`))); diff != "" {
				t.Errorf("firstLine(%q): -want, +got:\n%s", tc.log, diff)
			}
		})
	}
}
