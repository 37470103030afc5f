// Package browser drives Debian's Chromium, headless, with chromedp, as a
// person's browser on a machine whose DNS resolves the composed names:
// each host name goes to the loopback address the test's Names gives it
// (--host-resolver-rules, ports unchanged), and TLS is trusted only for
// the certificates the test verified against the claim's CA. It records
// what a person would see go wrong: console errors, uncaught exceptions,
// browser log errors (CORS refusals are logged there) and failed requests.
// Each Chromium runs in a network namespace of its own (Isolate), so a
// real node's links coming and going on the machine do not disturb it.
package browser

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Chromium is Debian's chromium package's binary (make system-deps
// installs it).
const Chromium = "/usr/bin/chromium"

// Options configure a Browser.
type Options struct {
	// Hosts map each host name the pages reach to the IP address it
	// resolves to.
	Hosts map[string]string
	// SPKIs are the base64 SHA-256 hashes of the public keys of the
	// certificates to accept (SPKIOf): the servers' own, verified by the
	// caller.
	SPKIs []string
	// Headers are sent with every request (an Authorization header, as an
	// authenticating proxy in front of the servers would add it).
	Headers map[string]string
	// Dir holds the browser's profile and temporary files.
	Dir string
	// Width and Height are the window's size; 1600x1000 if zero.
	Width, Height int
	// Logf, if set, is told of each start of Chromium that failed and is
	// tried again, with what Chromium printed.
	Logf func(format string, args ...any)
	// Exec is the browser's binary; Chromium if empty. A test gives a
	// stand-in that never starts, to see a failed start reported.
	Exec string
	// StartTimeout is how long one start waits for the browser to print
	// its DevTools address; 40s if zero (chromedp's default is 20s).
	StartTimeout time.Duration
}

// A Browser is one headless Chromium with one tab.
type Browser struct {
	ctx    context.Context //nolint:containedctx // chromedp's tab is a context: every action runs in it.
	cancel context.CancelFunc

	mu       sync.Mutex
	urls     map[network.RequestID]string
	sent     map[network.RequestID]int // index in requests
	problems []string
	requests []Request
}

// A Request is one request the page sent, as the browser sent it.
type Request struct {
	// Method and URL are the request's.
	Method, URL string
	// Auth is the scheme of its Authorization header ("Bearer",
	// "Basic"), "" if it had none; the credentials are not kept.
	Auth string
	// Protocol is the protocol its response came over, as the browser
	// names it ("http/1.1", "h2"); "" if no response came.
	Protocol string
}

// Starts is how many times Start starts Chromium before it gives up.
// On a loaded machine Chromium has, now and then, not printed its
// DevTools address within chromedp's wait; each failed start is logged
// (Options.Logf) with what Chromium printed and its process's state. A
// network namespace that cannot be made is not tried again.
const Starts = 3

// Start starts Chromium and opens its tab.
func Start(ctx context.Context, o Options) (*Browser, error) {
	if o.Exec == "" {
		o.Exec = Chromium
	}
	if _, err := os.Stat(o.Exec); err != nil {
		return nil, errors.Errorf("cannot find %s (Debian's chromium): run make system-deps", o.Exec)
	}
	if o.Width == 0 {
		o.Width, o.Height = 1600, 1000
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 40 * time.Second
	}
	var b *Browser
	err := testutil.Retry(ctx, Starts, o.Logf, func(try int) error {
		var err error
		b, err = start(ctx, o, try)
		return err
	})
	return b, err
}

// start starts one Chromium, with a profile of its own under o.Dir.
func start(ctx context.Context, o Options, try int) (*Browser, error) {
	dir := filepath.Join(o.Dir, "profile-"+strconv.Itoa(try))
	// Chromium's temporary files (its singleton socket's directory, which
	// it leaves when killed, as closing it does) go under o.Dir too, not
	// the machine's /tmp.
	tmp := filepath.Join(o.Dir, "tmp-"+strconv.Itoa(try))
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, testutil.Permanent(errors.Wrap(err, "cannot create Chromium's temporary directory"))
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(o.Exec),
		chromedp.UserDataDir(dir),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.NoSandbox, // Root, as the tests run, has no user namespace sandbox.
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.Flag("host-resolver-rules", resolverRules(o.Hosts)),
		chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(o.SPKIs, ",")),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WSURLReadTimeout(o.StartTimeout),
	)
	// In a network namespace of its own: a real node changing the
	// machine's interfaces meanwhile would make Chromium abandon requests
	// (net::ERR_NETWORK_CHANGED).
	iso, err := Isolate(ctx)
	if err != nil {
		return nil, testutil.Permanent(err)
	}
	out := &tail{max: 8 << 10}
	var cmd *exec.Cmd
	opts = append(opts,
		chromedp.Flag("remote-debugging-port", strconv.Itoa(iso.DevToolsPort())),
		chromedp.ModifyCmdFunc(func(c *exec.Cmd) { iso.wrap(c); cmd = c }),
		chromedp.CombinedOutput(out),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	closeAll := func() { //nolint:contextcheck // Removing the namespace must run when ctx is done too.
		bcancel()
		acancel()
		iso.Close()
	}
	b := &Browser{ctx: bctx, cancel: closeAll, urls: map[network.RequestID]string{}, sent: map[network.RequestID]int{}}
	chromedp.ListenTarget(bctx, b.listen)
	headers := network.Headers{}
	for k, v := range o.Headers {
		headers[k] = v
	}
	began := time.Now()
	if err := chromedp.Run(bctx, network.Enable(), cdplog.Enable(), runtime.Enable(), network.SetExtraHTTPHeaders(headers)); err != nil {
		// Read before closing: closing kills it.
		state := processState(cmd)
		b.cancel()
		return nil, errors.Wrapf(err, "cannot start Chromium (after %s; its process %s); it printed:\n%s",
			time.Since(began).Round(100*time.Millisecond), state, strings.TrimSpace(out.String()))
	}
	return b, nil
}

