// Package commits checks the house rule on commit messages: a subject of at
// most MaxSubject characters, the detail in the body. `make reviewable` runs
// it (internal/build/cmd/commits) on the commits a change adds.
package commits

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"unicode/utf8"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// MaxSubject is the longest subject line allowed, in characters.
const MaxSubject = 72

// Base is main's last commit before the rule: on main, the commits after it
// are checked (the history before it has longer subjects).
const Base = "892146a0aa3e4389e4e01fbd79e09f9572dd2aac"

// mains are the refs that name main, in the order they are tried: a
// developer's local branch, then a CI clone's remote-tracking one.
var mains = []string{"refs/heads/main", "refs/remotes/origin/main"}

// Range is the range of commits to check in the repository at dir, as
// `git log` takes it: on a branch, the commits since its merge base with
// main; on main itself (HEAD is main's commit), or where there is no main,
// the commits since base. base must be in HEAD's history: a shallow clone
// without it is an error that says so.
func Range(ctx context.Context, dir, base string) (string, error) {
	head, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	for _, ref := range mains {
		main, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		if err != nil {
			continue
		}
		if main == head {
			break
		}
		mb, err := git(ctx, dir, "merge-base", "HEAD", main)
		if err != nil {
			return "", errors.Wrapf(err, "cannot find the merge base of HEAD and %s", ref)
		}
		return mb + "..HEAD", nil
	}
	if _, err := git(ctx, dir, "merge-base", "--is-ancestor", base, "HEAD"); err != nil {
		return "", errors.Errorf("cannot check commits since %s: it is not in HEAD's history (a shallow clone? fetch the full history)", base)
	}
	return base + "..HEAD", nil
}

// A Long commit is one whose subject is over MaxSubject characters.
type Long struct {
	Hash    string
	Subject string
}

func (l Long) String() string {
	return fmt.Sprintf("%.12s %d characters: %s", l.Hash, utf8.RuneCountInString(l.Subject), l.Subject)
}

// Check returns the range of commits Range picks and those of them whose
// subject is over MaxSubject characters, oldest first.
func Check(ctx context.Context, dir, base string) (string, []Long, error) {
	rng, err := Range(ctx, dir, base)
	if err != nil {
		return "", nil, err
	}
	out, err := git(ctx, dir, "log", "--reverse", "--format=%H%x00%s", rng)
	if err != nil {
		return "", nil, err
	}
	var long []Long
	for l := range strings.SplitSeq(out, "\n") {
		hash, subject, ok := strings.Cut(l, "\x00")
		if ok && utf8.RuneCountInString(subject) > MaxSubject {
			long = append(long, Long{Hash: hash, Subject: subject})
		}
	}
	return rng, long, nil
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...) //nolint:gosec // git, with the arguments this package builds.
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", errors.Wrapf(err, "cannot run git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
