package jobflow

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestMakeRun runs what `make run` runs as root (internal/build/cmd/run,
// its flags as the Makefile passes them then, -node; the binaries already
// built): the local control plane, the default claim and its composed
// tree, then every composed pod and the demo job as containers on a real
// node. It fails unless the claim is Ready (by the kubelet's probes) and
// the demo job's events end Succeeded and Lookout shows it; unless the
// Chromium command it printed signs in through the OpenID Provider (whose
// keys the node's pods fetch at its issuer's name) and shows the demo job
// Succeeded in Lookout's UI, served by the lookout container; and unless
// Ctrl-C (SIGINT) then stops every process it started, removes every
// temporary directory and leaves nothing of the node (its bridge, its
// routing rule).
func TestMakeRun(t *testing.T) {
	t.Parallel() // Beside TestJobFlow: see there.
	testMakeRun(t, "-node")
}

// TestMakeRunKWOK runs what `make run-kwok` runs, and `make run` without
// root: the same with Armada's binaries as processes and the demo job's
// pod on a KWOK Node.
func TestMakeRunKWOK(t *testing.T) {
	t.Parallel() // Beside TestJobFlow: see there.
	testMakeRun(t)
}

// TestMakeRunNodeNeedsRoot runs make run's command with -node as an
// unprivileged user (nobody): it stops at once with an error that names
// root and make run-kwok, and starts nothing.
func TestMakeRunNodeNeedsRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("TestMakeRunNodeNeedsRoot runs the command as another user, which needs root: run the tests as root, as .ci/run does")
	}
	bin := buildRun(t)
	// nobody runs it: the binary's directory, and the test's above it,
	// must be theirs to enter.
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(bin))} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), bin, "-node") //nolint:gosec // The command under test.
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a real node needs root") || !strings.Contains(string(out), "make run-kwok") {
		t.Errorf("run -node as uid %d: err %v, output:\n%s\nwant it to fail naming root and make run-kwok", nobody, err, out)
	}
}

// nobody is the unprivileged user's and group's id.
const nobody = 65534

// buildRun builds make run's command into a temporary directory.
func buildRun(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "run")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./internal/build/cmd/run") //nolint:gosec // Builds the command under test.
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./internal/build/cmd/run: %v\n%s", err, out)
	}
	return bin
}

// testMakeRun runs make run's command with args to the demo job, opens
// Lookout's UI with the Chromium command it printed, and interrupts it.
func testMakeRun(t *testing.T, args ...string) {
	t.Helper()
	r := startMakeRun(t, args...)
	r.waitDemo(t)

	// The Chromium command it printed opens Lookout's UI as pasted:
	// headless here, the page rendered under the Armada's name.
	openPrintedBrowser(t, r.output())

	out := r.output()
	// The demo's claim sets the scheduler's executorUpdateFrequency, and
	// the scheduler logged the period it reloads executors at.
	if want := "reloads its executors every 10s"; !strings.Contains(out, want) {
		t.Errorf("make run printed no %q; output:\n%s", want, out)
	}
	var bridge []string
	if slices.Contains(args, "-node") {
		for _, want := range []string{"Starting a real node", "is Ready (", "after the node started); node: containerd"} {
			if !strings.Contains(out, want) {
				t.Errorf("make run -node printed no %q; output:\n%s", want, out)
			}
		}
		if bridge = printedBridge.FindStringSubmatch(out); bridge == nil {
			t.Fatalf("make run -node did not say which node it started (%q); output:\n%s", printedBridge, out)
		}
	}

	// What the command runs now: its process tree (each process with its
	// start time, so a reused PID does not count) and the temporary
	// directories their command lines name.
	tree, dirs := processTree(r.cmd.Process.Pid)
	// pg_ctl starts PostgreSQL as a daemon, outside that tree: it is the
	// postmaster listening on the port make run printed.
	pg := postmaster(t, out)
	tree[pg.pid], dirs = pg.started, append(dirs, pg.dir)
	r.interrupt(t, tree, dirs)
	if bridge == nil {
		return
	}
	if _, err := os.Stat("/sys/class/net/anbr-" + bridge[1]); !os.IsNotExist(err) {
		t.Errorf("after Ctrl-C, the node's bridge anbr-%s is still there (%v)", bridge[1], err)
	}
	if rules, _ := exec.CommandContext(t.Context(), "ip", "rule", "show").Output(); strings.Contains(string(rules), "anbr-"+bridge[1]) {
		t.Errorf("after Ctrl-C, the node's routing rule is still there:\n%s", rules)
	}
}

