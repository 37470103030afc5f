package jobflow

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReloadedSince(t *testing.T) {
	since := time.Date(2026, 12, 2, 16, 20, 0, 0, time.UTC)
	cases := map[string]struct {
		reason string
		log    string
		want   bool
	}{
		"ReloadWithAll": {
			reason: "A reload after since that retrieved every executor is the one waited for.",
			log:    "2026-12-02T16:20:05.123Z INFO armada_context.go:56 Retrieved 3 executors\n",
			want:   true,
		},
		"ReloadWithFewer": {
			reason: "A reload that read the database before the last executor was there does not count.",
			log:    "2026-12-02T16:20:05.123Z INFO armada_context.go:56 Retrieved 2 executors\n",
		},
		"ReloadBefore": {
			reason: "A reload logged before since does not count.",
			log:    "2026-12-02T16:19:59.999Z INFO armada_context.go:56 Retrieved 3 executors\n",
		},
		"OtherLines": {
			reason: "Only the submit check's reload line counts.",
			log:    "2026-12-02T16:20:05.123Z INFO armada_context.go:56 Executor currently has 3 job runs\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "scheduler.log")
			if err := os.WriteFile(f, []byte("2026-12-02T16:19:00.000Z INFO startup.go:1 started\n"+tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, reloadedSince([]string{f}, 3, since)); diff != "" {
				t.Errorf("%s\nreloadedSince(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
