// Package manifest reads Kubernetes objects from multi-document YAML (or
// JSON) files, and their status conditions. It is the repository's one
// splitter of multi-document YAML.
package manifest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	syaml "sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Documents splits a multi-document YAML stream into its documents' text,
// leaving out documents that are empty or only comments. A "---" line
// (with an optional comment) separates documents; an indented one is text.
func Documents(b []byte) ([][]byte, error) {
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, errors.Wrap(err, "cannot read YAML document")
		}
		if !blank(doc) {
			docs = append(docs, doc)
		}
	}
}

// Join joins documents into one multi-document YAML stream.
func Join(docs [][]byte) []byte {
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(d)
		if len(d) > 0 && d[len(d)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// blank reports whether a document holds only blank lines and comments.
func blank(doc []byte) bool {
	for line := range bytes.SplitSeq(doc, []byte("\n")) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// Split decodes every non-empty document of a multi-document YAML (or
// JSON) stream, in order.
func Split(b []byte) ([]map[string]any, error) {
	raw, err := Documents(b)
	if err != nil {
		return nil, err
	}
	var docs []map[string]any
	for i, d := range raw {
		m := map[string]any{}
		if err := syaml.Unmarshal(d, &m); err != nil {
			return nil, errors.Wrapf(err, "cannot decode YAML document %d", i)
		}
		if len(m) > 0 {
			docs = append(docs, m)
		}
	}
	return docs, nil
}

// Parse is Split returning objects.
func Parse(b []byte) ([]*unstructured.Unstructured, error) {
	docs, err := Split(b)
	return objects(docs), err
}

func objects(docs []map[string]any) []*unstructured.Unstructured {
	if docs == nil {
		return nil
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		objs = append(objs, &unstructured.Unstructured{Object: d})
	}
	return objs
}

// ReadDocs reads every non-empty document in a multi-document YAML file.
func ReadDocs(path string) ([]map[string]any, error) {
	b, err := os.ReadFile(path) //nolint:gosec // Paths come from this repository's callers.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", path)
	}
	docs, err := Split(b)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot decode %s", path)
	}
	return docs, nil
}

// ReadFile reads every non-empty object in a multi-document YAML file.
func ReadFile(path string) ([]*unstructured.Unstructured, error) {
	docs, err := ReadDocs(path)
	return objects(docs), err
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
