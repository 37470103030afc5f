package podrun

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TestRelayPassesTheEndOn checks a Service relay passes each side's end
// of a connection on to the other, as a Service's NAT does: a killed
// pod's connection must end at the server too.
func TestRelayPassesTheEndOn(t *testing.T) {
	cases := map[string]struct {
		reason string
		// closeServer ends the connection from the server's side;
		// otherwise the client ends it.
		closeServer bool
	}{
		"ClientEnds": {reason: "A client that exits (a killed pod) ends its connection at the server."},
		"ServerEnds": {reason: "A server that closes ends the connection at the client.", closeServer: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			server, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = server.Close() }()
			lis, err := startRelay("127.0.0.1:0", server.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = lis.Close() }()
			client, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", lis.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = client.Close() }()
			if _, err := client.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			up, err := server.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = up.Close() }()
			got := make([]byte, 4)
			if _, err := io.ReadFull(up, got); err != nil || string(got) != "ping" {
				t.Fatalf("server read %q, %v; want \"ping\" relayed", got, err)
			}
			closing, other := client, up
			if tc.closeServer {
				closing, other = up, client
			}
			_ = closing.Close()
			_ = other.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := other.Read(got); !errors.Is(err, io.EOF) {
				t.Errorf("%s\nthe other side read %d bytes, %v after the close; want io.EOF at once", tc.reason, n, err)
			}
		})
	}
}

// TestNamesClaimBlocks checks that two Names never hand out the same
// address, even when their random blocks coincide: each hands out
// addresses only of a block it has claimed.
func TestNamesClaimBlocks(t *testing.T) {
	cases := map[string]struct {
		reason string
		// held are blocks (B, C) another Names holds.
		held [][2]int
		// picks are the blocks the Names under test draws, in turn.
		picks [][2]int
		// hand is how many addresses it hands out.
		hand int
		// want are the first and last addresses it hands out.
		want    [2]string
		wantErr bool
	}{
		"FreeBlock": {
			reason: "A block no one holds is the Names' own.",
			picks:  [][2]int{{50, 7}},
			hand:   2,
			want:   [2]string{"127.50.7.1", "127.50.7.2"},
		},
		"HeldBlockSkipped": {
			reason: "A block another Names holds is skipped for the next one drawn.",
			held:   [][2]int{{50, 7}},
			picks:  [][2]int{{50, 7}, {60, 9}},
			hand:   1,
			want:   [2]string{"127.60.9.1", "127.60.9.1"},
		},
		"FullBlockMovesOn": {
			reason: "Past a block's 250 addresses the Names claims another, skipping held ones.",
			held:   [][2]int{{50, 8}},
			picks:  [][2]int{{50, 7}, {50, 8}, {70, 1}},
			hand:   blockSize + 1,
			want:   [2]string{"127.50.7.1", "127.70.1.1"},
		},
		"EveryBlockHeld": {
			reason:  "When every block drawn is held, the Names says so rather than share one.",
			held:    [][2]int{{50, 7}},
			picks:   [][2]int{{50, 7}},
			hand:    1,
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, h := range tc.held {
				other := newNames(func() (int, int) { return h[0], h[1] })
				if _, err := other.address(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(other.Close)
			}
			i := 0
			n := newNames(func() (int, int) {
				p := tc.picks[min(i, len(tc.picks)-1)]
				i++
				return p[0], p[1]
			})
			t.Cleanup(n.Close)
			var got [2]string
			for k := range tc.hand {
				a, err := n.address()
				if err != nil {
					if !tc.wantErr {
						t.Fatalf("%s\naddress(): %v", tc.reason, err)
					}
					return
				}
				if k == 0 {
					got[0] = a
				}
				got[1] = a
			}
			if tc.wantErr {
				t.Fatalf("%s\naddress(): want an error, got %v", tc.reason, got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\naddresses (first, last): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
