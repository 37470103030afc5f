package podrun

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Names resolves the in-cluster (or external) host names composed configs
// dial to loopback addresses, below the config: each Armada process runs
// in its own root (see PodCommand) whose /etc/hosts maps those names to
// addresses in 127.0.0.0/8, where the test listens on the rendered ports. The configs keep their hosts and ports byte for byte; what
// stands in is the Service's virtual IP (kube-proxy): a relay that
// forwards a Postgres or Redis address to the private server, or the
// test's Pulsar broker listener.
//
// Every 127.0.0.0/8 address is local on Linux without configuration, so
// each name gets its own address and the rendered ports (5432, 6379,
// 6650) never collide with each other, with other tests' servers on
// 127.0.0.1, or with the machine's.
type Names struct {
	// pick chooses a block 127.B.C. at random: B and C.
	pick func() (int, int)

	mu sync.Mutex
	// prefix is the block addresses are handed out of now, 127.B.C.,
	// claimed for this Names (claimBlock); next is how many of its
	// addresses are handed out.
	prefix string
	next   int
	// claims hold this Names' blocks against every other Names on the
	// machine, in this process or another.
	claims []net.Listener
	// shared maps a host to its address, for names every process of the
	// example resolves alike (Postgres, Redis).
	shared map[string]string
	// relays are the address:port relays started, to their targets.
	relays map[string]string
	// listeners are the relays' listeners, closed by Close.
	listeners []net.Listener
}

const (
	// blockSize is how many addresses of a block Names hands out:
	// 127.B.C.1 to 127.B.C.250.
	blockSize = 250
	// claimAttempts is how many random blocks claimBlock tries.
	claimAttempts = 100
)

// NewNames returns Names whose addresses come from blocks 127.B.C.0/24
// chosen at random and claimed for it alone, so that concurrent tests,
// in this process or another, never share an address (a random block
// alone was seen shared: a relay's address already in use by another
// suite's).
func NewNames() *Names {
	return newNames(func() (int, int) {
		return 10 + rand.IntN(240), rand.IntN(256) //nolint:gosec // Not security-sensitive.
	})
}

func newNames(pick func() (int, int)) *Names {
	return &Names{pick: pick, shared: map[string]string{}, relays: map[string]string{}}
}

// address hands out a fresh loopback address of a block this Names has
// claimed.
func (n *Names) address() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.prefix == "" || n.next == blockSize {
		if err := n.claimBlock(); err != nil {
			return "", err
		}
	}
	n.next++
	return n.prefix + strconv.Itoa(n.next), nil
}

// claimBlock moves n to a block no other Names holds, and holds it: an
// abstract Unix socket named after the block, which only one listener
// on the machine can have and which the kernel releases when its process
// ends, however it ends.
func (n *Names) claimBlock() error {
	var err error
	for range claimAttempts {
		b, c := n.pick()
		prefix := "127." + strconv.Itoa(b) + "." + strconv.Itoa(c) + "."
		var l net.Listener
		l, err = (&net.ListenConfig{}).Listen(context.Background(), "unix", "@armada-crossplane-podrun-names-"+prefix)
		if err != nil {
			continue
		}
		n.claims = append(n.claims, l)
		n.prefix, n.next = prefix, 0
		return nil
	}
	return errors.Wrapf(err, "cannot claim a block of loopback addresses in %d attempts", claimAttempts)
}

// Relay makes addr (host:port) reach target. A host given as an IP
// address, which no hosts file maps, is an error.
func (n *Names) Relay(addr, target string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		return errors.Errorf("the far end %q is not a host name and port; only names are resolved", addr)
	}
	n.mu.Lock()
	ip, ok := n.shared[host]
	n.mu.Unlock()
	if !ok {
		if ip, err = n.address(); err != nil {
			return err
		}
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
		lis, err := startRelay(at, target)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.listeners = append(n.listeners, lis)
		n.mu.Unlock()
	case old != target:
		return errors.Errorf("%s is relayed to %s and cannot also reach %s", addr, old, target)
	}
	return nil
}

// Close stops every relay and gives up n's blocks.
func (n *Names) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.listeners {
		_ = l.Close()
	}
	for _, l := range n.claims {
		_ = l.Close()
	}
	n.listeners, n.claims, n.prefix = nil, nil, ""
}

// HostsFile writes a hosts file with the shared names and own (names only
// this process resolves this way) and returns its path.
func (n *Names) HostsFile(dir string, own map[string]string) (string, error) {
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
	// A file the processes already read is rewritten in place, and only
	// when it changes, so a reader never catches it half-written for
	// nothing (a Runner rewrites it as Services appear).
	if old, err := os.ReadFile(p); err == nil && string(old) == b.String() { //nolint:gosec // The caller's own directory.
		return p, nil
	}
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// startRelay forwards every connection to addr to target, byte for byte,
// until the listener it returns is closed.
func startRelay(addr, target string) (net.Listener, error) {
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot listen on %s, standing in for a Service", addr)
	}
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go relay(conn, target)
		}
	}()
	return lis, nil
}

func relay(conn net.Conn, target string) {
	defer func() { _ = conn.Close() }()
	up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", target)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	testutil.Join(conn, up)
}

// Lookup returns the loopback address a host name resolves to, as a pod's
// hosts file has it; false if no relay was made for it.
func (n *Names) Lookup(host string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ip, ok := n.shared[host]
	return ip, ok
}

// Dial connects to addr (host:port) as a pod would: a host name through
// the address its hosts file gives it.
func (n *Names) Dial(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot parse address %q", addr)
	}
	if ip, ok := n.Lookup(host); ok {
		host = ip
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
}
