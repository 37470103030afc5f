package testutil

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

func TestRetry(t *testing.T) {
	errFlaky := errors.New("flaky")
	errBroken := errors.New("broken")
	cases := map[string]struct {
		reason    string
		fails     []error // what each try returns; past its end, nil
		cancel    bool
		wantErr   string
		wantTries int
		wantLogs  []string
	}{
		"FirstTry": {
			reason:    "A first try that succeeds is the only one.",
			wantTries: 1,
		},
		"SecondTry": {
			reason:    "A failed try is logged and tried again.",
			fails:     []error{errFlaky},
			wantTries: 2,
			wantLogs:  []string{"try 1 of 3 failed: flaky"},
		},
		"AllFail": {
			reason:    "The last try's error is returned, not logged.",
			fails:     []error{errFlaky, errFlaky, errBroken, errFlaky},
			wantErr:   "broken",
			wantTries: 3,
			wantLogs:  []string{"try 1 of 3 failed: flaky", "try 2 of 3 failed: flaky"},
		},
		"Permanent": {
			reason:    "An error marked Permanent is returned, unmarked, at once.",
			fails:     []error{Permanent(errors.Wrap(errBroken, "cannot isolate"))},
			wantErr:   "cannot isolate: broken",
			wantTries: 1,
		},
		"ContextDone": {
			reason:    "No try follows once the context is done.",
			fails:     []error{errFlaky, errFlaky},
			cancel:    true,
			wantErr:   "flaky",
			wantTries: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			var logs []string
			tries := 0
			err := Retry(ctx, 3, func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }, func(try int) error {
				tries++
				if try != tries {
					t.Errorf("try %d reported as %d", tries, try)
				}
				if try <= len(tc.fails) {
					return tc.fails[try-1]
				}
				return nil
			})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				var p permanent
				if errors.As(err, &p) {
					t.Errorf("%s\nRetry returned an error still marked Permanent: %v", tc.reason, err)
				}
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("%s\nRetry(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantTries, tries); diff != "" {
				t.Errorf("%s\nRetry(...): -want tries, +got tries:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantLogs, logs); diff != "" {
				t.Errorf("%s\nRetry(...): -want logs, +got logs:\n%s", tc.reason, diff)
			}
		})
	}
}
