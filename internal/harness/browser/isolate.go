package browser

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// An Isolation is a network namespace of Chromium's own. Chromium watches
// the interfaces of the namespace it runs in and abandons requests in
// flight (net::ERR_NETWORK_CHANGED) when one comes or goes, as a real
// node's bridge and veths do (internal/harness/node). In its own
// namespace it sees only its loopback and one link that carries its
// default route, and none of the machine's changes. Every TCP connection
// it opens there is redirected (iptables REDIRECT, in the namespace) to a
// relay that opens the same connection, to the original address and port,
// from the machine's namespace; so a page reaches what it would reach
// without the namespace, at the same addresses. Chromium's DevTools port
// is relayed the other way, at the same port on the machine's loopback.
type Isolation struct {
	// ctx bounds the relays' connections: Close cancels it.
	ctx      context.Context //nolint:containedctx // The relays outlive Isolate's call; Close ends them.
	cancel   context.CancelFunc
	name     string
	devtools int
	relay    net.Listener // in the namespace
	inbound  net.Listener // on the machine's loopback, to DevTools
	wg       sync.WaitGroup
	once     sync.Once
}

// isolationPrefix starts each Isolation's namespace name, followed by the
// process's ID: a namespace whose process is gone is a leftover.
const isolationPrefix = "abrw-"

// netnsDir is where ip netns keeps the namespaces it names.
const netnsDir = "/run/netns"

// Isolate makes a network namespace for Chromium, with its relays. Close
// removes it. It first removes the namespaces Isolations of processes no
// longer running left (a test killed).
func Isolate(ctx context.Context) (*Isolation, error) {
	sweepIsolations(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	iso := &Isolation{name: isolationPrefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])}
	iso.ctx, iso.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := ip(ctx, "netns", "add", iso.name); err != nil {
		iso.cancel()
		return nil, err
	}
	if err := iso.setUp(ctx); err != nil {
		iso.Close() //nolint:contextcheck // Removing the namespace must run when ctx is done too.
		return nil, err
	}
	return iso, nil
}

func (iso *Isolation) setUp(ctx context.Context) error {
	// No IPv6 addresses: links that come up get link-local ones a moment
	// later, a change Chromium would see after it started.
	if err := ip(ctx, "netns", "exec", iso.name, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		// A veth pair, both ends in the namespace (this machine's kernel
		// has no dummy links): its address is the namespace's own, and
		// nothing reaches it.
		{"link", "add", "d0", "type", "veth", "peer", "name", "d1"},
		{"addr", "add", "198.18.255.254/32", "dev", "d0"},
		{"link", "set", "d1", "up"},
		{"link", "set", "d0", "up"},
		{"route", "add", "default", "dev", "d0"},
	} {
		if err := ip(ctx, append([]string{"-n", iso.name}, args...)...); err != nil {
			return err
		}
	}
	// The link's carrier comes up a moment after it is set up (the
	// kernel's link watch); Chromium started before that would see it
	// change.
	if err := iso.waitUp(ctx, "d0"); err != nil {
		return err
	}
	var lc net.ListenConfig
	in, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return errors.Wrap(err, "cannot listen for Chromium's DevTools")
	}
	iso.inbound = in
	iso.devtools = port(in)
	if err := iso.do(func() error {
		l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		iso.relay = l
		return errors.Wrap(err, "cannot listen in Chromium's network namespace")
	}); err != nil {
		return err
	}
	relay := strconv.Itoa(port(iso.relay))
	for _, rule := range [][]string{
		{"-p", "tcp", "--dport", relay, "-j", "RETURN"},
		{"-p", "tcp", "--dport", strconv.Itoa(iso.devtools), "-j", "RETURN"},
		{"-p", "tcp", "-j", "REDIRECT", "--to-ports", relay},
	} {
		args := append([]string{"netns", "exec", iso.name, "iptables", "-w", "-t", "nat", "-A", "OUTPUT"}, rule...)
		if err := ip(ctx, args...); err != nil {
			return err
		}
	}
	iso.serve(iso.relay, func(c net.Conn) (net.Conn, error) {
		dst, err := originalDst(c)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(iso.ctx, "tcp", dst.String())
	})
	iso.serve(iso.inbound, func(net.Conn) (net.Conn, error) {
		var out net.Conn
		err := iso.do(func() error {
			var err error
			var d net.Dialer
			out, err = d.DialContext(iso.ctx, "tcp", "127.0.0.1:"+strconv.Itoa(iso.devtools))
			return err
		})
		return out, err
	})
	return nil
}

