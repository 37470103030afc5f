package function

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetGCPercent(t *testing.T) {
	type want struct {
		returned, inEffect int
	}
	cases := map[string]struct {
		reason string
		// gogc is the GOGC environment variable, unset if nil; before is
		// the runtime's target when SetGCPercent is called (the runtime
		// reads GOGC only when the process starts).
		gogc   *string
		before int
		want   want
	}{
		"Unset": {
			reason: "Without GOGC the function serves with GCPercent.",
			before: 100,
			want:   want{returned: GCPercent, inEffect: GCPercent},
		},
		"Set": {
			reason: "GOGC, set in the function's runtime config, wins and is left alone.",
			gogc:   new("150"),
			before: 150,
			want:   want{returned: 150, inEffect: 150},
		},
		"Off": {
			reason: "GOGC=off is reported as -1 and left alone.",
			gogc:   new("off"),
			before: -1,
			want:   want{returned: -1, inEffect: -1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prev := debug.SetGCPercent(tc.before)
			t.Cleanup(func() { debug.SetGCPercent(prev) })
			if tc.gogc != nil {
				t.Setenv("GOGC", *tc.gogc)
			} else {
				t.Setenv("GOGC", "") // Restores the variable after the test.
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
			}
			got := want{returned: SetGCPercent()}
			got.inEffect = debug.SetGCPercent(100)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nSetGCPercent(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