// printedBridge finds the node make run -node started ("node
// armada-node-<id>: ..."), whose bridge is anbr-<id>.
var printedBridge = regexp.MustCompile(`node armada-node-([0-9a-f]+): `)

// A makeRun is make run's command, started by startMakeRun, and its
// output so far.
type makeRun struct {
	cmd    *exec.Cmd
	start  time.Time
	exited chan error
	lines  chan string

	mu    sync.Mutex
	out   strings.Builder
	marks map[string]time.Duration
}

// makeRunWanted are the lines whose first time startMakeRun records.
var makeRunWanted = map[string]string{
	"tree":        "XArmada ",
	"succeeded":   "The demo job succeeded",
	"interrupted": "Running until interrupted",
}

// startMakeRun builds and starts make run's command with args, in a
// process group of its own, collecting its output.
func startMakeRun(t testing.TB, args ...string) *makeRun {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildRun(t)
	r := &makeRun{cmd: exec.CommandContext(t.Context(), bin, args...), exited: make(chan error, 1), lines: make(chan string, 1024), marks: map[string]time.Duration{}} //nolint:gosec // The command under test.
	r.cmd.Dir = root
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	r.cmd.Stdout, r.cmd.Stderr = pw, pw
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait(); _ = pw.Close() }()
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			l := s.Text()
			r.mu.Lock()
			fmt.Fprintf(&r.out, "%7.1fs %s\n", time.Since(r.start).Seconds(), l)
			for k, prefix := range makeRunWanted {
				if _, ok := r.marks[k]; !ok && strings.HasPrefix(l, prefix) {
					r.marks[k] = time.Since(r.start)
				}
			}
			r.mu.Unlock()
			select {
			case r.lines <- l:
			default:
			}
		}
		close(r.lines)
	}()
	return r
}

func (r *makeRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitDemo waits until the command says it runs until interrupted,
// failing unless it said the demo job succeeded, with a Succeeded event.
func (r *makeRun) waitDemo(t *testing.T) {
	t.Helper()
	deadline := time.After(25 * time.Minute)
	for waiting := true; waiting; {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("make run's command ended before the demo job succeeded (%v); output:\n%s", <-r.exited, r.output())
			}
			waiting = !strings.HasPrefix(l, makeRunWanted["interrupted"])
		case <-deadline:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("the demo job did not succeed within 25 minutes; output:\n%s", r.output())
		}
	}
	r.mu.Lock()
	_, ok := r.marks["succeeded"]
	t.Logf("make run: composed tree at %s, demo job succeeded at %s", r.marks["tree"].Round(time.Second), r.marks["succeeded"].Round(time.Second))
	r.mu.Unlock()
	if !ok {
		t.Fatalf("make run's command is running on without saying the demo job succeeded; output:\n%s", r.output())
	}
	if !strings.Contains(r.output(), "Succeeded ") {
		t.Errorf("make run printed no Succeeded event of the demo job; output:\n%s", r.output())
	}
}

