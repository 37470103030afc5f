package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
			bin := t.TempDir()
			fake := "#!/bin/sh\nprintf '%s\\n' '" + strings.ReplaceAll(tc.stderr, "\n", "' '") + "' >&2\nsleep 3\n"
			if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil { //nolint:gosec // An executable stand-in.
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("..", "..", "..", "tools", "progress.sh"), "gobuild", "build", "./x") //nolint:gosec // The repository's own script.
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "PROGRESS_INTERVAL=1", "TIMINGS_FILE=")
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
