// Package metricnames indexes the Prometheus metric names Go source
// registers with client_golang, so that rules and dashboards can be
// checked to use only metrics Armada's binaries export.
package metricnames

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Sources are the modules whose registered metrics Armada's
// binaries export, at the versions Armada's go.mod builds them from:
// Armada itself (first), the gRPC middleware that instruments its clients and
// servers, and go-redis' collector of the server's Redis pool.
var Sources = []string{
	"github.com/armadaproject/armada",
	"github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus",
	"github.com/redis/go-redis/extra/redisprometheus/v9",
}

// PrometheusOwn are series Prometheus itself creates for every target.
var PrometheusOwn = map[string]bool{"up": true}

// KubeStateMetrics are the kube-state-metrics series the restore drill's
// alerts read, each listed STABLE in kube-state-metrics'
// docs/metrics/workload/cronjob-metrics.md (not scanned: kube-state-metrics
// builds its names with its own generator, not client_golang).
var KubeStateMetrics = map[string]bool{
	"kube_cronjob_created":                     true,
	"kube_cronjob_status_active":               true,
	"kube_cronjob_status_last_schedule_time":   true,
	"kube_cronjob_status_last_successful_time": true,
}

// Index is what a scan of Go source finds registered with
// client_golang: complete names, and names built as a prefix parameter
// plus a constant suffix together with every constant that could be such
// a prefix.
type Index struct {
	// full are complete names.
	full map[string]bool
	// templates are names with a parameter in the middle: left and
	// right are constant.
	templates map[template]bool
	// values are every constant string and constant call argument (and
	// consecutive arguments joined with "_", as namespace and subsystem
	// are), which a template's parameter may be.
	values map[string]bool
}

// template is a name registered as left + <parameter> + right.
type template struct{ left, right string }

// Scan indexes the metric names registered in the non-test Go
// files under dirs: the Name (with Namespace and Subsystem) of every
// prometheus.*Opts literal and the name of every prometheus.NewDesc,
// evaluating string constants across packages by name.
func Scan(dirs ...string) (*Index, error) {
	files, err := parseDirs(dirs)
	if err != nil {
		return nil, err
	}
	sc := &scanner{consts: constants(files), x: &Index{full: map[string]bool{}, templates: map[template]bool{}, values: map[string]bool{}}}
	for _, vs := range sc.consts {
		sc.addValues(sc.evalAll(vs, 0))
	}
	for _, f := range files {
		for _, d := range f.Decls {
			sc.inspect(d, params(d))
		}
	}
	return sc.x, nil
}

// parseDirs parses every non-test Go file under dirs.
func parseDirs(dirs []string) ([]*ast.File, error) {
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
	return files, nil
}

// constants are every const declaration's value expressions, by name.
func constants(files []*ast.File) map[string][]ast.Expr {
	consts := map[string][]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						consts[n.Name] = append(consts[n.Name], vs.Values[i])
					}
				}
			}
		}
	}
	return consts
}

// params are a function declaration's parameter names.
func params(d ast.Decl) map[string]bool {
	out := map[string]bool{}
	if fd, ok := d.(*ast.FuncDecl); ok {
		for _, p := range fd.Type.Params.List {
			for _, n := range p.Names {
				out[n.Name] = true
			}
		}
	}
	return out
}

// scanner fills an Index.
type scanner struct {
	consts map[string][]ast.Expr
	x      *Index
}

// maxDepth bounds constant evaluation, against cycles.
const maxDepth = 8

// eval evaluates a string expression built from literals, constants
// (looked up by name), sums and BuildFQName; nil if it cannot.
func (sc *scanner) eval(e ast.Expr, depth int) []string {
	if depth > maxDepth {
		return nil
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
			return []string{s}
		}
	case *ast.ParenExpr:
		return sc.eval(e.X, depth+1)
	case *ast.Ident:
		return sc.evalAll(sc.consts[e.Name], depth)
	case *ast.SelectorExpr:
		return sc.evalAll(sc.consts[e.Sel.Name], depth)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return nil
		}
		var out []string
		for _, l := range sc.eval(e.X, depth+1) {
			for _, r := range sc.eval(e.Y, depth+1) {
				out = append(out, l+r)
			}
		}
		return out
	case *ast.CallExpr:
		if typeName(e.Fun) == "BuildFQName" && len(e.Args) == 3 {
			return fqNames(sc.eval(e.Args[0], depth+1), sc.eval(e.Args[1], depth+1), sc.eval(e.Args[2], depth+1))
		}
	}
	return nil
}

func (sc *scanner) evalAll(es []ast.Expr, depth int) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, sc.eval(e, depth+1)...)
	}
	return out
}

// addValues records values a template's parameter may take.
func (sc *scanner) addValues(values []string) {
	for _, v := range values {
		sc.x.values[v] = true
	}
}

