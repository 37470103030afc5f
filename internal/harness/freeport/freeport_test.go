package freeport

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestReserveDistinct: processes reserving ports at the same time, through
// one registry, never get the same port, and every port lies in Range and
// can be bound. Two owners each take 2,000 of Range's ~12,800 ports, so
// without the registry some would collide.
func TestReserveDistinct(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry")
	owners := []int{os.Getpid(), os.Getppid()} // Two live processes.
	got := make([][]int, len(owners))
	errs := make([]error, len(owners))
	var wg sync.WaitGroup
	for i, pid := range owners {
		wg.Go(func() {
			for range 20 {
				p, err := reserve(t.Context(), path, pid, 100)
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], p...)
			}
		})
	}
	wg.Wait()
	lo, hi := Range()
	owner := map[int]int{}
	for i, ps := range got {
		if errs[i] != nil {
			t.Fatalf("reserve for pid %d: %v", owners[i], errs[i])
		}
		if len(ps) != 2000 {
			t.Errorf("pid %d got %d ports, want 2000", owners[i], len(ps))
		}
		for _, p := range ps {
			if p < lo || p >= hi {
				t.Errorf("port %d outside [%d, %d)", p, lo, hi)
			}
			if o, ok := owner[p]; ok {
				t.Errorf("port %d given to pid %d and to pid %d", p, o, owners[i])
			}
			owner[p] = owners[i]
		}
	}
	// The registry holds exactly what was handed out.
	held := readFile(t, path)
	if len(held) != len(owner) {
		t.Errorf("registry holds %d ports, want %d", len(held), len(owner))
	}
	for p, pid := range owner {
		if held[p] != pid {
			t.Errorf("registry has port %d for pid %d, want %d", p, held[p], pid)
		}
	}
	// A reserved port can be bound by its owner.
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", ":"+strconv.Itoa(got[0][0]))
	if err != nil {
		t.Fatalf("cannot bind reserved port %d: %v", got[0][0], err)
	}
	_ = l.Close()
}

// TestReserveForgetsExitedProcesses: a port reserved by a process that has
// exited is dropped from the registry and can be handed out again; one of
// a live process is kept.
func TestReserveForgetsExitedProcesses(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := cmd.Process.Pid, os.Getppid()
	lo, _ := Range()
	path := filepath.Join(t.TempDir(), "registry")
	content := strconv.Itoa(lo) + " " + strconv.Itoa(dead) + "\n" + strconv.Itoa(lo+1) + " " + strconv.Itoa(live) + "\nnot a line\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := reserve(t.Context(), path, os.Getpid(), 1); err != nil {
		t.Fatal(err)
	}
	held := readFile(t, path)
	if _, ok := held[lo]; ok {
		t.Errorf("port %d of exited pid %d still held: %v", lo, dead, held)
	}
	if held[lo+1] != live {
		t.Errorf("port %d of live pid %d dropped: %v", lo+1, live, held)
	}
	if len(held) != 2 {
		t.Errorf("registry holds %v, want the live entry and the new port", held)
	}
}

// readFile parses a registry file.
func readFile(t *testing.T, path string) map[int]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	held := map[int]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("registry line %q", line)
		}
		p, err1 := strconv.Atoi(f[0])
		pid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("registry line %q", line)
		}
		held[p] = pid
	}
	return held
}
