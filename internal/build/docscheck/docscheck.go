// Package docscheck reads the project's Markdown (README.md and docs/) so
// that tests can check it works when pasted: its fenced blocks (YAML
// validated against the XRDs, runnable command blocks run), its headings'
// anchors and its relative links.
package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Block is one fenced code block.
type Block struct {
	// Lang is the first word of the info string (yaml, sh), Flags the
	// rest (runnable).
	Lang  string
	Flags []string
	Text  string
	// Line is the 1-based line of the opening fence.
	Line int
}

// Runnable reports whether the block is marked to be run by the docs
// checks: a fence such as "```sh runnable".
func (b Block) Runnable() bool { return slices.Contains(b.Flags, "runnable") }

// A Link is one Markdown link or image target outside code.
type Link struct {
	Target string
	Line   int
}

// A Page is one parsed Markdown file.
type Page struct {
	// Path is relative to the repository root, with slashes.
	Path    string
	Blocks  []Block
	Links   []Link
	Anchors map[string]bool
}

var (
	fence      = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*(.*)$")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	link       = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Parse reads one Markdown document.
func Parse(path, text string) Page {
	p := Page{Path: path, Anchors: map[string]bool{}}
	seen := map[string]int{}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := fence.FindStringSubmatch(l); m != nil {
			indent, marker := len(m[1]), m[2]
			info := strings.Fields(m[3])
			b := Block{Line: i + 1}
			if len(info) > 0 {
				b.Lang, b.Flags = info[0], info[1:]
			}
			var body []string
			for i++; i < len(lines); i++ {
				if t := strings.TrimSpace(lines[i]); len(t) >= len(marker) && strings.Trim(t, marker[:1]) == "" {
					break
				}
				body = append(body, dedent(lines[i], indent))
			}
			b.Text = strings.Join(body, "\n") + "\n"
			p.Blocks = append(p.Blocks, b)
			continue
		}
		if m := heading.FindStringSubmatch(l); m != nil {
			a := Anchor(m[1])
			if n := seen[a]; n > 0 {
				p.Anchors[a+"-"+strconv.Itoa(n)] = true
			} else {
				p.Anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			p.Anchors[m[1]] = true
		}
		for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			p.Links = append(p.Links, Link{Target: m[1], Line: i + 1})
		}
	}
	return p
}

func dedent(l string, n int) string {
	for i := 0; i < n && strings.HasPrefix(l, " "); i++ {
		l = l[1:]
	}
	return l
}

// Anchor is the anchor GitHub gives a heading: lower case, inline code
// marks and punctuation other than '-' and '_' dropped, each space a '-'.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Pages reads README.md and every Markdown file under docs/ of the
// repository at root, in path order.
func Pages(root string) ([]Page, error) {
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, errors.Wrap(err, "cannot list docs")
	}
	sort.Strings(paths[1:])
	pages := make([]Page, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p))) //nolint:gosec // The repository's own files.
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", p)
		}
		pages = append(pages, Parse(p, string(b)))
	}
	return pages, nil
}

// A Broken link is one whose file or anchor does not exist.
type Broken struct {
	Page   string
	Line   int
	Target string
	Why    string
}

// CheckLinks resolves every relative link of every page: the file (or
// directory) must exist under root, and an anchor must be a heading of the
// target page. Links to other sites are not followed. Targets in pending
// (paths relative to root) are tolerated while they do not exist: pages
// being written elsewhere; once they exist they are checked like any.
func CheckLinks(root string, pages []Page, pending map[string]bool) []Broken {
	byPath := map[string]Page{}
	for _, p := range pages {
		byPath[p.Path] = p
	}
	var broken []Broken
	for _, p := range pages {
		for _, l := range p.Links {
			if strings.Contains(l.Target, "://") || strings.HasPrefix(l.Target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(l.Target, "#")
			target := p.Path
			if file != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.Path), file)))
			}
			if strings.HasPrefix(target, "../") {
				broken = append(broken, Broken{p.Path, l.Line, l.Target, "points outside the repository"})
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
				if !pending[target] {
					broken = append(broken, Broken{p.Path, l.Line, l.Target, "no such file " + target})
				}
				continue
			}
			if frag == "" {
				continue
			}
			tp, ok := byPath[target]
			if !ok {
				broken = append(broken, Broken{p.Path, l.Line, l.Target, "an anchor into " + target + ", which is not a checked Markdown page"})
				continue
			}
			if !tp.Anchors[frag] {
				broken = append(broken, Broken{p.Path, l.Line, l.Target, "no heading with anchor #" + frag + " in " + target})
			}
		}
	}
	return broken
}

// A Stamp is a date or a commit hash in a page: history, which lives in
// git, not in a guide that says what is true now.
type Stamp struct {
	Line int
	Text string
}

var (
	date = regexp.MustCompile(`\b\d{4}-[01]\d-[0-3]\d\b`)
	hash = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
)

// Stamps finds the dates (2026-12-03) and commit hashes (seven to forty
// hex digits with at least one digit and one letter) in text. An RFC 3339
// timestamp (a date followed by T and the time) is a field's value in an
// example, and hex joined to a name by a hyphen is part of a composed
// name (armada-pulsar-topics-bdd6c885); neither is a stamp.
func Stamps(text string) []Stamp {
	var out []Stamp
	for i, l := range strings.Split(text, "\n") {
		for _, m := range date.FindAllStringIndex(l, -1) {
			if rest := l[m[1]:]; len(rest) >= 2 && rest[0] == 'T' && rest[1] >= '0' && rest[1] <= '9' {
				continue
			}
			out = append(out, Stamp{Line: i + 1, Text: l[m[0]:m[1]]})
		}
		for _, m := range hash.FindAllStringIndex(l, -1) {
			h := l[m[0]:m[1]]
			if !strings.ContainsAny(h, "0123456789") || !strings.ContainsAny(h, "abcdef") {
				continue
			}
			if (m[0] > 0 && l[m[0]-1] == '-') || (m[1] < len(l) && l[m[1]] == '-') {
				continue
			}
			out = append(out, Stamp{Line: i + 1, Text: h})
		}
	}
	return out
}
