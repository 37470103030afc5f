package node

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// podNetwork is where pod ranges come from: 198.18.0.0/16, the lower
// half of 198.18.0.0/15, reserved for benchmarking (RFC 2544) and used by
// no real network; the control plane's Services take the upper half
// (controlplane.ServiceRange). Each node takes one /24 of it.
var podNetwork = netip.MustParsePrefix("198.18.0.0/16")

// cgroupFS is where the cgroup hierarchies are mounted, procFS procfs.
const (
	cgroupFS = "/sys/fs/cgroup"
	procFS   = "/proc"
)

// newRunDir creates the node's directory, /tmp/armada-node-ID with a
// random ID, and returns the ID.
func newRunDir() (id, dir string, err error) {
	for range 10 {
		b := make([]byte, 3)
		if _, err := rand.Read(b); err != nil {
			return "", "", errors.Wrap(err, "cannot read random bytes")
		}
		id = hex.EncodeToString(b)
		dir = filepath.Join(os.TempDir(), namePrefix+id)
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return id, dir, nil
		}
		if !os.IsExist(err) {
			return "", "", errors.Wrap(err, "cannot create the node's directory")
		}
	}
	return "", "", errors.New("cannot create the node's directory: every name tried is taken")
}

// reserveSubnet takes a /24 of podNetwork that no interface of this
// machine has an address in and no other live node holds, recording it in
// a file named by the subnet (holding this process's pid) under
// os.TempDir()/armada-node-subnets. A file whose pid is dead is taken
// over. release removes the file.
func reserveSubnet() (subnet netip.Prefix, release func(), err error) {
	dir := filepath.Join(os.TempDir(), "armada-node-subnets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return netip.Prefix{}, nil, errors.Wrap(err, "cannot create the subnet reservations' directory")
	}
	used, err := addressesInUse()
	if err != nil {
		return netip.Prefix{}, nil, err
	}
	n := 1 << (24 - podNetwork.Bits())
	b := make([]byte, 2)
	if _, err := rand.Read(b); err != nil {
		return netip.Prefix{}, nil, errors.Wrap(err, "cannot read random bytes")
	}
	start := (int(b[0])<<8 | int(b[1])) % n
	for i := range n {
		idx := (start + i) % n
		p := nthSubnet(idx)
		if slices.ContainsFunc(used, p.Contains) {
			continue
		}
		file := filepath.Join(dir, p.Addr().String())
		if !claim(file) {
			continue
		}
		return p, func() { _ = os.Remove(file) }, nil
	}
	return netip.Prefix{}, nil, errors.Errorf("cannot reserve a pod range: every /24 of %s is in use", podNetwork)
}

// nthSubnet is the i-th /24 of podNetwork, modulo their number.
func nthSubnet(i int) netip.Prefix {
	a := podNetwork.Addr().As4()
	n := 1 << (24 - podNetwork.Bits())
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(a[:])+uint32(i%n)<<8) //nolint:gosec // Below n, a small number.
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

// claim writes this process's pid to file if it does not exist, or if
// the pid it holds is no longer alive.
func claim(file string) bool {
	pid := []byte(strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) //nolint:gosec // A reservation file of ours.
	if err == nil {
		_, werr := f.Write(pid)
		return f.Close() == nil && werr == nil
	}
	b, err := os.ReadFile(file) //nolint:gosec // A reservation file of ours.
	if err != nil {
		return false
	}
	if owner, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(owner, 0) == nil {
		return false
	}
	return os.WriteFile(file, pid, 0o600) == nil
}

// addressesInUse are the addresses of this machine's interfaces.
func addressesInUse() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, errors.Wrap(err, "cannot list the machine's addresses")
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}

