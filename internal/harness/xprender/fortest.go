package xprender

import (
	"testing"

	"github.com/crossplane/function-sdk-go/logging"

	fn "github.com/armadaproject/armada-crossplane/internal/function"
)

// ServeForTest serves function-armada with a fixed password key, so
// renders are reproducible, finds the Crossplane binaries, and stops the
// function when the test ends. It fails the test if either cannot be done.
func ServeForTest(t testing.TB, passwordKey string) (Tools, string) {
	t.Helper()
	tools, err := FindTools()
	if err != nil {
		t.Fatal(err)
	}
	// Without a certificate clock: golden files must not change with the
	// date, and the conformance suite runs Armada's binaries on their
	// certificates at the real date.
	f, err := fn.New(logging.NewNopLogger(), fn.WithPasswordKey([]byte(passwordKey)), fn.WithCertClock(nil))
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := Serve(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return tools, addr
}