// processState is the state Linux gives cmd's process ("S (sleeping)",
// "T (stopped)"), or why there is none.
func processState(cmd *exec.Cmd) string {
	if cmd == nil || cmd.Process == nil {
		return "was not started"
	}
	state, ok := pidState(cmd.Process.Pid)
	if !ok {
		return fmt.Sprintf("%d is gone", cmd.Process.Pid)
	}
	return fmt.Sprintf("%d is %s", cmd.Process.Pid, state)
}

// pidState is the state Linux gives process pid ("S (sleeping)"), and
// false if there is no such process.
func pidState(pid int) (string, bool) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "State:"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "no state", true
}

// A tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = slices.Clone(t.b[over:])
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// resolverRules is --host-resolver-rules for hosts: each to its address,
// and nothing else, so a page reaching elsewhere fails visibly.
func resolverRules(hosts map[string]string) string {
	rules := make([]string, 0, len(hosts)+2)
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		rules = append(rules, "MAP "+h+" "+hosts[h])
	}
	return strings.Join(append(rules, "MAP * ~NOTFOUND", "EXCLUDE localhost"), ",")
}

// CommandLine is how a person starts Debian's Chromium, with a window, as
// Start starts it for o (the names resolved and the certificates trusted
// alike, its own profile in a new temporary directory), opening url: for
// a shell.
// As root, Chromium starts only without its sandbox (--no-sandbox).
func CommandLine(o Options, url string) string {
	sandbox := ""
	if os.Geteuid() == 0 {
		sandbox = " --no-sandbox"
	}
	return fmt.Sprintf("%s%s --user-data-dir=\"$(mktemp -d)\" --host-resolver-rules=%q --ignore-certificate-errors-spki-list=%q %s",
		Chromium, sandbox, resolverRules(o.Hosts), strings.Join(o.SPKIs, ","), url)
}

// commandFlag matches a flag CommandLine writes with a Go-quoted value.
var commandFlag = regexp.MustCompile(`--(host-resolver-rules|ignore-certificate-errors-spki-list)=("(?:[^"\\]|\\.)*")`)

// ParseCommandLine reads back what CommandLine wrote, as a person pastes
// it: the names each host resolves to, the certificates trusted, and the
// URL it opens (its last word).
func ParseCommandLine(line string) (Options, string, error) {
	o := Options{Hosts: map[string]string{}}
	for _, m := range commandFlag.FindAllStringSubmatch(line, -1) {
		v, err := strconv.Unquote(m[2])
		if err != nil {
			return o, "", errors.Wrapf(err, "cannot read --%s", m[1])
		}
		switch m[1] {
		case "host-resolver-rules":
			for r := range strings.SplitSeq(v, ",") {
				f := strings.Fields(r)
				if len(f) == 3 && f[0] == "MAP" && f[1] != "*" {
					o.Hosts[f[1]] = f[2]
				}
			}
		default:
			o.SPKIs = strings.Split(v, ",")
		}
	}
	words := strings.Fields(line)
	if len(o.Hosts) == 0 || len(words) == 0 {
		return o, "", errors.Errorf("cannot find --host-resolver-rules in %q", line)
	}
	return o, words[len(words)-1], nil
}

// Close stops Chromium.
func (b *Browser) Close() { b.cancel() }

// Run runs actions in the tab.
func (b *Browser) Run(ctx context.Context, actions ...chromedp.Action) error {
	// The tab's context carries the browser; ctx bounds this run.
	rctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	return chromedp.Run(rctx, actions...) //nolint:contextcheck // The tab's context, bounded by ctx above.
}

// Problems returns what went wrong in the page so far, in order, and
// forgets it.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.problems
	b.problems = nil
	return out
}

// Requests returns the requests the page sent so far, in order.
func (b *Browser) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

func (b *Browser) problemf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

