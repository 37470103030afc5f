package docscheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

const root = "../../.."

// pending are pages other changes add; links to them are tolerated while
// the files do not exist. Empty this list once they are merged.
var pending = map[string]bool{}

func pages(t *testing.T) []Page {
	t.Helper()
	ps, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestDocsLinks checks every relative link and anchor in README.md and
// docs/ resolves.
func TestDocsLinks(t *testing.T) {
	ps := pages(t)
	n := 0
	for _, p := range ps {
		n += len(p.Links)
	}
	for _, b := range CheckLinks(root, ps, pending) {
		t.Errorf("%s:%d: link %q: %s", b.Page, b.Line, b.Target, b.Why)
	}
	for p := range pending {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Logf("tolerated while missing (pending): %s", p)
		}
	}
	t.Logf("%d links in %d pages", n, len(ps))
}

// TestDocsTimeless refuses dates and commit hashes in docs/guides/: a guide
// says what is true now; how it got there lives in git.
func TestDocsTimeless(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		if !strings.HasPrefix(p.Path, "docs/guides/") {
			continue
		}
		n++
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p.Path)))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range Stamps(string(b)) {
			t.Errorf("%s:%d: %q: no dates or commit hashes in a guide (history lives in git)", p.Path, s.Line, s.Text)
		}
	}
	if n == 0 {
		t.Fatal("no page under docs/guides/: the walk is broken")
	}
}

// apiGroups are the groups whose objects in the docs are validated
// against this project's XRDs and CRDs.
var apiGroups = []string{"platform.armadaproject.io/", "armada.m.armadaproject.io/"}

// TestDocsYAML validates every claim, XR and provider-armada object in a
// YAML block of README.md and docs/ against the XRDs' and CRDs' OpenAPI
// schemas and CEL rules, with the real `crossplane resource validate`, one
// block at a time so that a failure names its page and line. A YAML block
// that does not parse fails too.
func TestDocsYAML(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(root, "package", "xarmada")
	exts := []string{
		filepath.Join(x, "definition.yaml"), filepath.Join(x, "queue-definition.yaml"),
		filepath.Join(x, "namespaced-definition.yaml"), filepath.Join(x, "namespaced-queue-definition.yaml"),
		filepath.Join(root, "package", "provider", "crds"),
		filepath.Join(root, "cluster", "tenancy"),
	}
	n := 0
	for _, p := range pages(t) {
		for _, b := range p.Blocks {
			if b.Lang != "yaml" && b.Lang != "yml" {
				continue
			}
			where := fmt.Sprintf("%s:%d", p.Path, b.Line)
			docs, err := objects(b.Text)
			if err != nil {
				t.Errorf("%s: YAML block does not parse: %v", where, err)
				continue
			}
			if len(docs) == 0 {
				continue
			}
			n += len(docs)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			f := filepath.Join(t.TempDir(), "block.yaml")
			if err := os.WriteFile(f, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := tools.Validate(ctx, exts, f, nil); err != nil {
				t.Errorf("%s: YAML block does not validate against the XRDs:\n%s", where, out)
			}
			cancel()
		}
	}
	if n == 0 {
		t.Fatal("no claim or XR found in any YAML block: the parser is broken")
	}
	t.Logf("%d objects validated", n)
}

// objects returns the documents of a YAML block that belong to this
// project's API groups.
func objects(text string) ([]string, error) {
	docs, err := manifest.Documents([]byte(text))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, doc := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, err
		}
		for _, g := range apiGroups {
			if strings.HasPrefix(head.APIVersion, g) {
				out = append(out, string(doc))
			}
		}
	}
	return out, nil
}

