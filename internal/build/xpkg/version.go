package xpkg

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// describeRE matches `git describe --tags --long --always --dirty` output
// with a tag: TAG-N-gSHA[-dirty].
var describeRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?-(\d+)-g([0-9a-f]+)(-dirty)?$`)

// shaRE matches the output without a tag: SHA[-dirty].
var shaRE = regexp.MustCompile(`^([0-9a-f]+)(-dirty)?$`)

// SemVer turns `git describe --tags --long --always --dirty` output, plus
// the commit count for untagged history, into a semantic version that
// Crossplane's dependency constraints accept:
//
//   - on a tag vX.Y.Z: vX.Y.Z
//   - N commits after vX.Y.Z: vX.Y.(Z+1)-N-gSHA, which sorts after the tag
//     and before the next patch release
//   - no tag: v0.0.0-COUNT-gSHA, COUNT being the commits in HEAD
//
// A dirty tree appends -dirty to the pre-release.
func SemVer(describe string, count int) (string, error) {
	describe = strings.TrimSpace(describe)
	if m := describeRE.FindStringSubmatch(describe); m != nil {
		if m[4] != "" {
			return "", errors.Errorf("cannot derive a version from %q: tags with a pre-release are not supported", describe)
		}
		dirty := m[7]
		if m[5] == "0" {
			if dirty != "" {
				return "v" + m[1] + "." + m[2] + "." + m[3] + dirty, nil
			}
			return "v" + m[1] + "." + m[2] + "." + m[3], nil
		}
		patch, err := strconv.Atoi(m[3])
		if err != nil {
			return "", errors.Wrapf(err, "cannot parse patch version of %q", describe)
		}
		return "v" + m[1] + "." + m[2] + "." + strconv.Itoa(patch+1) + "-" + m[5] + "-g" + m[6] + dirty, nil
	}
	if m := shaRE.FindStringSubmatch(describe); m != nil {
		return "v0.0.0-" + strconv.Itoa(count) + "-g" + m[1] + m[2], nil
	}
	return "", errors.Errorf("cannot derive a version from %q: want vX.Y.Z-N-gSHA or SHA", describe)
}

// GitVersion returns the semantic version of the repository at root (see
// SemVer).
func GitVersion(ctx context.Context, root string) (string, error) {
	d, err := git(ctx, root, "describe", "--tags", "--long", "--always", "--dirty", "--match", "v[0-9]*")
	if err != nil {
		return "", err
	}
	c, err := git(ctx, root, "rev-list", "--count", "HEAD")
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(c))
	if err != nil {
		return "", errors.Wrapf(err, "cannot parse commit count %q", c)
	}
	return SemVer(d, n)
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...) //nolint:gosec // Fixed git subcommands.
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.Wrapf(err, "cannot run git %s: %s", strings.Join(args, " "), stderr.String())
	}
	return string(out), nil
}
