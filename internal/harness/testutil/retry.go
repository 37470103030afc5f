package testutil

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// permanent marks an error Retry must not try again.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Permanent marks err as one a second try cannot mend, so Retry returns
// it at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// Retry calls do up to tries times (try counts from 1), until it returns
// nil, returns an error marked Permanent, or ctx is done, and returns its
// last error. logf, when set, gets each failure but the last, saying which
// try of how many failed.
func Retry(ctx context.Context, tries int, logf func(format string, args ...any), do func(try int) error) error {
	for try := 1; ; try++ {
		err := do(try)
		var p permanent
		if errors.As(err, &p) {
			return p.error
		}
		if err == nil || try >= tries || ctx.Err() != nil {
			return err
		}
		if logf != nil {
			logf("try %d of %d failed: %v", try, tries, err)
		}
	}
}
