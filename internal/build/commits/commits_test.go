package commits

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// long is a subject one character over the limit.
var long = strings.Repeat("x", MaxSubject+1)

// repo is a temporary git repository the test builds commit by commit.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

// git runs git in the repository and returns its trimmed output.
func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.CommandContext(r.t.Context(), "git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com"}, args...)...) //nolint:gosec // git, with the test's own arguments.
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit adds an empty commit and returns its hash.
func (r *repo) commit(subject string) string {
	r.t.Helper()
	r.git("commit", "-q", "--allow-empty", "-m", subject+"\n\nThe detail, in the body, may be as long as it needs: "+long)
	return r.git("rev-parse", "HEAD")
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		reason string
		// build makes the history and returns the base and the subjects
		// of the long commits Check must report.
		build   func(r *repo) (base string, want []string)
		wantErr string
	}{
		"BranchSinceMergeBase": {
			reason: "On a branch, only the commits since the merge base with main are checked: main's own long subjects are not the branch's.",
			build: func(r *repo) (string, []string) {
				r.commit(long + " on main")
				base := r.commit("short")
				r.git("checkout", "-q", "-b", "feature")
				r.commit("a short subject")
				r.commit(long + " on the branch")
				r.git("checkout", "-q", "main")
				r.commit(long + " on main, later")
				r.git("checkout", "-q", "feature")
				return base, []string{long + " on the branch"}
			},
		},
		"OnMainSinceBase": {
			reason: "On main (a clean clone in CI), the commits after the base are checked, not those before it.",
			build: func(r *repo) (string, []string) {
				r.commit(long + " before the rule")
				base := r.commit("the rule")
				r.commit("short")
				r.commit(long + " after the rule")
				return base, []string{long + " after the rule"}
			},
		},
		"DetachedAtMain": {
			reason: "A CI checkout of main's commit, detached, is main: the commits after the base are checked.",
			build: func(r *repo) (string, []string) {
				base := r.commit("the rule")
				r.commit(long + " after the rule")
				r.git("checkout", "-q", "--detach", "HEAD")
				return base, []string{long + " after the rule"}
			},
		},
		"ExactlyTheLimit": {
			reason: "A subject of exactly MaxSubject characters, counted in characters, not bytes, passes.",
			build: func(r *repo) (string, []string) {
				base := r.commit("the rule")
				r.commit(strings.Repeat("é", MaxSubject))
				return base, nil
			},
		},
		"BaseNotInHistory": {
			reason: "On main without the base in its history (a shallow clone), the check says so instead of passing.",
			build: func(r *repo) (string, []string) {
				r.commit("main")
				return strings.Repeat("0", 40), nil
			},
			wantErr: "not in HEAD's history",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			base, want := tc.build(r)
			_, got, err := Check(t.Context(), r.dir, base)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nCheck(): got error %v, want one containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nCheck(): %v", tc.reason, err)
			}
			subjects := make([]string, 0, len(got))
			for _, l := range got {
				subjects = append(subjects, l.Subject)
			}
			if diff := cmp.Diff(want, subjects, cmpEmpty); diff != "" {
				t.Errorf("%s\nCheck(): -want +got long subjects:\n%s", tc.reason, diff)
			}
		})
	}
}

// cmpEmpty treats a nil and an empty list of subjects alike.
var cmpEmpty = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())