// ip runs iproute2's ip with args.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput() //nolint:gosec // iproute2 on the node's own names.
	if err != nil {
		return errors.Wrapf(err, "cannot run ip %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}

// createBridge creates the node's bridge with the gateway address, up,
// before any pod: the Node's InternalIP is that address, and the host's
// services are reached there.
func createBridge(ctx context.Context, l layout) error {
	if err := ip(ctx, "link", "add", l.Bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := ip(ctx, "addr", "add", netip.PrefixFrom(l.gateway(), l.Subnet.Bits()).String(), "dev", l.Bridge); err != nil {
		return err
	}
	return ip(ctx, "link", "set", l.Bridge, "up")
}

// deleteBridge deletes the node's bridge and any veth still attached to
// it; a bridge already gone is not an error.
func deleteBridge(ctx context.Context, l layout) error {
	if _, err := net.InterfaceByName(l.Bridge); err != nil {
		return nil //nolint:nilerr // No such interface: nothing to delete.
	}
	out, _ := exec.CommandContext(ctx, "ip", "-o", "link", "show", "master", l.Bridge).Output() //nolint:gosec // The node's own bridge.
	var errs []error
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		// "7: vethabc@if2: <...>": the name is the second field, up to '@'.
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if err := ip(ctx, "link", "del", name); err != nil {
			// A veth goes with its pod's network namespace, which the
			// kernel may remove between the listing and here.
			if _, gone := net.InterfaceByName(name); gone == nil {
				errs = append(errs, err)
			}
		}
	}
	if err := ip(ctx, "link", "del", l.Bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cgroupDirs are the node's cgroup root in every hierarchy that has it.
func cgroupDirs(root string) []string {
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		d := filepath.Join(cgroupFS, e.Name(), root)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// createCgroupRoot creates the kubelet's cgroup root in every v1
// hierarchy the kubelet uses (it requires the root to exist).
func createCgroupRoot(root string) error {
	for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "systemd", "hugetlb"} {
		base := filepath.Join(cgroupFS, h)
		if _, err := os.Stat(base); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(base, root), 0o755); err != nil { //nolint:gosec // cgroup directories are 0755.
			return errors.Wrapf(err, "cannot create cgroup %s in %s", root, h)
		}
	}
	return nil
}

// killCgroups SIGKILLs every process in the cgroups under root until none
// is left, then removes the cgroups, deepest first.
func killCgroups(root string) error {
	dirs := cgroupDirs(root)
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := 0
		for _, d := range dirs {
			_ = filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
				if err != nil || !e.IsDir() {
					return nil //nolint:nilerr // A cgroup removed meanwhile.
				}
				for _, pid := range readPids(filepath.Join(path, "cgroup.procs")) {
					n++
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				return nil
			})
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.Errorf("cannot empty cgroup %s: %d processes still in it after 20s", root, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var errs []error
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, path)
			}
			return nil
		})
		// Children after their parents in a walk: remove in reverse.
		for _, p := range slices.Backward(all) {
			if err := removeCgroup(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes one empty cgroup, retrying while the kernel still
// counts an exiting process in it.
func removeCgroup(path string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(path); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Wrapf(err, "cannot remove cgroup %s", path)
}

// readPids reads a cgroup.procs file.
func readPids(file string) []int {
	b, err := os.ReadFile(file) //nolint:gosec // A cgroup file.
	if err != nil {
		return nil
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// killMentioning SIGKILLs every process whose command line mentions dir,
// other than this one: containerd's shims, which leave containerd's
// process group (they daemonize) and name its socket under dir.
func killMentioning(dir string) {
	for _, pid := range pidsMentioning(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// pidsMentioning are the processes, other than this one, whose command
// line mentions a path under dir: the node's containerd, kubelet and
// shims.
func pidsMentioning(dir string) []int {
	return pidsWhere(func(proc string) bool {
		b, err := os.ReadFile(filepath.Join(proc, "cmdline")) //nolint:gosec // A /proc file.
		return err == nil && strings.Contains(string(b), dir+"/")
	})
}

// pidsWhere are the processes, other than this one, whose /proc directory
// match says is wanted.
func pidsWhere(match func(procDir string) bool) []int {
	entries, _ := os.ReadDir(procFS)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if match(filepath.Join(procFS, e.Name())) {
			out = append(out, pid)
		}
	}
	return out
}

// unmountUnder detaches every mount at or under dir (containers' root
// filesystems, network namespaces, Secret volumes' tmpfs), the most recent
// first.
func unmountUnder(dir string) error {
	var errs []error
	for range 5 {
		points, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, p := range slices.Backward(points) {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !os.IsNotExist(err) {
				errs = append(errs, errors.Wrapf(err, "cannot unmount %s", p))
			}
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or under dir, in mount order.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the mount table")
	}
	defer func() { _ = f.Close() }()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out, errors.Wrap(s.Err(), "cannot read the mount table")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// capSysResource is CAP_SYS_RESOURCE's bit: lowering a process's
// oom_score_adj needs it.
const capSysResource = 24

// hasCapability reports whether this process has the capability bit in
// its effective set.
func hasCapability(bit uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && eff&(1<<bit) != 0
		}
	}
	return false
}

// subnetFile, in a node's directory, holds its pod range, for a sweep.
const subnetFile = "subnet"

// ownerFile, in a node's directory, holds the pid of the process that
// started the node.
const ownerFile = "owner"

// sweep removes what nodes whose starting process died without stopping
// them (a test binary killed mid-run) left on this machine: for every
// node directory whose owner is dead, the processes and cgroups under its
// cgroup root, its shims, its mounts, its bridge and the directory.
func sweep(ctx context.Context, logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), namePrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile)) //nolint:gosec // A node directory's owner file.
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		// The pod range, which the guard route names, if it was written.
		subnet, _ := os.ReadFile(filepath.Join(dir, subnetFile)) //nolint:gosec // A node directory's own file.
		p, _ := netip.ParsePrefix(strings.TrimSpace(string(subnet)))
		l := newLayout(strings.TrimPrefix(filepath.Base(dir), namePrefix), dir, p)
		err = errors.Join(killCgroups(l.CgroupRoot), nil)
		killMentioning(dir)
		err = errors.Join(err, unmountUnder(dir), deleteBridge(ctx, l), killCgroups(l.CgroupRoot), deleteGuardRules(ctx, l))
		if err == nil {
			err = os.RemoveAll(dir)
		}
		if err != nil {
			logf("cannot sweep node %s left by a process that died: %v", l.Name, err)
			continue
		}
		logf("swept node %s left by a process that died", l.Name)
	}
}
