// Package manifest reads Kubernetes objects from multi-document YAML (or
// JSON) files.
package manifest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ReadFile reads every non-empty object in a multi-document YAML file.
func ReadFile(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path) //nolint:gosec // Paths come from this repository's callers.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", path)
	}
	d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, errors.Wrapf(err, "cannot decode %s", path)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// ReadDir reads every object in the *.yaml files of dir, in file name
// order.
func ReadDir(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list %s", dir)
	}
	if len(files) == 0 {
		return nil, errors.Errorf("cannot find manifests: %s has no *.yaml files", dir)
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		o, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}
