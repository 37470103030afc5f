package docscheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	cases := map[string]struct {
		reason string
		text   string
		want   Page
	}{
		"BlocksHeadingsLinks": {
			reason: "Fenced blocks keep their language, flags and dedented text; headings give GitHub's anchors (duplicates numbered); links outside code and code spans are found.",
			text: "# Title\n\nSee [a](a.md#x) and `[not](a link)`.\n\n" +
				"1. Step:\n   ```sh runnable\n   make help\n   ```\n\n" +
				"## What `cluster/rbac` grants\n\n## Same\n\n## Same\n\n" +
				"```yaml\n# [not a link](x.md)\nkind: X\n```\n![pic](d.svg)\n",
			want: Page{
				Path: "p.md",
				Blocks: []Block{
					{Lang: "sh", Flags: []string{"runnable"}, Text: "make help\n", Line: 6},
					{Lang: "yaml", Flags: []string{}, Text: "# [not a link](x.md)\nkind: X\n", Line: 16},
				},
				Links: []Link{{Target: "a.md#x", Line: 3}, {Target: "d.svg", Line: 20}},
				Anchors: map[string]bool{
					"title": true, "what-clusterrbac-grants": true, "same": true, "same-1": true,
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Parse("p.md", tc.text)); diff != "" {
				t.Errorf("%s\nParse(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAnchor(t *testing.T) {
	cases := map[string]struct {
		heading, want string
	}{
		"Code":        {heading: "provider-kubernetes must run with `--sanitize-secrets`", want: "provider-kubernetes-must-run-with---sanitize-secrets"},
		"Punctuation": {heading: "Backing services: PostgreSQL, Redis and Pulsar", want: "backing-services-postgresql-redis-and-pulsar"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Anchor(tc.heading)); diff != "" {
				t.Errorf("Anchor(%q): -want +got:\n%s", tc.heading, diff)
			}
		})
	}
}

func TestCheckLinks(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"README.md", "docs/a.md", "docs/pic.svg"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pages := []Page{
		Parse("README.md", "# Top\n[ok](docs/a.md#there) [ok](#top) [web](https://example.org/x#y) [pending](docs/later.md)\n"+
			"[gone](docs/b.md) [anchor](docs/a.md#nowhere) [out](../x.md) [svg](docs/pic.svg#frag) [self](#nope)\n"),
		Parse("docs/a.md", "## There\n![pic](pic.svg) [up](../README.md#top)\n"),
	}
	want := []Broken{
		{Page: "README.md", Line: 3, Target: "docs/b.md", Why: "no such file docs/b.md"},
		{Page: "README.md", Line: 3, Target: "docs/a.md#nowhere", Why: "no heading with anchor #nowhere in docs/a.md"},
		{Page: "README.md", Line: 3, Target: "../x.md", Why: "points outside the repository"},
		{Page: "README.md", Line: 3, Target: "docs/pic.svg#frag", Why: "an anchor into docs/pic.svg, which is not a checked Markdown page"},
		{Page: "README.md", Line: 3, Target: "#nope", Why: "no heading with anchor #nope in README.md"},
	}
	got := CheckLinks(dir, pages, map[string]bool{"docs/later.md": true})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckLinks(): -want +got:\n%s", diff)
	}
}

func TestStamps(t *testing.T) {
	cases := map[string]struct {
		reason string
		text   string
		want   []Stamp
	}{
		"DatesAndHashes": {
			reason: "A date and a commit hash in prose are stamps, each with its line.",
			text:   "Measured on 2026-12-03.\nFixed in `402b64f`, see e601884 and 9d02af3667a0b1c2.\n",
			want:   []Stamp{{Line: 1, Text: "2026-12-03"}, {Line: 2, Text: "402b64f"}, {Line: 2, Text: "e601884"}, {Line: 2, Text: "9d02af3667a0b1c2"}},
		},
		"NotStamps": {
			reason: "Timestamps in examples, hex in composed names, words and numbers are not stamps.",
			text:   "targetTime: \"2026-12-01T10:00:00Z\"\narmada-pulsar-topics-bdd6c885 and 87f156-x\nfacade 1234567 deadbeef\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Stamps(tc.text)); diff != "" {
				t.Errorf("%s\nStamps(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
