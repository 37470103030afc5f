package netlock

import (
	"context"
	"testing"
	"time"
)

// TestLock: shared holders share; an exclusive holder waits for them and
// keeps a shared one waiting until it releases.
func TestLock(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx := t.Context()
	quick := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 300*time.Millisecond) }

	r1, err := Shared(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Shared(ctx, nil)
	if err != nil {
		t.Fatalf("a second shared holder: %v", err)
	}
	qctx, cancel := quick()
	if _, err := Exclusive(qctx, nil); err == nil {
		t.Fatal("Exclusive succeeded while two shared holders held the lock")
	}
	cancel()
	if err := r1(); err != nil {
		t.Fatal(err)
	}
	if err := r2(); err != nil {
		t.Fatal(err)
	}
	rx, err := Exclusive(ctx, nil)
	if err != nil {
		t.Fatalf("Exclusive after both released: %v", err)
	}
	var waited bool
	qctx, cancel = quick()
	defer cancel()
	if _, err := Shared(qctx, func(string, ...any) { waited = true }); err == nil || !waited {
		t.Fatalf("Shared beside an exclusive holder: err %v, said it waits %t", err, waited)
	}
	if err := rx(); err != nil {
		t.Fatal(err)
	}
}
