package node

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// TestArmadaImage: each component's image at the default release is laid
// out as Armada's Dockerfile lays it out (the expectations below are read
// from build/<component>/Dockerfile at v0.22.8): the image name the
// function composes, user armada (1000:2000), WORKDIR /app, the
// entrypoint, the binaries under /app and the baked config files, with
// the loader and libraries the cached binaries need; Lookout's holds its
// web UI (make lookoutui's build) where Lookout serves it from.
func TestArmadaImage(t *testing.T) {
	src, err := ArmadaSourcesFor(t.Context(), armada.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	if src.LookoutUI == "" {
		t.Fatalf("Lookout's UI of %s is not built: run make lookoutui", armada.DefaultVersion)
	}
	index, err := os.ReadFile(filepath.Join(src.LookoutUI, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		Ref, User, WorkingDir string
		Entrypoint            []string
		Executables, Configs  []string
		UI                    string // the path of the UI's index.html, if it is the built one
	}
	cases := map[string]struct {
		c    ArmadaComponent
		want want
	}{
		"Server": {c: ArmadaComponents[0], want: want{
			Ref: "gresearch/armada-server:0.22.8", Entrypoint: []string{"./server"},
			Executables: []string{"/app/server"},
			Configs:     []string{"/app/config/logging.yaml", "/app/config/server/config.yaml"},
		}},
		"Scheduler": {c: ArmadaComponents[1], want: want{
			Ref: "gresearch/armada-scheduler:0.22.8", Entrypoint: []string{"./scheduler"},
			Executables: []string{"/app/scheduler"},
			Configs:     []string{"/app/config/logging.yaml", "/app/config/scheduler/config.yaml"},
		}},
		"SchedulerIngester": {c: ArmadaComponents[2], want: want{
			Ref: "gresearch/armada-scheduler-ingester:0.22.8", Entrypoint: []string{"./scheduleringester"},
			Executables: []string{"/app/scheduleringester"},
			Configs:     []string{"/app/config/logging.yaml", "/app/config/scheduleringester/config.yaml"},
		}},
		"EventIngester": {c: ArmadaComponents[3], want: want{
			Ref: "gresearch/armada-event-ingester:0.22.8", Entrypoint: []string{"./eventingester"},
			Executables: []string{"/app/eventingester"},
			Configs:     []string{"/app/config/eventingester/config.yaml", "/app/config/logging.yaml"},
		}},
		"Lookout": {c: ArmadaComponents[4], want: want{
			Ref: "gresearch/armada-lookout:0.22.8", Entrypoint: []string{"./lookout"},
			Executables: []string{"/app/lookout", "/app/lookoutingester"},
			Configs:     []string{"/app/config/logging.yaml", "/app/config/lookout/config.yaml", "/app/config/lookoutingester/config.yaml"},
			UI:          "/app/internal/lookoutui/build/index.html",
		}},
		"LookoutIngester": {c: ArmadaComponents[5], want: want{
			Ref: "gresearch/armada-lookout-ingester:0.22.8", Entrypoint: []string{"./lookoutingester"},
			Executables: []string{"/app/lookoutingester"},
			Configs:     []string{"/app/config/logging.yaml", "/app/config/lookoutingester/config.yaml"},
		}},
		"Binoculars": {c: ArmadaComponents[6], want: want{
			Ref: "gresearch/armada-binoculars:0.22.8", Entrypoint: []string{"./binoculars"},
			Executables: []string{"/app/binoculars"},
			Configs:     []string{"/app/config/binoculars/config.yaml", "/app/config/logging.yaml"},
		}},
		"Executor": {c: ArmadaComponents[7], want: want{
			Ref: "gresearch/armada-executor:0.22.8", Entrypoint: []string{"./executor"},
			Executables: []string{"/app/executor"},
			Configs:     []string{"/app/config/executor/config.yaml", "/app/config/logging.yaml"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			im, err := ArmadaImage(src, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			got := want{Ref: im.Ref, User: im.Config.User, WorkingDir: im.Config.WorkingDir, Entrypoint: im.Config.Entrypoint}
			files := map[string]File{}
			for _, f := range im.Files {
				files[f.Path] = f
				switch {
				case f.Dir:
				case strings.HasPrefix(f.Path, "/app/config/"):
					got.Configs = append(got.Configs, f.Path)
				case strings.HasPrefix(f.Path, "/app/") && f.Mode == 0o755:
					got.Executables = append(got.Executables, f.Path)
				case strings.HasSuffix(f.Path, "/index.html") && bytes.Equal(f.Data, index):
					got.UI = f.Path
				}
			}
			slices.Sort(got.Configs)
			slices.Sort(got.Executables)
			tc.want.User, tc.want.WorkingDir = "armada", "/app"
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ArmadaImage (-want +got):\n%s", diff)
			}
			// The baked config is the release's own file.
			cfg := "config/" + tc.c.Build + "/config.yaml"
			b, err := os.ReadFile(filepath.Join(src.ModuleDir, cfg))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, files["/app/"+cfg].Data) {
				t.Errorf("/app/%s is not Armada's %s", cfg, cfg)
			}
			if !strings.Contains(string(files["/etc/passwd"].Data), "\narmada:x:1000:2000:") {
				t.Errorf("/etc/passwd has no armada 1000:2000:\n%s", files["/etc/passwd"].Data)
			}
			for _, p := range []string{"/etc/ssl/certs/ca-certificates.crt", "/app"} {
				if _, ok := files[p]; !ok {
					t.Errorf("the image has no %s", p)
				}
			}
			// What each executable needs to start: none for a static one
			// (Armada's releases, and make's builds, have no cgo), its
			// interpreter and libraries for a dynamic one.
			for _, e := range got.Executables {
				for _, p := range needs(t, files[e].Data) {
					if _, ok := files[p]; !ok {
						t.Errorf("the image has no %s, which %s needs", p, e)
					}
				}
			}
		})
	}
}

// needs returns the paths in an image where the loader finds what the ELF
// executable exe needs: its interpreter, and each library it names other
// than the interpreter itself under libDirs' first directory, where
// runtimeLibraries puts them.
func needs(t *testing.T, exe []byte) []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "exe")
	if err := os.WriteFile(f, exe, 0o600); err != nil {
		t.Fatal(err)
	}
	libs, interp, err := elfNeeds(f)
	if err != nil {
		t.Fatal(err)
	}
	if interp == "" {
		return nil
	}
	out := []string{interp}
	for _, l := range libs {
		if l != path.Base(interp) {
			out = append(out, path.Join(libDirs[0], l))
		}
	}
	return out
}

// TestRuntimeLibraries: for a dynamic executable (this machine's bash),
// runtimeLibraries gives its interpreter and glibc at the paths the loader
// looks in, and everything needs finds it needs.
func TestRuntimeLibraries(t *testing.T) {
	files, err := runtimeLibraries([]string{"/bin/bash"})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = len(f.Data) > 0
	}
	exe, err := os.ReadFile("/bin/bash")
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"}, needs(t, exe)...)
	for _, p := range want {
		if !have[p] {
			t.Errorf("runtimeLibraries(/bin/bash) has no %s: got %v", p, have)
		}
	}
}
