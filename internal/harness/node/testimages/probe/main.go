// Command probe is the real node's network probe image. It either serves
// or dials, so that stand-in pods carrying a component's labels can show
// which connections the node's NetworkPolicy enforcement lets through:
//
//	serve tcp:PORT|udp:PORT...   accept TCP connections (and close them) and
//	                             echo UDP datagrams on every address, until killed
//	dial [-for D] [deny:]tcp:IP:PORT|[deny:]udp:IP:PORT...
//	                             try each target until one attempt succeeds or D
//	                             passes, all at once, and print one line per
//	                             target, "TARGET ok" or "TARGET refused: ERROR",
//	                             then exit 0 (exit 2 on bad arguments)
//
// A UDP target counts as reached when its echo comes back. A deny: target
// is one that should be refused: it is tried for all of D, and reported
// by the attempts of its last settle (5 s) only, "ok" if one of them
// connected (a refusal is reported by its quickest error: a refusal over
// a timeout), so that a connection let through while the enforcer was
// still programming a new pod is reported ("refused: ... (connected N
// times before)") without deciding the outcome.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// attemptTimeout bounds one connection attempt or one UDP round trip;
// settle is the end of a deny: target's window that decides it.
const (
	attemptTimeout = time.Second
	settle         = 5 * time.Second
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(os.Args[2:]); err != nil {
			sayf("serve: %v", err)
			os.Exit(1)
		}
		select {}
	case "dial":
		fs := flag.NewFlagSet("dial", flag.ExitOnError)
		d := fs.Duration("for", 20*time.Second, "how long to keep trying each target")
		_ = fs.Parse(os.Args[2:])
		if fs.NArg() == 0 {
			usage()
		}
		for _, line := range dialAll(fs.Args(), *d) {
			sayf("%s", line)
		}
	default:
		usage()
	}
}

func usage() {
	sayf("usage: probe serve tcp:PORT|udp:PORT... | probe dial [-for DURATION] tcp:IP:PORT|udp:IP:PORT...")
	os.Exit(2)
}

// serve listens on every endpoint in the background.
func serve(endpoints []string) error {
	lc := &net.ListenConfig{}
	for _, e := range endpoints {
		proto, port, ok := strings.Cut(e, ":")
		switch {
		case ok && proto == "tcp":
			l, err := lc.Listen(context.Background(), "tcp", ":"+port)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w", e, err)
			}
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					_ = c.Close()
				}
			}()
		case ok && proto == "udp":
			pc, err := lc.ListenPacket(context.Background(), "udp", ":"+port)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w", e, err)
			}
			go func() {
				buf := make([]byte, 512)
				for {
					n, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					_, _ = pc.WriteTo(buf[:n], from)
				}
			}()
		default:
			return fmt.Errorf("cannot serve %q: want tcp:PORT or udp:PORT", e)
		}
		sayf("serving %s", e)
	}
	return nil
}

// dialAll tries every target at once and returns one line per target, in
// the order given.
func dialAll(targets []string, d time.Duration) []string {
	out := make([]string, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			if target, ok := strings.CutPrefix(t, "deny:"); ok {
				out[i] = t + " " + holdFor(target, d)
				return
			}
			if err := dialFor(t, d); err != nil {
				out[i] = t + " refused: " + err.Error()
				return
			}
			out[i] = t + " ok"
		})
	}
	wg.Wait()
	return out
}

// dialFor tries target until an attempt succeeds or d passes, and returns
// the last attempt's error.
func dialFor(target string, d time.Duration) error {
	proto, addr, ok := strings.Cut(target, ":")
	if !ok || (proto != "tcp" && proto != "udp") {
		return fmt.Errorf("cannot dial %q: want tcp:IP:PORT or udp:IP:PORT", target)
	}
	deadline := time.Now().Add(d)
	for {
		start := time.Now()
		err := attempt(proto, addr)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(attemptTimeout - time.Since(start))
	}
}

// holdFor tries target for all of d and reports the attempts of its last
// settle: "ok" if one connected, else "refused: ERROR", noting earlier
// connections.
func holdFor(target string, d time.Duration) string {
	proto, addr, ok := strings.Cut(target, ":")
	if !ok || (proto != "tcp" && proto != "udp") {
		return fmt.Sprintf("refused: cannot dial %q: want tcp:IP:PORT or udp:IP:PORT", target)
	}
	end := time.Now().Add(d)
	early, late := 0, 0
	var last error
	for time.Now().Before(end) {
		start := time.Now()
		err := attempt(proto, addr)
		switch {
		case err == nil && end.Sub(start) <= settle:
			late++
		case err == nil:
			early++
		}
		// A quick refusal says more than a timeout (the kernel
		// rate-limits the ICMP errors that refuse): keep the first.
		if last == nil || os.IsTimeout(last) {
			last = err
		}
		time.Sleep(attemptTimeout - time.Since(start))
	}
	switch {
	case late > 0:
		return "ok"
	case early > 0:
		return fmt.Sprintf("refused: %v (connected %d times before)", last, early)
	case last == nil:
		return "refused: no attempt"
	}
	return "refused: " + last.Error()
}

// attempt makes one TCP connection, or one UDP round trip.
func attempt(proto, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, proto, addr)
	if err != nil {
		return fmt.Errorf("cannot connect: %w", err)
	}
	defer func() { _ = c.Close() }()
	if proto == "tcp" {
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(attemptTimeout))
	if _, err := c.Write([]byte("probe")); err != nil {
		return fmt.Errorf("cannot send a datagram: %w", err)
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return fmt.Errorf("cannot read the echo: %w", err)
	}
	if string(buf[:n]) != "probe" {
		return fmt.Errorf("cannot read the echo: got %q", buf[:n])
	}
	return nil
}

// sayf prints one line of the probe's output.
func sayf(format string, args ...any) { _, _ = fmt.Fprintf(os.Stdout, format+"\n", args...) }
