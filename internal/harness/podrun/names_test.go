package podrun

import (
	"io"
	"net"
	"testing"
	"time"

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
