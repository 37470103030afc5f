package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGobuildReports runs tools/progress.sh's gobuild with a stand-in go
// that prints what `go build -v` prints (downloads, then packages, on
// stderr) and takes longer than the report interval: gobuild must report
// while it runs, also while it has only downloaded (seen silent for a
// whole cold etcd build on a loaded machine: the report's grep matched
// nothing and pipefail ended the reporter).
func TestGobuildReports(t *testing.T) {
	cases := map[string]struct {
		stderr string
		want   string
	}{
		"OnlyDownloads": {
			stderr: "go: downloading example.com/a v1.0.0",
			want:   "build: 0 packages compiled, 1 modules downloaded [",
		},
		"Compiling": {
			stderr: "go: downloading example.com/a v1.0.0\nexample.com/a/pkg",
			want:   "build: 1 packages compiled, 1 modules downloaded, last example.com/a/pkg [",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fake := "#!/bin/sh\nprintf '%s\\n' '" + strings.ReplaceAll(tc.stderr, "\n", "' '") + "' >&2\nsleep 3\n"
			cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("..", "..", "..", "tools", "progress.sh"), "gobuild", "build", "./x") //nolint:gosec // The repository's own script.
			cmd.Env = append(standIn(t, "go", fake), "PROGRESS_INTERVAL=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("gobuild: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("gobuild printed no report %q while the build ran; output:\n%s", tc.want, out)
			}
			if !strings.Contains(string(out), "build: done in ") {
				t.Errorf("gobuild printed no end line; output:\n%s", out)
			}
		})
	}
}

// TestBuildToolRebuildsOnRaisedPin runs tools/build-tool.sh with a stand-in
// go that writes the binary it is asked for and counts its builds: a
// binary is named by its tool's version only, so it must be built again
// when its wrapper module's go.sum changes (a dependency raised to share
// compiled packages with another tool) and reused while it does not.
func TestBuildToolRebuildsOnRaisedPin(t *testing.T) {
	mod := t.TempDir()
	count := filepath.Join(t.TempDir(), "builds")
	fake := "#!/bin/bash\nwhile [[ $# -gt 0 ]]; do if [[ $1 == -o ]]; then printf '#!/bin/sh\\n' >\"$2\"; chmod +x \"$2\"; fi; shift; done\necho built >>" + count + "\n"
	env := standIn(t, "go", fake)
	out := filepath.Join(t.TempDir(), "tool-v1.0.0")
	steps := []struct {
		gosum      string
		wantBuilds int
	}{
		{gosum: "example.com/a v1.0.0 h1:x\n", wantBuilds: 1},
		{gosum: "example.com/a v1.0.0 h1:x\n", wantBuilds: 1},
		{gosum: "example.com/a v1.1.0 h1:y\n", wantBuilds: 2},
		{gosum: "example.com/a v1.1.0 h1:y\n", wantBuilds: 2},
	}
	for i, s := range steps {
		if err := os.WriteFile(filepath.Join(mod, "go.sum"), []byte(s.gosum), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), filepath.Join("..", "..", "..", "tools", "build-tool.sh"), mod, out, "example.com/a/cmd/tool") //nolint:gosec // The repository's own script.
		cmd.Env = env
		if o, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("step %d: build-tool.sh: %v\n%s", i, err, o)
		}
		if got := lines(t, count); got != s.wantBuilds {
			t.Errorf("step %d (go.sum %q): %d builds so far, want %d", i, s.gosum, got, s.wantBuilds)
		}
	}
}

// TestBuildToolConcurrent runs tools/build-tool.sh twice at once for one
// binary (two worktrees sharing the tool cache), with a stand-in go that
// writes its output and waits until both builds have written theirs:
// each build moves only its own temporary file, so both succeed and
// leave the binary and no temporary file behind.
func TestBuildToolConcurrent(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), []byte("example.com/a v1.0.0 h1:x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := t.TempDir()
	// Each build writes its -o file, then waits (at most 10 s) until two
	// builds have written theirs before it returns.
	fake := "#!/bin/bash\nwhile [[ $# -gt 0 ]]; do if [[ $1 == -o ]]; then printf '#!/bin/sh\\n' >\"$2\"; chmod +x \"$2\"; fi; shift; done\n" +
		"touch " + done + "/$$\nfor i in $(seq 100); do [[ $(ls " + done + " | wc -l) -ge 2 ]] && exit 0; sleep 0.1; done\n"
	env := standIn(t, "go", fake)
	bin := t.TempDir()
	out := filepath.Join(bin, "tool-v1.0.0")
	errs := make(chan error, 2)
	outs := make(chan []byte, 2)
	for range 2 {
		go func() {
			cmd := exec.CommandContext(t.Context(), filepath.Join("..", "..", "..", "tools", "build-tool.sh"), mod, out, "example.com/a/cmd/tool") //nolint:gosec // The repository's own script.
			cmd.Env = env
			o, err := cmd.CombinedOutput()
			outs <- o
			errs <- err
		}()
	}
	for range 2 {
		if o, err := <-outs, <-errs; err != nil {
			t.Errorf("build-tool.sh beside another build of the same binary: %v\n%s", err, o)
		}
	}
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"tool-v1.0.0", "tool-v1.0.0.gosum"}, names); diff != "" {
		t.Errorf("the tool cache after two builds (-want +got):\n%s", diff)
	}
}

// TestPulsarReassemblesOnChangedPom runs tools/pulsar/build.sh, from a
// copy of its directory, with a stand-in mvn that counts its runs: the
// same pom keeps the assembled jars, a changed one assembles them again.
func TestPulsarReassemblesOnChangedPom(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"build.sh", "settings.xml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "tools", "pulsar", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	count := filepath.Join(t.TempDir(), "runs")
	fake := "#!/bin/bash\nfor a in \"$@\"; do if [[ $a == -DoutputDirectory=* ]]; then mkdir -p \"${a#*=}\"; touch \"${a#*=}/x.jar\"; fi; done\necho ran >>" + count + "\n"
	env := append(standIn(t, "mvn", fake), "PULSAR_BIN_ROOT="+t.TempDir(), "ARMADA_CROSSPLANE_CACHE="+t.TempDir())
	steps := []struct {
		pom      string
		wantRuns int
	}{
		{pom: "<project>a</project>\n", wantRuns: 1},
		{pom: "<project>a</project>\n", wantRuns: 1},
		{pom: "<project>b</project>\n", wantRuns: 2},
		{pom: "<project>b</project>\n", wantRuns: 2},
	}
	for i, s := range steps {
		if err := os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(s.pom), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "build.sh"), "4.0.0") //nolint:gosec // A copy of the repository's own script.
		cmd.Env = env
		if o, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("step %d: build.sh: %v\n%s", i, err, o)
		}
		if got := lines(t, count); got != s.wantRuns {
			t.Errorf("step %d (pom %q): mvn ran %d times so far, want %d", i, s.pom, got, s.wantRuns)
		}
	}
}

// lines counts the lines of a stand-in's log: one a run.
func lines(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// standIn writes script as an executable named name (go, mvn) in a new
// directory and returns the environment that puts it first on PATH, with no
// timings file.
func standIn(t *testing.T, name, script string) []string {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "TIMINGS_FILE=")
}