// addName records a registered name expression: complete, or a sum or a
// BuildFQName with one of the enclosing function's parameters in it.
func (sc *scanner) addName(ns, sub []string, name ast.Expr, params map[string]bool) {
	if c, ok := name.(*ast.CallExpr); ok && typeName(c.Fun) == "BuildFQName" && len(c.Args) == 3 {
		if full := sc.eval(c, 0); len(full) == 0 {
			// Namespace and subsystem are parameters: the middle is
			// "<namespace>_<subsystem>".
			for _, n := range sc.eval(c.Args[2], 0) {
				sc.x.templates[template{right: "_" + n}] = true
			}
			return
		}
	}
	parts := sumParts(name)
	for i, p := range parts {
		id, ok := p.(*ast.Ident)
		if !ok || !params[id.Name] {
			continue
		}
		for _, l := range sc.concat(parts[:i]) {
			for _, r := range sc.concat(parts[i+1:]) {
				sc.x.templates[template{left: l, right: r}] = true
			}
		}
		return
	}
	for _, n := range fqNames(ns, sub, sc.eval(name, 0)) {
		sc.x.full[n] = true
	}
}

// sumParts flattens a sum of strings into its operands.
func sumParts(e ast.Expr) []ast.Expr {
	if p, ok := e.(*ast.ParenExpr); ok {
		return sumParts(p.X)
	}
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return append(sumParts(b.X), sumParts(b.Y)...)
	}
	return []ast.Expr{e}
}

// concat evaluates the concatenation of parts; no parts is "".
func (sc *scanner) concat(parts []ast.Expr) []string {
	out := []string{""}
	for _, p := range parts {
		var next []string
		for _, l := range out {
			for _, r := range sc.eval(p, 0) {
				next = append(next, l+r)
			}
		}
		out = next
	}
	return out
}

// inspect records the names registered in a declaration and the prefixes
// passed around in it.
func (sc *scanner) inspect(root ast.Node, params map[string]bool) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if strings.HasSuffix(typeName(n.Type), "Opts") {
				sc.opts(n, params)
			}
		case *ast.CallExpr:
			if typeName(n.Fun) == "NewDesc" && len(n.Args) > 0 {
				sc.addName([]string{""}, []string{""}, n.Args[0], params)
			}
			sc.callArgs(n)
		}
		return true
	})
}

// callArgs records a call's constant arguments, and consecutive ones
// joined with "_", as values.
func (sc *scanner) callArgs(n *ast.CallExpr) {
	var prev []string
	for _, a := range n.Args {
		v := sc.eval(a, 0)
		sc.addValues(v)
		for _, p := range prev {
			for _, x := range v {
				sc.x.values[p+"_"+x] = true
			}
		}
		prev = v
	}
}

// opts records the name of a prometheus.*Opts literal.
func (sc *scanner) opts(n *ast.CompositeLit, params map[string]bool) {
	fields := map[string]ast.Expr{}
	for _, el := range n.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok {
				fields[k.Name] = kv.Value
			}
		}
	}
	if name, ok := fields["Name"]; ok {
		sc.addName(sc.optional(fields["Namespace"]), sc.optional(fields["Subsystem"]), name, params)
	}
}

// optional evaluates an optional Namespace or Subsystem: absent is "".
func (sc *scanner) optional(e ast.Expr) []string {
	if e == nil {
		return []string{""}
	}
	return sc.eval(e, 0)
}

// fqNames joins every combination as prometheus.BuildFQName does.
func fqNames(ns, sub, names []string) []string {
	out := make([]string, 0, len(ns)*len(sub)*len(names))
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
		for t := range x.templates {
			if len(n) <= len(t.left)+len(t.right) || !strings.HasPrefix(n, t.left) || !strings.HasSuffix(n, t.right) {
				continue
			}
			if mid := n[len(t.left) : len(n)-len(t.right)]; x.values[mid] {
				return fmt.Sprintf("registered as %q + %q + %q", t.left, mid, t.right)
			}
		}
	}
	return ""
}

// Counts are the index's sizes: complete names, templates and the values
// their parameters may take.
func (x *Index) Counts() (full, templates, values int) {
	return len(x.full), len(x.templates), len(x.values)
}

// SourceDirs are the module cache directories of Sources for one Armada
// release: Armada at that version, and the other Sources at the versions
// Armada's own go.mod requires, which is what its binaries are built from
// (tools/armada/build.sh builds inside Armada's module). Each is downloaded
// if needed.
func SourceDirs(ctx context.Context, armadaVersion string) ([]string, error) {
	armada, err := testutil.ModuleDir(ctx, Sources[0], armadaVersion)
	if err != nil {
		return nil, err
	}
	goMod := filepath.Join(armada, "go.mod")
	b, err := os.ReadFile(goMod) //nolint:gosec // Armada's go.mod in the module cache.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read go.mod")
	}
	mf, err := modfile.Parse(goMod, b, nil)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse go.mod")
	}
	dirs := []string{armada}
	for _, m := range Sources[1:] {
		version := ""
		for _, r := range mf.Require {
			if r.Mod.Path == m {
				version = r.Mod.Version
			}
		}
		if version == "" {
			return nil, errors.Errorf("cannot find %s in %s", m, goMod)
		}
		d, err := testutil.ModuleDir(ctx, m, version)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}
