package netlock

import (
	"context"
	"testing"
	"time"
)

// TestLock: a second holder waits, and says so once, until the first
// releases.
func TestLock(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx := t.Context()
	r1, err := Exclusive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var waited int
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := Exclusive(qctx, func(string, ...any) { waited++ }); err == nil || waited != 1 {
		t.Fatalf("Exclusive beside another holder: err %v, said it waits %d times, want once", err, waited)
	}
	if err := r1(); err != nil {
		t.Fatal(err)
	}
	r2, err := Exclusive(ctx, nil)
	if err != nil {
		t.Fatalf("Exclusive after the first released: %v", err)
	}
	if err := r2(); err != nil {
		t.Fatal(err)
	}
}