func (b *Browser) listen(ev any) {
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requestSent(ev)
	case *network.EventResponseReceived:
		b.responseReceived(ev)
	case *network.EventLoadingFailed:
		if ev.Canceled {
			return
		}
		b.mu.Lock()
		u := b.urls[ev.RequestID]
		b.mu.Unlock()
		b.problemf("request failed: %s: %s%s", u, ev.ErrorText, blocked(ev))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.APITypeError {
			b.problemf("console error: %s", consoleArgs(ev))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problemf("uncaught exception: %s", msg)
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.LevelError {
			b.problemf("browser log: %s %s", ev.Entry.Text, ev.Entry.URL)
		}
	}
}

// requestSent records a request the page sent, with the scheme of its
// Authorization header only.
func (b *Browser) requestSent(ev *network.EventRequestWillBeSent) {
	r := Request{Method: ev.Request.Method, URL: ev.Request.URL}
	for k, v := range ev.Request.Headers {
		if h, ok := v.(string); ok && strings.EqualFold(k, "Authorization") {
			r.Auth, _, _ = strings.Cut(h, " ")
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.urls[ev.RequestID] = ev.Request.Method + " " + ev.Request.URL
	b.sent[ev.RequestID] = len(b.requests)
	b.requests = append(b.requests, r)
}

// responseReceived records the protocol a response came over, and a
// status of 400 or more as a problem, with the server's challenge.
func (b *Browser) responseReceived(ev *network.EventResponseReceived) {
	b.mu.Lock()
	if i, ok := b.sent[ev.RequestID]; ok {
		b.requests[i].Protocol = ev.Response.Protocol
	}
	b.mu.Unlock()
	if ev.Response.Status < 400 {
		return
	}
	challenge := ""
	for k, v := range ev.Response.Headers {
		if strings.EqualFold(k, "WWW-Authenticate") {
			challenge = fmt.Sprintf(" (challenge: %v)", v)
		}
	}
	b.problemf("%d %s%s", ev.Response.Status, ev.Response.URL, challenge)
}

// consoleArgs is a console call's arguments as the console shows them.
func consoleArgs(ev *runtime.EventConsoleAPICalled) string {
	args := make([]string, 0, len(ev.Args))
	for _, a := range ev.Args {
		if a.Value != nil {
			args = append(args, string(a.Value))
		} else {
			args = append(args, a.Description)
		}
	}
	return strings.Join(args, " ")
}

func blocked(ev *network.EventLoadingFailed) string {
	out := ""
	if ev.BlockedReason != "" {
		out += " (blocked: " + ev.BlockedReason.String() + ")"
	}
	if ev.CorsErrorStatus != nil {
		out += " (CORS: " + ev.CorsErrorStatus.CorsError.String() + ")"
	}
	return out
}

// SPKIOf dials addr through dial, verifies the certificate it serves for
// host against the PEM CA pool ca, and returns the hash of its public key
// as ignore-certificate-errors-spki-list takes it: so the browser trusts
// exactly the certificates the CA vouches for, as a browser with the CA
// installed would.
func SPKIOf(ctx context.Context, dial func(context.Context, string) (net.Conn, error), addr, host string, ca []byte) (string, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", errors.New("cannot parse the CA: no PEM certificate")
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		return "", errors.Wrapf(err, "cannot dial %s", addr)
	}
	tc := tls.Client(conn, &tls.Config{ServerName: host, RootCAs: pool, MinVersion: tls.VersionTLS12})
	defer tc.Close() //nolint:errcheck // Only its certificate was wanted.
	if err := tc.HandshakeContext(ctx); err != nil {
		return "", errors.Wrapf(err, "cannot verify %s's certificate against the CA", addr)
	}
	leaf := tc.ConnectionState().PeerCertificates[0]
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// Navigate loads url in the tab.
func (b *Browser) Navigate(ctx context.Context, url string) error {
	return errors.Wrapf(b.Run(ctx, chromedp.Navigate(url)), "cannot load %s", url)
}

// Eval evaluates the JavaScript expression js in the page, decoding its
// value into out.
func (b *Browser) Eval(ctx context.Context, js string, out any) error {
	return errors.Wrapf(b.Run(ctx, chromedp.Evaluate(js, out)), "cannot evaluate %s", js)
}

// Poll evaluates js, a string-valued expression, every half second until
// ok accepts its value or timeout passes, and returns the last value.
func (b *Browser) Poll(ctx context.Context, timeout time.Duration, js string, ok func(string) bool) (string, error) {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		var v string
		err := b.Eval(ctx, js, &v)
		if err == nil {
			last = v
			if ok(v) {
				return v, nil
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return last, err
			}
			return last, errors.Errorf("timed out after %s; the page shows %q", timeout, last)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Screenshot writes a PNG of the whole page to path.
func (b *Browser) Screenshot(ctx context.Context, path string) error {
	var png []byte
	if err := b.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		return errors.Wrap(err, "cannot take a screenshot")
	}
	return errors.Wrap(os.WriteFile(path, png, 0o600), "cannot write the screenshot")
}
