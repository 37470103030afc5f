package xpkg

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

// A stage turns a package's source directories into the package root
// `crossplane xpkg build` reads.
type stage struct {
	root     string
	registry string
	version  string
	// built holds the names of the packages built so far in this run.
	built map[string]bool
	logf  func(string, ...any)
}

// stagePackage writes p's package root into dir: every *.yaml under p.Root
// and p.Include, with a Configuration's spec.dependsOn filled in and its
// Compositions' function references renamed to the names Crossplane gives
// the dependency packages.
func (s *stage) stagePackage(p Package, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return errors.Wrapf(err, "cannot clean staging directory %s", dir)
	}
	for _, src := range append([]string{p.Root}, p.Include...) {
		if err := s.copyYAML(filepath.Join(s.root, src), filepath.Join(dir, filepath.Base(src))); err != nil {
			return err
		}
	}
	return nil
}

// copyYAML copies every *.yaml file under src into dst, transforming each
// object.
func (s *stage) copyYAML(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return errors.Wrapf(err, "cannot read %s", path)
		}
		if d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return errors.Wrapf(err, "cannot stage %s", path)
		}
		objs, err := manifest.ReadFile(path)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		for _, o := range objs {
			if err := s.transform(o); err != nil {
				return errors.Wrapf(err, "cannot stage %s", path)
			}
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				return errors.Wrapf(err, "cannot encode %s", path)
			}
			out.WriteString("---\n")
			out.Write(b)
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			return errors.Wrapf(err, "cannot create %s", filepath.Dir(target))
		}
		return errors.Wrapf(os.WriteFile(target, out.Bytes(), 0o600), "cannot write %s", target)
	})
}

// transform adjusts one object of a package.
func (s *stage) transform(o *unstructured.Unstructured) error {
	switch {
	case o.GetKind() == KindConfiguration && strings.HasPrefix(o.GetAPIVersion(), "meta.pkg.crossplane.io/"):
		return unstructured.SetNestedSlice(o.Object, s.dependsOn(), "spec", "dependsOn")
	case o.GetKind() == "Composition":
		return s.renameFunctions(o)
	}
	return nil
}

// dependsOn returns the Configuration's spec.dependsOn from Dependencies.
func (s *stage) dependsOn() []any {
	all := Dependencies(s.registry)
	deps := make([]any, 0, len(all))
	for _, d := range all {
		if d.Built != "" && !s.built[d.Built] {
			s.logf("dependency %s not declared: package %s was not built", d.Package, d.Built)
			continue
		}
		v := d.Version
		if v == "" {
			v = s.version
		}
		deps = append(deps, map[string]any{
			"apiVersion": "pkg.crossplane.io/v1",
			"kind":       d.Kind,
			"package":    d.Package,
			"version":    v,
		})
	}
	return deps
}

// PackageName returns the name Crossplane gives a package installed as a
// dependency from the OCI repository repo (e.g. ghcr.io/org/function-x
// becomes org-function-x), which a Composition's functionRef must use.
func PackageName(repo string) (string, error) {
	r, err := name.NewRepository(repo)
	if err != nil {
		return "", errors.Wrapf(err, "cannot parse repository %q", repo)
	}
	return dnsLabel(r.RepositoryStr()), nil
}

// dnsLabel applies Crossplane's naming rule for dependency packages
// (crossplane-runtime xpkg.ToDNSLabel): keep lower-case letters and digits,
// turn separators (. / : -) into dashes except in the first and last
// position, read at most 63 bytes, and trim dashes at either end.
func dnsLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && i < 63; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		case strings.IndexByte("./:-", c) >= 0 && i != 0 && i != 62 && i != len(s)-1:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// renameFunctions points a Composition's pipeline steps that use one of our
// functions at the name Crossplane installs it under as a dependency.
func (s *stage) renameFunctions(o *unstructured.Unstructured) error {
	steps, _, err := unstructured.NestedSlice(o.Object, "spec", "pipeline")
	if err != nil {
		return errors.Wrap(err, "cannot read pipeline")
	}
	for i, st := range steps {
		m, ok := st.(map[string]any)
		if !ok {
			continue
		}
		fn, _, _ := unstructured.NestedString(m, "functionRef", "name")
		for _, p := range Packages {
			if p.Kind != KindFunction || p.Name != fn {
				continue
			}
			n, err := PackageName(s.registry + "/" + p.Name)
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(m, n, "functionRef", "name"); err != nil {
				return errors.Wrapf(err, "cannot set pipeline[%d].functionRef.name", i)
			}
		}
		steps[i] = m
	}
	return unstructured.SetNestedSlice(o.Object, steps, "spec", "pipeline")
}
