package jobflow

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMakeRun runs what `make run` runs (internal/cmd/run, its flags as
// the Makefile passes them, the binaries already built): the local
// control plane, the default claim and its composed tree, then the
// composed Armada for real with one demo job. It fails unless the demo
// job's events end Succeeded and Lookout shows it, and unless Ctrl-C
// (SIGINT) then stops every process it started and removes every
// temporary directory.
func TestMakeRun(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "run")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./internal/cmd/run") //nolint:gosec // Builds the command under test.
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./internal/cmd/run: %v\n%s", err, out)
	}
	// Everything the command writes goes under tmp, so that what is left
	// after Ctrl-C shows. Not under t.TempDir(), whose 0700 parent keeps
	// out the postgres user PostgreSQL runs as.
	tmp, err := os.MkdirTemp("", "make-run-") //nolint:usetesting // See above.
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil { //nolint:gosec // PostgreSQL's user must reach its data directory below.
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin) //nolint:gosec // The command under test.
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); _ = pw.Close() }()

	var (
		mu     sync.Mutex
		out    strings.Builder
		marks  = map[string]time.Duration{}
		lines  = make(chan string, 1024)
		wanted = map[string]string{
			"tree":        "XArmada ",
			"succeeded":   "The demo job succeeded",
			"interrupted": "Running until interrupted",
		}
	)
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			l := s.Text()
			mu.Lock()
			fmt.Fprintf(&out, "%7.1fs %s\n", time.Since(start).Seconds(), l)
			for k, prefix := range wanted {
				if _, ok := marks[k]; !ok && strings.HasPrefix(l, prefix) {
					marks[k] = time.Since(start)
				}
			}
			mu.Unlock()
			select {
			case lines <- l:
			default:
			}
		}
		close(lines)
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	deadline := time.After(25 * time.Minute)
	for waiting := true; waiting; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("make run's command ended before the demo job succeeded (%v); output:\n%s", <-exited, output())
			}
			waiting = !strings.HasPrefix(l, wanted["interrupted"])
		case <-deadline:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("the demo job did not succeed within 25 minutes; output:\n%s", output())
		}
	}
	mu.Lock()
	_, ok := marks["succeeded"]
	t.Logf("make run: composed tree at %s, demo job succeeded at %s", marks["tree"].Round(time.Second), marks["succeeded"].Round(time.Second))
	mu.Unlock()
	if !ok {
		t.Fatalf("make run's command is running on without saying the demo job succeeded; output:\n%s", output())
	}
	if !strings.Contains(output(), "Succeeded ") {
		t.Errorf("make run printed no Succeeded event of the demo job; output:\n%s", output())
	}

	// Ctrl-C: the terminal signals the whole foreground process group.
	stopped := time.Now()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after Ctrl-C, make run's command exited with %v, want 0; output:\n%s", err, output())
		}
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("make run's command had not exited 2 minutes after Ctrl-C; output:\n%s", output())
	}
	t.Logf("Ctrl-C → exited in %s", time.Since(stopped).Round(100*time.Millisecond))
	if left := processesUnder(t, tmp); len(left) > 0 {
		t.Errorf("after Ctrl-C, processes started by make run are still running:\n%s", strings.Join(left, "\n"))
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("after Ctrl-C, make run left temporary files in %s: %v", tmp, names)
	}
}

// processesUnder lists the processes whose command line or working
// directory is under dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline")) //nolint:gosec // /proc.
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		line := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(line, dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, filepath.Base(p)+": "+line)
		}
	}
	return out
}