// TestDocsCommands runs every command block marked runnable ("```sh
// runnable") from the repository root, as a reader would paste it, with
// the pinned Crossplane CLI on PATH as `crossplane`, CROSSPLANE_BINARY the
// pinned core (so render needs no Docker), PORT a free port and TMPDIR a
// fresh directory: the variables the docs name for these.
func TestDocsCommands(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(tools.CLI, filepath.Join(bin, "crossplane")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pages(t) {
		for _, b := range p.Blocks {
			if !b.Runnable() {
				continue
			}
			n++
			where := fmt.Sprintf("%s:%d", p.Path, b.Line)
			t.Run(strings.NewReplacer("/", "_", ":", "_").Replace(where), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				ports, err := freeport.Reserve(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.Text) //nolint:gosec // Runs the docs' own blocks, as a reader would.
				cmd.Dir = root
				cmd.Env = append(os.Environ(),
					"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
					"CROSSPLANE_BINARY="+tools.Core,
					"PORT="+strconv.Itoa(ports[0]),
					"TMPDIR="+t.TempDir(),
				)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Errorf("%s: runnable block failed: %v\n%s\n%s", where, err, b.Text, out)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no runnable command block found: the parser is broken")
	}
}

// TestDocsDiagrams re-renders every diagram source with Graphviz and
// fails if the committed SVG differs: run make docs-diagrams.
func TestDocsDiagrams(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatal("Graphviz's dot is not installed: run make system-deps")
	}
	srcs, err := filepath.Glob(filepath.Join(root, "docs", "diagrams", "*.dot"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no diagram sources in docs/diagrams: %v", err)
	}
	for _, src := range srcs {
		want, err := exec.CommandContext(context.Background(), dot, "-Tsvg", src).Output() //nolint:gosec // The repository's own files.
		if err != nil {
			t.Fatalf("dot %s: %v", src, err)
		}
		svg := strings.TrimSuffix(src, ".dot") + ".svg"
		got, err := os.ReadFile(svg)
		if err != nil {
			t.Errorf("%s has no rendered SVG: run make docs-diagrams", src)
			continue
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s is stale: run make docs-diagrams and commit it", svg)
		}
	}
}

var (
	reasonConst = regexp.MustCompile(`Reason\w*\s*=\s*"([A-Za-z]+)"`)
	reasonCall  = regexp.MustCompile(`response\.Condition(?:True|False)\(rsp,\s*"[A-Za-z]+",\s*"([A-Za-z]+)"\)`)
)

// TestDocsReasons checks that the troubleshooting guide explains every
// condition reason the function sets (its Reason constants and the
// reasons it passes to response.Condition*).
func TestDocsReasons(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guides", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, dir := range []string{"armada", "function", "teamqueue"} {
		files, err := filepath.Glob(filepath.Join(root, "internal", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, re := range []*regexp.Regexp{reasonConst, reasonCall} {
				for _, m := range re.FindAllStringSubmatch(string(b), -1) {
					reasons[m[1]] = f
				}
			}
		}
	}
	if len(reasons) == 0 {
		t.Fatal("no condition reason found in the source: the patterns are broken")
	}
	names := make([]string, 0, len(reasons))
	for r := range reasons {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		if !bytes.Contains(guide, []byte("| `"+r+"` |")) {
			t.Errorf("condition reason %q (%s) is not in a row of docs/guides/troubleshooting.md", r, reasons[r])
		}
	}
	t.Logf("%d reasons: %s", len(names), strings.Join(names, ", "))
}

// TestDocsScreenshots checks that the Lookout screenshots in
// docs/guides/images show the UI of the default Armada release: make
// docs-screenshots writes, beside them, the release TestLookoutUI
// composed, and a release bump leaves it stale until they are taken
// again. Every image a guide shows must exist.
func TestDocsScreenshots(t *testing.T) {
	dir := filepath.Join(root, "docs", "guides", "images")
	b, err := os.ReadFile(filepath.Join(dir, jobflow.ScreenshotsReleaseFile))
	if err != nil {
		t.Fatalf("cannot read the screenshots' release (%v): run make docs-screenshots", err)
	}
	if want := jobflow.ScreenshotsRelease(armada.DefaultVersion); string(b) != want {
		t.Errorf("the Lookout screenshots show %q, the default release is %q: run make docs-screenshots", strings.TrimSpace(string(b)), strings.TrimSpace(want))
	}
	n := 0
	for _, p := range pages(t) {
		for _, l := range p.Links {
			if !strings.HasPrefix(p.Path, "docs/guides/") || !strings.HasPrefix(l.Target, "images/lookout-") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(l.Target, "images/"))); err != nil {
				t.Errorf("%s:%d shows %s: %v", p.Path, l.Line, l.Target, err)
			}
		}
	}
	if n == 0 {
		t.Error("no guide shows a Lookout screenshot (images/lookout-*.png): the walk is broken or the pictures are gone")
	}
}
