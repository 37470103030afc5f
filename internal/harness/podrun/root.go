package podrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// podScript builds a process's own root and runs the binary in it, as a
// pod's filesystem would: in a private mount namespace, a tmpfs holds an
// overlay of the machine's root (writes go to the tmpfs, never to the
// machine), /proc, /sys, /dev and /root (the Armada binaries and sources)
// are bound in, the machine's /tmp (the test's files) at podTmp, the
// run's hosts file over /etc/hosts, and each volume the test wrote at the
// container's mount path (an emptyDir at /tmp too, as in the pod). The
// rendered args, environment and config files therefore run as rendered:
// no path or address is rewritten. Only the paths the test itself passes
// (its overrides) name files under podTmp (see PodPath).
//
// Arguments: the new root's directory, the hosts file, the working
// directory, chroot's path, the number of volume mounts, that many
// (local path, mount path) pairs, then the binary and its args.
const podScript = `set -e
M=$1 H=$2 W=$3 CHROOT=$4 n=$5
shift 5
mount -t tmpfs pod-tmpfs "$M"
mkdir "$M/upper" "$M/work" "$M/root"
R=$M/root
mount -t overlay pod-overlay -o "lowerdir=/,upperdir=$M/upper,workdir=$M/work" "$R"
for d in proc sys dev root; do mount --rbind "/$d" "$R/$d"; done
mkdir "$R/.conformance"
mount --rbind /tmp "$R/.conformance"
mount --bind "$H" "$R/etc/hosts"
while [ "$n" -gt 0 ]; do
	src=$1 dst=$2
	shift 2
	n=$((n - 1))
	if [ -d "$src" ]; then
		mkdir -p "$R$dst"
	else
		mkdir -p "$R$(dirname "$dst")"
		touch "$R$dst"
	fi
	mount --bind "$src" "$R$dst"
done
exec "$CHROOT" "$R" /bin/bash -c 'cd "$0" && exec "$@"' "$W" "$@"
`

// PodCommand returns how to run bin with args in a root of its own with
// hostsFile as /etc/hosts and mounts (mount path to local path) bound in,
// working in dir. root is an empty directory for the new root's mounts.
// unshare(1) execs the shell in the new namespace, and the shells exec
// the binary, so the process keeps the PID the test started.
// The shells are bash: dash, /bin/sh here, drops environment variables
// whose names are not shell identifiers, such as the rendered
// ARMADA_AUTH_BASICAUTH_USERS_INTERNAL-SERVER_PASSWORD, which Kubernetes
// passes to the container (the TLS check's clients saw the scheduler's
// internal users without their passwords until this was bash).
func PodCommand(root, hostsFile, dir string, mounts map[string]string, bin string, args []string) (string, []string, error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return "", nil, errors.Errorf("cannot find unshare(1) (util-linux), which gives each process its own root: %w", err)
	}
	chroot, err := lookSbin("chroot")
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", nil, err
	}
	// The working directory (the release's source) and the binary are in
	// the module and tool caches, under the home directory: under /root
	// they are bound as they are, under the machine's temporary directory
	// (a home there) they show at podTmp, as the pod's emptyDir hides /tmp.
	out := []string{"--mount", "--propagation", "private", "/bin/bash", "-c", podScript, "pod", root, hostsFile, PodPath(dir), chroot, strconv.Itoa(len(mounts))}
	for _, mp := range slices.Sorted(func(yield func(string) bool) {
		for k := range mounts {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, mounts[mp], ResolveMountPath(mp))
	}
	return unshare, append(append(out, PodPath(bin)), args...), nil
}

// ResolveMountPath follows the symbolic links on a mount path's way, as
// the kubelet's mount would inside the container. The root is an overlay
// of the machine's, so its links are the machine's, and the script mounts
// before it changes root: /var/run/secrets/... must become /run/secrets/...
// where /var/run links to /run, or the mount would land on the machine's
// /run. Links are resolved to the longest prefix that exists.
func ResolveMountPath(mp string) string {
	dir, rest := filepath.Clean(mp), ""
	for dir != "/" && dir != "." {
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(resolved, rest)
		}
		dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
	}
	return mp
}

// podTmp is where a process's root shows the machine's temporary
// directory, which holds the test's files.
const podTmp = "/.conformance"

// PodPath is where a process's root shows a file the test wrote under the
// machine's temporary directory; other paths are unchanged.
func PodPath(p string) string {
	tmp := filepath.Clean(os.TempDir())
	if rel, err := filepath.Rel(tmp, p); err == nil && filepath.IsAbs(p) && rel != ".." && !strings.HasPrefix(rel, "../") {
		return podTmp + "/" + filepath.ToSlash(rel)
	}
	return p
}

// lookSbin finds a system binary, also where PATH lacks the sbin
// directories.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.Errorf("cannot find %s(8)", name)
}
