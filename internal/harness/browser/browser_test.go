package browser

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseCommandLine proves ParseCommandLine reads back what
// CommandLine writes: the hosts (not the catch-all rules), the trusted
// certificates and the URL; and refuses a line without resolver rules.
func TestParseCommandLine(t *testing.T) {
	type want struct {
		Hosts map[string]string
		SPKIs []string
		URL   string
		Err   bool
	}
	o := Options{
		Hosts: map[string]string{"armada-lookout.armada.svc": "127.0.0.5", "login.oidc.test": "127.0.0.9"},
		SPKIs: []string{"a+b/c=", "d="},
	}
	cases := map[string]struct {
		reason string
		line   string
		want   want
	}{
		"RoundTrip": {
			reason: "What CommandLine prints reads back as its options and URL.",
			line:   "$ " + CommandLine(o, "https://armada-lookout.armada.svc:8080"),
			want:   want{Hosts: o.Hosts, SPKIs: o.SPKIs, URL: "https://armada-lookout.armada.svc:8080"},
		},
		"NoRules": {
			reason: "A line that is not CommandLine's is refused.",
			line:   Chromium + " https://example.com",
			want:   want{Hosts: map[string]string{}, Err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, u, err := ParseCommandLine(tc.line)
			if diff := cmp.Diff(tc.want, want{Hosts: got.Hosts, SPKIs: got.SPKIs, URL: u, Err: err != nil}); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