// interrupt sends Ctrl-C (SIGINT to the process group, as a terminal
// does) and fails unless the command exits 0 within 2 minutes and none
// of the processes of tree (pid to start time) and none of dirs is left.
func (r *makeRun) interrupt(t *testing.T, tree map[int]string, dirs []string) {
	t.Helper()
	if len(tree) < 10 || len(dirs) == 0 {
		t.Fatalf("make run's command runs %d processes naming temporary directories %v; want its control plane, backends and Armada", len(tree), dirs)
	}
	stopped := time.Now()
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		if err != nil {
			t.Errorf("after Ctrl-C, make run's command exited with %v, want 0; output:\n%s", err, r.output())
		}
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("make run's command had not exited 2 minutes after Ctrl-C; output:\n%s", r.output())
	}
	t.Logf("Ctrl-C → exited in %s", time.Since(stopped).Round(100*time.Millisecond))
	var left []string
	for pid, started := range tree {
		if st, cmdline := procStart(pid); st == started {
			left = append(left, fmt.Sprintf("%d: %s", pid, cmdline))
		}
	}
	if len(left) > 0 {
		t.Errorf("after Ctrl-C, processes make run started are still running:\n%s", strings.Join(left, "\n"))
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("after Ctrl-C, make run left its temporary directory %s (%v)", d, err)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("after Ctrl-C: none of the %d processes is left, nor any of the temporary directories %v", len(tree), dirs)
}

