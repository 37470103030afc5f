package browser

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// TestIsolation: Chromium runs in a network namespace of its own, which
// holds none of the machine's links (a veth pair added on the machine, as
// a real node adds them, is not there); and a page reaches a server on a
// loopback address of the machine, through a name Chromium maps to it, at
// the server's port, over the namespace's relays. Its temporary files are
// under Options.Dir.
func TestIsolation(t *testing.T) {
	ctx := t.Context()
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.7:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `<html><body><script>
window.result = "";
(async () => {
  for (let i = 0; i < 4; i++) {
    const r = await fetch("/fetch?i=" + i);
    window.result += await r.text();
  }
})().catch(e => { window.result = "failed: " + e; });
</script></body></html>`)
	})
	mux.HandleFunc("/fetch", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok ") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	// A link of the machine's, as a real node's veths.
	link := fmt.Sprintf("abrwt%d", os.Getpid()%100000)
	if out, err := exec.CommandContext(ctx, "ip", "link", "add", link, "type", "veth", "peer", "name", link+"p").CombinedOutput(); err != nil { //nolint:gosec // The test's own link.
		t.Fatalf("cannot add a veth pair: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.CommandContext(context.WithoutCancel(ctx), "ip", "link", "del", link).Run() }) //nolint:gosec // The test's own link.

	dir := t.TempDir()
	b, err := Start(ctx, Options{Hosts: map[string]string{"iso.test": "127.0.0.7"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Its temporary files are in Dir: the singleton socket's directory,
	// which Chromium leaves behind when it is killed.
	if tmp, _ := filepath.Glob(filepath.Join(dir, "tmp-*", "org.chromium.Chromium.*")); len(tmp) == 0 {
		t.Errorf("Chromium's singleton directory is not under Options.Dir %s (its TMPDIR)", dir)
	}
	if err := b.Navigate(ctx, fmt.Sprintf("http://iso.test:%d/", l.Addr().(*net.TCPAddr).Port)); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("ok ", 4)
	got, err := b.Poll(ctx, 30*time.Second, "window.result", func(s string) bool { return s == want || strings.HasPrefix(s, "failed") })
	if err != nil || got != want {
		t.Errorf("the page's fetches: got %q (%v), want %q; problems: %q", got, err, want, b.Problems())
	}

	// Chromium's own namespace, and the links in it.
	proc := chromedp.FromContext(b.ctx).Browser.Process()
	if proc == nil {
		t.Fatal("chromedp knows no Chromium process")
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", proc.Pid))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if ns == self {
		t.Fatalf("Chromium runs in the machine's network namespace (%s)", ns)
	}
	out, err := exec.CommandContext(ctx, "nsenter", "--net=/proc/"+strconv.Itoa(proc.Pid)+"/ns/net", "ip", "-o", "link", "show").CombinedOutput() //nolint:gosec // Chromium's pid.
	if err != nil {
		t.Fatalf("cannot list Chromium's links: %v: %s", err, out)
	}
	var links []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			links = append(links, name)
		}
	}
	slices.Sort(links)
	if diff := cmp.Diff([]string{"d0", "d1", "lo"}, links); diff != "" {
		t.Errorf("the links in Chromium's namespace (-want +got):\n%s", diff)
	}

	// Closing stops every process in the namespace, not only Chromium's
	// main one: its children write into its profile until they exit, and
	// the profile is removed next.
	pids := nsPids(fmt.Sprintf("/proc/%d/ns/net", proc.Pid))
	if len(pids) < 2 {
		t.Errorf("processes in Chromium's namespace: %v, want its children too", pids)
	}
	b.Close()
	var left []string
	for _, pid := range pids {
		if state, ok := pidState(pid); ok && !strings.HasPrefix(state, "Z") {
			left = append(left, fmt.Sprintf("%d (%s)", pid, state))
		}
	}
	if len(left) > 0 {
		t.Errorf("processes of Chromium's still running after Close: %v", left)
	}
}

// TestStartFails: a browser that does not start is started Starts times,
// each failed try but the last is logged, and the error says what it
// printed and what became of its process. The browser is a stand-in
// (fault injection): a script that prints a line and sleeps, never
// printing a DevTools address, as Chromium has now and then on a loaded
// machine.
func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "chromium")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"a stand-in starting $$\"\nexec sleep 60\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	var logged []string
	b, err := Start(t.Context(), Options{
		Hosts: map[string]string{"x.test": "127.0.0.1"}, Dir: dir, Exec: script, StartTimeout: 2 * time.Second,
		Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) },
	})
	if err == nil {
		b.Close()
		t.Fatal("a browser that never prints its DevTools address started")
	}
	for _, want := range []string{"cannot start Chromium", "websocket url timeout", "is S (sleeping)", "it printed:\na stand-in starting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if len(logged) != Starts-1 {
		t.Fatalf("%d tries logged, want %d: %q", len(logged), Starts-1, logged)
	}
	for i, l := range logged {
		if want := fmt.Sprintf("try %d of %d failed", i+1, Starts); !strings.Contains(l, want) || !strings.Contains(l, "a stand-in starting") {
			t.Errorf("log line %d lacks %q or what the browser printed: %s", i, want, l)
		}
	}
}
