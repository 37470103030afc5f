package conformance

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// names resolves the in-cluster (or external) host names rendered configs
// dial to loopback addresses, below the config: each Armada process runs
// in its own root (see podRoot) whose /etc/hosts maps those names to
// addresses in 127.0.0.0/8, where the test listens on the rendered ports.
// The configs keep their hosts and ports byte for byte; what stands in is
// the Service's virtual IP (kube-proxy): a relay that forwards a
// Postgres, Redis or Pulsar address to the private server or broker.
//
// Every 127.0.0.0/8 address is local on Linux without configuration, so
// each name gets its own address and the rendered ports (5432, 6379,
// 6650) never collide with each other, with other tests' servers on
// 127.0.0.1, or with the machine's.
type names struct {
	// prefix is 127.B. for a B chosen per example, so concurrent test
	// processes are unlikely to share addresses.
	prefix string

	mu   sync.Mutex
	next int
	// shared maps a host to its address, for names every process of the
	// example resolves alike (Postgres, Redis).
	shared map[string]string
	// relays are the address:port relays started, to their targets.
	relays map[string]string
}

func newNames(t *testing.T) *names {
	t.Helper()
	return &names{
		prefix: "127." + strconv.Itoa(10+rand.IntN(240)) + ".", //nolint:gosec // Not security-sensitive.
		shared: map[string]string{},
		relays: map[string]string{},
	}
}

// address hands out a fresh loopback address.
func (n *names) address() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	return n.prefix + strconv.Itoa(n.next/250) + "." + strconv.Itoa(1+n.next%250)
}

// Relay makes addr (host:port) reach target. A host given as an IP
// address, which no hosts file maps, fails the test.
func (n *names) Relay(t *testing.T, addr, target string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		t.Fatalf("the far end %q is not a host name and port; the test resolves names only", addr)
	}
	n.mu.Lock()
	ip, ok := n.shared[host]
	n.mu.Unlock()
	if !ok {
		ip = n.address()
		n.mu.Lock()
		n.shared[host] = ip
		n.mu.Unlock()
	}
	at := net.JoinHostPort(ip, port)
	n.mu.Lock()
	old, started := n.relays[at]
	n.relays[at] = target
	n.mu.Unlock()
	switch {
	case !started:
		startRelay(t, at, target)
	case old != target:
		t.Fatalf("%s is relayed to %s and cannot also reach %s", addr, old, target)
	}
}

// HostsFile writes a hosts file with the shared names and own (names only
// this process resolves this way) and returns its path.
func (n *names) HostsFile(dir string, own map[string]string) (string, error) {
	n.mu.Lock()
	all := map[string]string{}
	maps.Copy(all, n.shared)
	n.mu.Unlock()
	maps.Copy(all, own)
	hosts := make([]string, 0, len(all))
	for h := range all {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "%s %s\n", all[h], h)
	}
	p := filepath.Join(dir, "hosts")
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// startRelay forwards every connection to addr to target, byte for byte.
func startRelay(t *testing.T, addr, target string) {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("cannot listen on %s, standing in for a Service: %v", addr, err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go relay(conn, target)
		}
	}()
}

func relay(conn net.Conn, target string) {
	defer func() { _ = conn.Close() }()
	up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", target)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	go func() { _, _ = io.Copy(up, conn) }()
	_, _ = io.Copy(conn, up)
}

// serveFarEnds makes the example's Postgres, Redis and Pulsar far ends
// reach the private servers and the real broker through their names, for
// every process alike. Pulsar's lookups then send clients to the broker's
// advertised address, 127.0.0.1, as a real broker's send them to its pod.
func serveFarEnds(t *testing.T, svc *services, f farEnds) {
	t.Helper()
	for _, a := range f.Postgres {
		svc.Names.Relay(t, a, net.JoinHostPort(svc.PG.Host, strconv.Itoa(svc.PG.Port)))
	}
	for _, a := range f.Redis {
		svc.Names.Relay(t, a, svc.Redis.Addr())
	}
	svc.PulsarAt = f.Pulsar
	if f.Pulsar != "" && svc.Pulsar != nil {
		svc.Names.Relay(t, f.Pulsar, brokerAddr(svc.Pulsar))
	}
}

// resolveNames writes rn's hosts file.
func resolveNames(t *testing.T, svc *services, rn *run) {
	t.Helper()
	hosts, err := svc.Names.HostsFile(rn.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	rn.HostsFile = hosts
}
