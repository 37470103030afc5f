package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOwnPort(t *testing.T) {
	type want struct {
		target string
		ok     bool
	}
	cases := map[string]struct {
		reason    string
		authority string
		want      want
	}{
		"NoHost": {
			reason:    "A process dialing :port dials its own port, on loopback.",
			authority: ":50052",
			want:      want{target: "127.0.0.1:50052", ok: true},
		},
		"OtherHost": {
			reason:    "A named host is routed (or refused) by the proxy's routes, not reached here.",
			authority: "armada-server.armada.svc:50051",
		},
		"NoPort": {
			reason:    "An authority without a port is not a port of the process.",
			authority: "armada-server",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			target, ok := ownPort(tc.authority)
			if diff := cmp.Diff(tc.want, want{target: target, ok: ok}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nownPort(%q): -want, +got:\n%s", tc.reason, tc.authority, diff)
			}
		})
	}
}
