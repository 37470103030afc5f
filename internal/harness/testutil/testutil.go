// Package testutil holds the helpers the repository's tests share: polling
// until a condition holds, reading an object that may not exist,
// server-side applying objects, and the paths of the repository's own
// files (examples, manifests). Conditions and multi-document YAML are
// package manifest's.
package testutil

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// DefaultInterval is how often Wait polls unless told otherwise.
const DefaultInterval = 250 * time.Millisecond

// Wait polls a condition until it holds or Timeout passes.
type Wait struct {
	// Timeout bounds the wait.
	Timeout time.Duration
	// Interval is the pause between polls; DefaultInterval if zero.
	Interval time.Duration
	// Logs, if set, is called on timeout and its result added to the
	// failure (e.g. the tails of the processes' logs).
	Logs func() string
	// Progress, if set, receives each new report of cond.
	Progress func(string)
	// Context, if set, ends the wait (failing the test) when done.
	Context context.Context
}

// Until calls cond until it reports true and returns how long that took.
// On timeout it fails the test with what was awaited and cond's last
// report.
func (w Wait) Until(t TB, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	every := w.Interval
	if every == 0 {
		every = DefaultInterval
	}
	done := context.Background().Done()
	if w.Context != nil {
		done = w.Context.Done()
	}
	start := time.Now()
	var last string
	for {
		ok, msg := cond()
		if ok {
			return time.Since(start)
		}
		if msg != last && w.Progress != nil {
			w.Progress(msg)
		}
		last = msg
		if time.Since(start) >= w.Timeout {
			break
		}
		select {
		case <-done:
			t.Fatalf("stopped waiting for %s: %v; last: %s", what, context.Cause(w.Context), last)
			return 0
		case <-time.After(every):
		}
	}
	logs := ""
	if w.Logs != nil {
		logs = "\n" + w.Logs()
	}
	t.Fatalf("timed out after %s waiting for %s; last: %s%s", w.Timeout, what, last, logs)
	return 0
}

// Get reads an object by API version, kind, namespace ("" for a
// cluster-scoped one) and name. It returns nil if the object does not
// exist, and fails the test on any other error.
func Get(ctx context.Context, t TB, c client.Reader, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := Lookup(ctx, c, apiVersion, kind, ns, name)
	if err != nil {
		t.Fatalf("cannot get %s %s: %v", kind, filepath.Join(ns, name), err)
	}
	return u
}

// Lookup is Get returning the error instead of failing: nil, nil if the
// object does not exist. Polls whose kind may not be served yet use it.
func Lookup(ctx context.Context, c client.Reader, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	if kerrors.IsNotFound(err) {
		return nil, nil //nolint:nilnil // Absent is an answer, not an error.
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Apply server-side applies objects as owner, taking over any field
// another manager holds, and fails the test on an error. It applies
// copies without managed fields and resource version, so an object read
// back can be applied again.
func Apply(ctx context.Context, t TB, c client.Writer, owner client.FieldOwner, objs ...*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		if err := c.Patch(ctx, o, client.Apply, owner, client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply on unstructured is what we need here.
			t.Fatalf("cannot apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// module is this repository's module path, as its go.mod declares it.
const module = "github.com/armadaproject/armada-crossplane"

// Root is the repository's root directory, so any package's tests can name
// the repository's files. It is found from this file's place in it when the
// binary was built without -trimpath, and otherwise (the Makefile builds
// with it, which makes that place a module path) by FindRoot. Failing both
// it is ".", and the files named from it are not found.
func Root() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..", "..")
	}
	if d, err := FindRoot(); err == nil {
		return d
	}
	return "."
}

// FindRoot returns the nearest directory at or above the working directory
// whose go.mod declares this module: go test runs a package's tests in its
// directory, make its commands in the root.
func FindRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", errors.Wrap(err, "cannot get working directory")
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod")) //nolint:gosec // Reading go.mod files up the tree is the point.
		if err == nil && modfile.ModulePath(b) == module {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.Errorf("cannot find repository root: no directory at or above the working directory has a go.mod for %s", module)
		}
		d = parent
	}
}

// Path is a path in the repository, from its root.
func Path(elem ...string) string {
	return filepath.Join(append([]string{Root()}, elem...)...)
}

// Example is the path of an example file, e.g. Example("minimal.yaml").
func Example(name ...string) string {
	return Path(append([]string{"examples"}, name...)...)
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TailFile returns about the last n lines of the file at path, or why it
// cannot be read.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path) //nolint:gosec // Only the harness's own log files are read.
	if err != nil {
		return "(cannot read " + path + ": " + err.Error() + ")"
	}
	return Tail(string(b), n)
}