// processTree returns pid's process and its descendants, each with its
// start time, and the top-level directories under os.TempDir() their
// command lines name.
func processTree(pid int) (map[int]string, []string) {
	children := map[int][]int{}
	entries, _ := filepath.Glob("/proc/[0-9]*")
	for _, e := range entries {
		p, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(e, "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, ppid.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	tree := map[int]string{}
	seen := map[string]bool{}
	tmp := filepath.Clean(os.TempDir()) + "/"
	var walk func(int)
	walk = func(p int) {
		st, cmdline := procStart(p)
		if st == "" {
			return
		}
		tree[p] = st
		for arg := range strings.FieldsSeq(cmdline) {
			for part := range strings.SplitSeq(arg, "=") {
				if rest, ok := strings.CutPrefix(part, tmp); ok {
					top, _, _ := strings.Cut(rest, "/")
					if strings.HasPrefix(top, "armada-") && !strings.HasPrefix(top, "armada-crossplane-ports-") {
						seen[tmp+top] = true
					}
				}
			}
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return tree, dirs
}

// procStart returns a process's start time (field 22 of /proc/<pid>/stat)
// and command line, or "" if it is gone or a zombie.
func procStart(pid int) (string, string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	// A zombie has exited: only its parent has not reaped it (in a
	// container, PID 1 may never reap a daemon such as PostgreSQL's).
	if len(f) < 20 || f[0] == "Z" {
		return "", ""
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return f[19], strings.ReplaceAll(string(cmdline), "\x00", " ")
}

// A pgProcess is a PostgreSQL postmaster: its PID, start time and the
// top-level temporary directory of its data.
type pgProcess struct {
	pid          int
	started, dir string
}

// postmaster finds the postmaster of the PostgreSQL make run's output
// names ("PostgreSQL at 127.0.0.1:PORT").
func postmaster(t *testing.T, out string) pgProcess {
	t.Helper()
	_, rest, ok := strings.Cut(out, "PostgreSQL at 127.0.0.1:")
	port, _, _ := strings.Cut(rest, ",")
	if !ok || port == "" {
		t.Fatalf("make run did not say where PostgreSQL listens; output:\n%s", out)
	}
	entries, _ := filepath.Glob("/proc/[0-9]*")
	for _, e := range entries {
		pid, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		started, cmdline := procStart(pid)
		if !strings.Contains(cmdline, "/postgres -D ") || !strings.Contains(cmdline, " -p "+port+" ") {
			continue
		}
		data := strings.Fields(cmdline[strings.Index(cmdline, " -D ")+4:])[0]
		top, _, _ := strings.Cut(strings.TrimPrefix(data, filepath.Clean(os.TempDir())+"/"), "/")
		return pgProcess{pid: pid, started: started, dir: filepath.Join(os.TempDir(), top)}
	}
	t.Fatalf("no PostgreSQL postmaster listens on port %s", port)
	return pgProcess{}
}

// openPrintedBrowser runs the Chromium command make run printed, as a
// person pastes it into a shell, headless and printing the page as
// rendered: Lookout's UI sends it to the local OpenID Provider's login
// page. Then, in a browser started with the flags that command gives (the
// names it maps, the certificates it trusts), it signs in as the user
// make run names, with the password from the file it names, and fails
// unless the page shows the demo job Succeeded under the Armada's name,
// every answer from Lookout came over HTTP/1.1 and nothing failed in the
// page but what Armada fails by design here.
func openPrintedBrowser(t *testing.T, out string) {
	t.Helper()
	var line string
	for l := range strings.SplitSeq(out, "\n") {
		if _, after, ok := strings.Cut(l, " "+browser.Chromium+" "); ok {
			line = browser.Chromium + " " + after
		}
	}
	if line == "" {
		t.Errorf("make run printed no Chromium command for Lookout; output:\n%s", out)
		return
	}
	login := printedLogin.FindStringSubmatch(out)
	job := printedJob.FindStringSubmatch(out)
	if login == nil || job == nil {
		t.Errorf("make run printed no user to sign in as (%q) or no demo job (%q); output:\n%s", printedLogin, printedJob, out)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// As browser.Start runs Chromium: in a network namespace of its own, so
	// that a real node's links coming and going do not disturb it.
	iso, err := browser.Isolate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer iso.Close()
	// Flags after the URL are flags too. Chromium has printed an empty page
	// now and then on a loaded machine (exit 0, nothing rendered), where a
	// person would reload: up to browser.Starts tries, each failed one
	// logged.
	err = testutil.Retry(ctx, browser.Starts, t.Logf, func(int) error {
		sh := iso.Command(ctx, "bash", "-c", line+" --headless --disable-gpu --virtual-time-budget=30000 --dump-dom")
		sh.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // Its mktemp -d profile, removed with the test's.
		var stderr strings.Builder
		sh.Stderr = &stderr
		began := time.Now()
		dom, err := sh.Output()
		switch {
		case err != nil:
			return errors.Errorf("make run's Chromium command: %v\n%s\nChromium's stderr:\n%s", err, line, testutil.Tail(stderr.String(), 20))
		case strings.Contains(string(dom), `id="username"`) && strings.Contains(string(dom), `id="password"`):
			return nil
		}
		return errors.Errorf("make run's Chromium command shows no login form of the OpenID Provider (after %s); it rendered:\n%s\nChromium's stderr:\n%s",
			time.Since(began).Round(100*time.Millisecond), testutil.Tail(string(dom), 40), testutil.Tail(stderr.String(), 20))
	})
	if err != nil {
		t.Error(err)
	}

	bo, addr, err := browser.ParseCommandLine(line)
	if err != nil {
		t.Fatal(err)
	}
	password, err := os.ReadFile(login[2])
	if err != nil {
		t.Fatalf("the login password make run names: %v", err)
	}
	bo.Dir, bo.Logf = t.TempDir(), t.Logf
	b, err := browser.Start(context.WithoutCancel(ctx), bo)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := &page{t: t, b: b}
	if err := b.Navigate(ctx, addr); err != nil {
		t.Fatal(err)
	}
	p.signIn(login[1], strings.TrimSpace(string(password)))
	// make run applies examples/minimal.yaml: claim armada/armada.
	p.poll("the header names the Armada", jsTitle, has("Armada "+ns+"/"+claimName))
	p.poll("the jobs table shows the demo job "+job[1]+" Succeeded", fmt.Sprintf(jsRow, job[1]), has("demo", "Succeeded"))
	if msg := http11Only(b.Requests(), strings.TrimSuffix(addr, "/")); msg != "" {
		t.Error(msg)
	}
	if u := unexpectedProblems(b.Problems()); len(u) > 0 {
		t.Errorf("the page logged errors or had requests fail:\n%s", strings.Join(u, "\n"))
	}
}

var (
	// printedLogin is the user make run says to sign in as, and the file
	// holding its password.
	printedLogin = regexp.MustCompile(`Sign in as (\S+), password in (\S+) \(`)
	// printedJob is the demo job Lookout showed.
	printedJob = regexp.MustCompile(`Lookout shows job (\S+) SUCCEEDED`)
)
