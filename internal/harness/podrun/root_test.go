package podrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveMountPath(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tmp, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	// As /var/run -> /run on Debian.
	if err := os.Mkdir(filepath.Join(tmp, "var"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "run"), filepath.Join(tmp, "var", "run")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"ThroughLink": {
			reason: "A missing path under a linked directory lands where the link points, not on the link's target outside the root.",
			in:     filepath.Join(tmp, "var", "run", "secrets", "kubernetes.io", "serviceaccount"),
			want:   filepath.Join(tmp, "run", "secrets", "kubernetes.io", "serviceaccount"),
		},
		"NoLink":  {reason: "A path without links is unchanged.", in: filepath.Join(tmp, "run", "x"), want: filepath.Join(tmp, "run", "x")},
		"Missing": {reason: "A path none of whose parents exist but / is unchanged.", in: "/no-such-dir-podrun/config", want: "/no-such-dir-podrun/config"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ResolveMountPath(tc.in)); diff != "" {
				t.Errorf("%s\nResolveMountPath(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}
