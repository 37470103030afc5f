// Command armadakeys writes the config keys each Armada component reads,
// from Armada's own Go types, for the release a module pins: the tree
// internal/armada checks config overrides against (see
// armada.ConfigKeys). It type-checks Armada's packages at -version in
// that release's own module (in the module cache), and follows the rules
// Armada's config loading uses: viper, then mapstructure with no
// squashing, fields matched by name in any case.
//
// Usage: go run ./internal/build/cmd/armadakeys [-version 0.22.7] [-out internal/armada/configkeys]
// (without -version, every version armada.SupportedVersions lists)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/types"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/tools/go/packages"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/build/cli"
)

const armadaModule = "github.com/armadaproject/armada"

func main() {
	version := flag.String("version", "", "the Armada release to read, e.g. 0.22.7 (default: every supported version)")
	out := flag.String("out", "internal/armada/configkeys", "the directory to write v<version>.json to (JSON: component to config keys)")
	flag.Parse()
	versions := armada.SupportedVersions
	if *version != "" {
		versions = []string{*version}
	}
	cli.Main("armadakeys", func(ctx context.Context) error {
		for _, v := range versions {
			fmt.Fprintf(os.Stderr, "armadakeys: reading Armada %s's config types\n", v)
			if err := run(ctx, v, *out); err != nil {
				return errors.Wrapf(err, "Armada %s", v)
			}
		}
		return nil
	})
}

func run(ctx context.Context, version, out string) error {
	dir, err := moduleDir(ctx, version)
	if err != nil {
		return err
	}
	keys, err := readKeys(dir)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(keys); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "v"+version+".json"), b.Bytes(), 0o644) //nolint:gosec // A generated source file.
}

// moduleDir downloads Armada at version and returns its directory in the
// module cache. The packages are loaded there, with Armada as the main
// module, as tools/armada/build.sh builds its binaries: Armada's own
// go.mod, go.sum and replace lines are in effect, so the build list is
// exactly Armada's (a wrapper module requiring Armada would select its
// own), nothing is resolved beyond what Armada's go.mod names, and the
// packages compiled for their export data are the ones `make armada-bins`
// compiles, which the Go build cache then shares.
func moduleDir(ctx context.Context, version string) (string, error) {
	module := armadaModule + "@v" + version
	dl, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", module).Output() //nolint:gosec // Our flag or SupportedVersions.
	if err != nil {
		return "", errors.Wrapf(err, "cannot download Armada v%s", version)
	}
	var info struct {
		Dir string `json:"Dir"`
	}
	if err := json.Unmarshal(dl, &info); err != nil {
		return "", errors.Wrapf(err, "cannot parse go mod download's output for Armada v%s", version)
	}
	if info.Dir == "" {
		return "", errors.Errorf("cannot find Armada v%s's directory in the module cache", version)
	}
	return info.Dir, nil
}

// readKeys reads every component's config keys from Armada's packages
// in the module in dir.
func readKeys(dir string) (map[string]*armada.ConfigKeys, error) {
	roots := armada.ConfigTypes()
	var patterns []string
	for _, t := range roots {
		pkg, _, ok := strings.Cut(t, ".")
		if !ok {
			return nil, errors.Errorf("cannot read config type %q: want <package>.<type>", t)
		}
		if p := armadaModule + "/" + pkg; !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}
	slices.Sort(patterns)
	// The flags tools/armada/build.sh builds with, the caller's GOFLAGS
	// (the Makefile's -trimpath) among them, so that both share the build
	// cache; Armada's go.mod is complete and read-only here.
	env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly -buildvcs=false"), "GOWORK=off", "GOTOOLCHAIN=local")
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: dir, Env: env}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, errors.Wrap(err, "cannot load Armada's packages")
	}
	byPath := map[string]*types.Package{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			return nil, errors.Errorf("cannot load %s: %s", p.PkgPath, e.Msg)
		}
		byPath[p.PkgPath] = p.Types
	}
	keys := map[string]*armada.ConfigKeys{}
	for component, t := range roots {
		pkg, name, _ := strings.Cut(t, ".")
		p := byPath[armadaModule+"/"+pkg]
		if p == nil {
			return nil, errors.Errorf("cannot find package %s", pkg)
		}
		obj := p.Scope().Lookup(name)
		if obj == nil {
			return nil, errors.Errorf("cannot find type %s in %s", name, pkg)
		}
		keys[component] = (&walker{}).node(obj.Type())
	}
	return keys, nil
}

type walker struct {
	// visiting are the named types on the path, to stop at recursion.
	visiting []*types.Named
}

// node is the keys of a value of type t.
func (w *walker) node(t types.Type) *armada.ConfigKeys {
	if decodedFromString(t) {
		return &armada.ConfigKeys{Any: true}
	}
	if n, ok := t.(*types.Named); ok {
		if slices.Contains(w.visiting, n) {
			return &armada.ConfigKeys{Any: true}
		}
		w.visiting = append(w.visiting, n)
		defer func() { w.visiting = w.visiting[:len(w.visiting)-1] }()
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return w.node(u.Elem())
	case *types.Interface:
		return &armada.ConfigKeys{Any: true}
	case *types.Map:
		return &armada.ConfigKeys{Values: w.node(u.Elem())}
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
			return &armada.ConfigKeys{}
		}
		return &armada.ConfigKeys{Items: w.node(u.Elem())}
	case *types.Array:
		return &armada.ConfigKeys{Items: w.node(u.Elem())}
	case *types.Struct:
		return w.structNode(u)
	}
	return &armada.ConfigKeys{}
}

// structNode is mapstructure's view of a struct: exported fields by name
// (or mapstructure tag), embedded structs as a key named after their type
// unless tagged squash.
func (w *walker) structNode(s *types.Struct) *armada.ConfigKeys {
	n := &armada.ConfigKeys{Fields: map[string]*armada.ConfigKeys{}}
	for i := range s.NumFields() {
		f := s.Field(i)
		if !f.Exported() {
			continue
		}
		name, opts, _ := strings.Cut(reflect.StructTag(s.Tag(i)).Get("mapstructure"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "squash") {
			sq := w.node(f.Type())
			maps.Copy(n.Fields, sq.Fields)
			continue
		}
		if name == "" {
			name = f.Name()
		}
		child := w.node(f.Type())
		child.Name = lowerFirst(name)
		n.Fields[strings.ToLower(name)] = child
	}
	if len(n.Fields) == 0 {
		// time.Time and the like: decoded by a hook, not by keys.
		return &armada.ConfigKeys{Any: true}
	}
	return n
}

// decodedFromString reports types Armada's config hooks decode from a
// string (commonconfig.CustomHooks: UnmarshalConfigString, Quantities;
// viper's: durations; text unmarshalers): their keys are not checked.
func decodedFromString(t types.Type) bool {
	ms := types.NewMethodSet(types.NewPointer(t))
	for _, m := range []string{"UnmarshalConfigString", "UnmarshalText"} {
		if ms.Lookup(nil, m) != nil {
			return true
		}
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		switch n.Obj().Pkg().Path() + "." + n.Obj().Name() {
		case "k8s.io/apimachinery/pkg/api/resource.Quantity", "time.Duration":
			return true
		}
	}
	return false
}

// lowerFirst is a Go field name as Armada's config files spell the key:
// its leading capitals lower-cased (GrpcPort: grpcPort; HTTPPort:
// httpPort).
func lowerFirst(s string) string {
	r := []rune(s)
	for i := range r {
		if !unicode.IsUpper(r[i]) || (i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1])) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}