// port is a TCP listener's port.
func port(l net.Listener) int {
	if a, ok := l.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// waitUp waits until the namespace's link is up, carrier and all.
func (iso *Isolation) waitUp(ctx context.Context, link string) error {
	for range 100 {
		out, err := exec.CommandContext(ctx, "ip", "-n", iso.name, "-o", "link", "show", link).Output() //nolint:gosec // The namespace's own name and link.
		if err != nil {
			return errors.Wrapf(err, "cannot read link %s of %s", link, iso)
		}
		if strings.Contains(string(out), " state UP ") {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Wrapf(ctx.Err(), "cannot wait for link %s of %s", link, iso)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.Errorf("link %s of %s did not come up in 5s", link, iso)
}

// DevToolsPort is the port Chromium's DevTools listen on in the namespace
// (--remote-debugging-port), relayed from the machine's loopback.
func (iso *Isolation) DevToolsPort() int { return iso.devtools }

// Command is name with args run in the namespace.
func (iso *Isolation) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // The caller's command.
	iso.wrap(cmd)
	return cmd
}

// wrap makes cmd run in the namespace (ip netns exec execs the command,
// keeping the process), killed if this process dies.
func (iso *Isolation) wrap(cmd *exec.Cmd) {
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		ipPath = "/usr/sbin/ip"
	}
	cmd.Args = append([]string{ipPath, "netns", "exec", iso.name}, cmd.Args...)
	cmd.Path = ipPath
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// Close stops the relays and removes the namespace.
func (iso *Isolation) Close() {
	iso.once.Do(func() {
		iso.cancel()
		for _, l := range []net.Listener{iso.relay, iso.inbound} {
			if l != nil {
				_ = l.Close()
			}
		}
		iso.killAll()
		_ = ip(context.WithoutCancel(iso.ctx), "netns", "delete", iso.name)
		iso.wg.Wait()
	})
}

// killAll kills every process in the namespace and waits, up to ten
// seconds, until none is left. Chromium's children (its renderers, its
// network service) outlive its main process for a moment and write into
// its profile meanwhile, which the caller removes next.
func (iso *Isolation) killAll() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := nsPids(filepath.Join(netnsDir, iso.name))
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nsPids are the processes running in the network namespace whose file is
// ns, as ip netns pids finds them: those whose /proc/PID/ns/net is that
// file. A process that has exited (a zombie) has none and is not among
// them.
func nsPids(file string) []int {
	var ns unix.Stat_t
	if err := unix.Stat(file, &ns); err != nil {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) == nil && st.Dev == ns.Dev && st.Ino == ns.Ino {
			pids = append(pids, pid)
		}
	}
	return pids
}

// serve accepts on l until it is closed, joining each connection with the
// one dial opens for it.
func (iso *Isolation) serve(l net.Listener, dial func(net.Conn) (net.Conn, error)) {
	iso.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				out, err := dial(c)
				if err != nil {
					return
				}
				defer func() { _ = out.Close() }()
				testutil.Join(c, out)
			}()
		}
	})
}

// do runs f on a thread in the namespace: sockets f makes stay in it.
// The thread goes back to the machine's namespace afterwards; only if it
// cannot does it stay locked and end with its goroutine. Ending a thread
// kills the processes forked from it with a parent-death signal (the
// harness's servers), so it ends only when it must.
func (iso *Isolation) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- errors.Wrap(err, "cannot open the machine's network namespace")
			return
		}
		defer func() { _ = unix.Close(home) }()
		fd, err := unix.Open(filepath.Join(netnsDir, iso.name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- errors.Wrap(err, "cannot open Chromium's network namespace")
			return
		}
		defer func() { _ = unix.Close(fd) }()
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			// setns changes nothing when it fails.
			runtime.UnlockOSThread()
			errc <- errors.Wrap(err, "cannot enter Chromium's network namespace")
			return
		}
		err = f()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// soOriginalDst is Linux's SO_ORIGINAL_DST: the address a redirected
// connection was opened to.
const soOriginalDst = 80

// originalDst is where a connection REDIRECT sent to the relay was going.
func originalDst(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, errors.New("cannot read the original destination of a connection that is not TCP")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, errors.Wrap(err, "cannot read the original destination")
	}
	var sa *unix.IPv6Mreq
	var serr error
	if err := raw.Control(func(fd uintptr) {
		// A sockaddr_in, read through the one getsockopt of x/sys/unix
		// that returns 20 bytes.
		sa, serr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, soOriginalDst)
	}); err != nil {
		return netip.AddrPort{}, errors.Wrap(err, "cannot read the original destination")
	}
	if serr != nil {
		return netip.AddrPort{}, errors.Wrap(serr, "cannot read the original destination")
	}
	b := sa.Multiaddr
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4])), nil
}

// sweepIsolations removes the namespaces of Isolations whose process is
// no longer running.
func sweepIsolations(ctx context.Context) {
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), isolationPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue
		}
		_ = ip(ctx, "netns", "delete", e.Name())
	}
}

// ip runs ip (iproute2) with args.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput() //nolint:gosec // ip's arguments, from this file.
	if err != nil {
		return errors.Wrapf(err, "cannot run ip %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}

// String names the namespace.
func (iso *Isolation) String() string { return fmt.Sprintf("network namespace %s", iso.name) }
