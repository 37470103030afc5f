// Package metricnames indexes the Prometheus metric names Go source
// registers with client_golang, so that rules and dashboards can be
// checked to use only metrics Armada's binaries export.
package metricnames

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/crossplane/function-sdk-go/errors"

	"github.com/armadaproject/armada-crossplane/internal/providers"
)

// Sources are the modules whose registered metrics Armada's
// binaries export, at the versions tools/armada/go.mod builds them from:
// Armada itself and the gRPC middleware that instruments its clients and
// servers.
var Sources = []string{
	"github.com/armadaproject/armada",
	"github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus",
}

// PrometheusOwn are series Prometheus itself creates for every target.
var PrometheusOwn = map[string]bool{"up": true}

// Index is what a scan of Go source finds registered with
// client_golang: complete names, and names built as a prefix parameter
// plus a constant suffix together with every constant that could be such
// a prefix.
type Index struct {
	full, suffixes, prefixes map[string]bool
}

// Scan indexes the metric names registered in the non-test Go
// files under dirs: the Name (with Namespace and Subsystem) of every
// prometheus.*Opts literal and the name of every prometheus.NewDesc,
// evaluating string constants across packages by name.
func Scan(dirs ...string) (*Index, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return errors.Wrapf(err, "cannot parse %s", path)
			}
			files = append(files, f)
			return nil
		})
		if err != nil {
			return nil, errors.Wrapf(err, "cannot scan %s", d)
		}
	}
	consts := map[string][]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec) //nolint:forcetypeassert // const specs are value specs.
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						consts[n.Name] = append(consts[n.Name], vs.Values[i])
					}
				}
			}
		}
	}
	x := &Index{full: map[string]bool{}, suffixes: map[string]bool{}, prefixes: map[string]bool{}}
	var eval func(e ast.Expr, depth int) []string
	eval = func(e ast.Expr, depth int) []string {
		if depth > 8 {
			return nil
		}
		switch e := e.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
				return []string{s}
			}
		case *ast.ParenExpr:
			return eval(e.X, depth+1)
		case *ast.Ident:
			return evalAll(consts[e.Name], eval, depth)
		case *ast.SelectorExpr:
			return evalAll(consts[e.Sel.Name], eval, depth)
		case *ast.BinaryExpr:
			if e.Op != token.ADD {
				return nil
			}
			var out []string
			for _, l := range eval(e.X, depth+1) {
				for _, r := range eval(e.Y, depth+1) {
					out = append(out, l+r)
				}
			}
			return out
		case *ast.CallExpr:
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "BuildFQName" && len(e.Args) == 3 {
				return fqNames(eval(e.Args[0], depth+1), eval(e.Args[1], depth+1), eval(e.Args[2], depth+1))
			}
		}
		return nil
	}
	for _, vs := range consts {
		for _, s := range evalAll(vs, eval, 0) {
			if strings.HasSuffix(s, "_") {
				x.prefixes[s] = true
			}
		}
	}
	// addName records a registered name expression: complete, or a
	// parameter plus a constant suffix.
	// addName records a registered name expression: complete, or one of
	// the enclosing function's parameters plus a constant suffix.
	addName := func(ns, sub []string, name ast.Expr, params map[string]bool) {
		if b, ok := name.(*ast.BinaryExpr); ok && b.Op == token.ADD {
			if id, ok := b.X.(*ast.Ident); ok && params[id.Name] {
				for _, s := range eval(b.Y, 0) {
					x.suffixes[s] = true
				}
				return
			}
		}
		for _, n := range fqNames(ns, sub, eval(name, 0)) {
			x.full[n] = true
		}
	}
	inspect := func(root ast.Node, params map[string]bool) {
		ast.Inspect(root, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if !strings.HasSuffix(typeName(n.Type), "Opts") {
					return true
				}
				fields := map[string]ast.Expr{}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok {
							fields[k.Name] = kv.Value
						}
					}
				}
				if name, ok := fields["Name"]; ok {
					addName(optional(eval, fields["Namespace"]), optional(eval, fields["Subsystem"]), name, params)
				}
			case *ast.CallExpr:
				if typeName(n.Fun) == "NewDesc" && len(n.Args) > 0 {
					addName([]string{""}, []string{""}, n.Args[0], params)
				}
				for _, a := range n.Args {
					for _, s := range eval(a, 0) {
						if strings.HasSuffix(s, "_") {
							x.prefixes[s] = true
						}
					}
				}
			}
			return true
		})
	}
	for _, f := range files {
		for _, d := range f.Decls {
			params := map[string]bool{}
			if fd, ok := d.(*ast.FuncDecl); ok {
				for _, p := range fd.Type.Params.List {
					for _, n := range p.Names {
						params[n.Name] = true
					}
				}
			}
			inspect(d, params)
		}
	}
	return x, nil
}

func evalAll(es []ast.Expr, eval func(ast.Expr, int) []string, depth int) []string {
	var out []string
	for _, e := range es {
		out = append(out, eval(e, depth+1)...)
	}
	return out
}

// optional evaluates an optional Namespace or Subsystem: absent is "".
func optional(eval func(ast.Expr, int) []string, e ast.Expr) []string {
	if e == nil {
		return []string{""}
	}
	return eval(e, 0)
}

// fqNames joins every combination as prometheus.BuildFQName does.
func fqNames(ns, sub, names []string) []string {
	var out []string
	for _, a := range ns {
		for _, b := range sub {
			for _, c := range names {
				var parts []string
				for _, p := range []string{a, b, c} {
					if p != "" {
						parts = append(parts, p)
					}
				}
				out = append(out, strings.Join(parts, "_"))
			}
		}
	}
	return out
}

// typeName is the last identifier of a type or function expression.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// Lookup says how a series name is registered, or "" if it is not. A
// histogram's _bucket, _sum and _count series belong to its name.
func (x *Index) Lookup(name string) string {
	for _, n := range []string{name, strings.TrimSuffix(name, "_bucket"), strings.TrimSuffix(name, "_sum"), strings.TrimSuffix(name, "_count")} {
		if x.full[n] {
			return "registered as " + n
		}
		for s := range x.suffixes {
			if p, ok := strings.CutSuffix(n, s); ok && x.prefixes[p] {
				return "registered as prefix " + p + " + " + s
			}
		}
	}
	return ""
}

// Counts are the index's sizes: complete names, prefix+suffix templates
// and candidate prefixes.
func (x *Index) Counts() (full, templates, prefixes int) {
	return len(x.full), len(x.suffixes), len(x.prefixes)
}

// SourceDirs are the module cache directories of Sources at the versions
// the go.mod at goMod (tools/armada's, which Armada's binaries are built
// from) requires, downloaded if needed.
func SourceDirs(ctx context.Context, goMod string) ([]string, error) {
	b, err := os.ReadFile(goMod) //nolint:gosec // The caller's go.mod.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read go.mod")
	}
	mf, err := modfile.Parse(goMod, b, nil)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse go.mod")
	}
	dirs := make([]string, 0, len(Sources))
	for _, m := range Sources {
		version := ""
		for _, r := range mf.Require {
			if r.Mod.Path == m {
				version = r.Mod.Version
			}
		}
		if version == "" {
			return nil, errors.Errorf("cannot find %s in %s", m, goMod)
		}
		d, err := providers.ModuleDir(ctx, m, version)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}
