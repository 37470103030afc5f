package node

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestPulsarImage runs the composed topic Job's script (from the minimal
// claim's render golden file) as the Job's pod would, in PulsarImage's
// files: chrooted into them as uid 10000 gid 0 in /pulsar, with the image's
// and the Job's environment, against a real broker. With the whole image
// the script creates the tenant, namespace and topics and says so; without
// curl, which it calls the broker with, or sed, which it reads the answers
// with, it fails.
func TestPulsarImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestPulsarImage runs the Job's script in the image's files through chroot, which needs root: run the tests as root, as .ci/run does")
	}
	job := topicJob(t)
	c := job.Spec.Template.Spec.Containers[0]
	sc := job.Spec.Template.Spec.SecurityContext
	if c.Image != "apachepulsar/pulsar:"+armada.PulsarVersion || sc.RunAsUser == nil || sc.RunAsGroup == nil {
		t.Fatalf("the topic Job runs %s as %v:%v, want apachepulsar/pulsar:%s as a set user and group", c.Image, sc.RunAsUser, sc.RunAsGroup, armada.PulsarVersion)
	}
	p := testenv.StartPulsar(t)

	cases := map[string]struct {
		drop string
		ok   bool
		want string
	}{
		"Image":       {ok: true, want: "Pulsar topics ready"},
		"WithoutSed":  {drop: "/bin/sed", want: "sed: command not found"},
		"WithoutCurl": {drop: "/usr/bin/curl", want: "curl: command not found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			began := time.Now()
			im, err := PulsarImage(PulsarImageOptions{Tools: slices.DeleteFunc(slices.Clone(pulsarTools), func(s string) bool { return s == tc.drop })})
			if err != nil {
				t.Fatal(err)
			}
			size := 0
			for _, f := range im.Files {
				size += len(f.Data)
			}
			t.Logf("PulsarImage: %d files, %.1f MiB, in %s", len(im.Files), float64(size)/(1<<20), time.Since(began).Round(time.Millisecond))
			if im.Ref != c.Image || im.Config.User != "10000" || im.Config.WorkingDir != "/pulsar" {
				t.Fatalf("PulsarImage is %s as %q in %q, want %s as 10000 in /pulsar", im.Ref, im.Config.User, im.Config.WorkingDir, c.Image)
			}
			// A container runtime makes /proc and /dev to mount them on.
			root := writeRootfs(t, append(slices.Clone(im.Files), File{Path: "/proc", Dir: true, Mode: 0o555}, File{Path: "/dev", Dir: true, Mode: 0o755}))

			env := slices.Clone(im.Config.Env)
			for _, e := range c.Env {
				if e.Name == "ADMIN_URL" {
					e.Value = p.AdminURL()
				}
				env = append(env, e.Name+"="+e.Value)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), c.Command[0], c.Command[1:]...) //nolint:gosec // The rendered Job's command.
			cmd.Env, cmd.Dir = env, im.Config.WorkingDir
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Chroot:     root,
				Credential: &syscall.Credential{Uid: uint32(*sc.RunAsUser), Gid: uint32(*sc.RunAsGroup)}, //nolint:gosec // The Job's small ids.
			}
			began = time.Now()
			mountProcDev(t, root)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			t.Logf("the script ran in %s; stdout:\n%s\nstderr:\n%s", time.Since(began).Round(time.Millisecond), stdout.String(), stderr.String())
			if got := err == nil; got != tc.ok {
				t.Errorf("the script succeeded: %t (%v), want %t; %s", got, err, tc.ok, p.State())
			}
			if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
				t.Errorf("the script's output has no %q", tc.want)
			}
			if tc.ok {
				checkTopics(t, p)
				checkLayer(t, im)
			}
		})
	}
}

// checkLayer checks the image's files make one layer, each path once, and
// logs its size as pushed (uncompressed) and how long it takes to build.
func checkLayer(t *testing.T, im Image) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range im.Files {
		if seen[f.Path] {
			t.Errorf("the image holds %s twice", f.Path)
		}
		seen[f.Path] = true
	}
	began := time.Now()
	img, err := im.build()
	if err != nil {
		t.Fatal(err)
	}
	size, err := img.Size()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var layer int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		layer += n
	}
	t.Logf("the image's layer is %.1f MiB uncompressed (manifest %d bytes), built in %s", float64(layer)/(1<<20), size, time.Since(began).Round(time.Millisecond))
}

// topicJob is the topic Job the minimal claim renders.
func topicJob(t *testing.T) *batchv1.Job {
	t.Helper()
	objs, err := manifest.ReadFile(testutil.Path("test", "render", "testdata", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Job" || o.GetLabels()["app.kubernetes.io/component"] != "pulsar-topics" {
			continue
		}
		job := &batchv1.Job{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, job); err != nil {
			t.Fatal(err)
		}
		if len(job.Spec.Template.Spec.Containers) != 1 || job.Spec.Template.Spec.SecurityContext == nil {
			t.Fatalf("the topic Job %s has %d containers and security context %v, want one and one", job.Name, len(job.Spec.Template.Spec.Containers), job.Spec.Template.Spec.SecurityContext)
		}
		return job
	}
	t.Fatal("minimal.yaml's render has no pulsar-topics Job")
	return nil
}

// writeRootfs writes an image's files into a temporary directory, each
// with its mode, and returns the directory.
func writeRootfs(t *testing.T, files []File) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range sorted {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		var err error
		if f.Dir {
			err = os.Mkdir(p, 0o700)
		} else {
			err = os.WriteFile(p, f.Data, 0o600)
		}
		if err == nil {
			err = os.Chmod(p, os.FileMode(f.Mode&0o777)|sticky(f.Mode))
		}
		if err != nil {
			t.Fatalf("cannot write the image's %s: %v", f.Path, err)
		}
	}
	return root
}

// devices are the device nodes a container runtime gives a container.
var devices = []string{"null", "zero", "full", "random", "urandom"}

// mountProcDev mounts /proc and /dev in root as a container has them
// (the loader finds a binary's $ORIGIN through /proc/self/exe; TLS reads
// /dev/urandom), and unmounts them when the test ends. They are
// mounted in the test's own mount namespace. A namespace of the script's
// own would have to be made on a thread of this process that then ends
// (it cannot rejoin the others), and ending a thread kills every process
// forked from it with a parent-death signal: the test's Pulsar broker
// died that way when the thread was the one it was started from.
func mountProcDev(t *testing.T, root string) {
	t.Helper()
	var mounted []string
	t.Cleanup(func() {
		for _, m := range slices.Backward(mounted) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				t.Errorf("cannot unmount %s: %v", m, err)
			}
		}
	})
	mount := func(source, target, fstype string, flags uintptr, data string) {
		t.Helper()
		if err := syscall.Mount(source, target, fstype, flags, data); err != nil {
			t.Fatalf("cannot mount %s on %s: %v", source, target, err)
		}
		mounted = append(mounted, target)
	}
	mount("proc", filepath.Join(root, "proc"), "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
	dev := filepath.Join(root, "dev")
	mount("tmpfs", dev, "tmpfs", syscall.MS_NOSUID, "mode=755")
	for _, d := range devices {
		p := filepath.Join(dev, d)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatalf("cannot create /dev/%s: %v", d, err)
		}
		mount("/dev/"+d, p, "", syscall.MS_BIND, "")
	}
}

// sticky is os.ModeSticky if the tar mode has it (a world-writable /tmp).
func sticky(mode int64) os.FileMode {
	if mode&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

// checkTopics checks the broker has the topics the minimal claim's Job
// creates: events with two partitions, and control-plane.
func checkTopics(t *testing.T, p *testenv.Pulsar) {
	t.Helper()
	type topics struct {
		Partitioned, NonPartitioned []string
		Partitions                  int
	}
	var got topics
	for path, into := range map[string]any{
		"/admin/v2/persistent/armada/armada/partitioned":       &got.Partitioned,
		"/admin/v2/persistent/armada/armada":                   &got.NonPartitioned,
		"/admin/v2/persistent/armada/armada/events/partitions": &struct{ Partitions *int }{&got.Partitions},
	} {
		body, err := p.Admin(t.Context(), http.MethodGet, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(body), into); err != nil {
			t.Fatalf("cannot decode %s: %v: %s", path, err, body)
		}
	}
	// The partitions of events are topics too.
	got.NonPartitioned = slices.DeleteFunc(got.NonPartitioned, func(s string) bool { return strings.Contains(s, "-partition-") })
	want := topics{
		Partitioned:    []string{"persistent://armada/armada/events"},
		NonPartitioned: []string{"persistent://armada/armada/control-plane"},
		Partitions:     2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the broker's topics (-want +got):\n%s", diff)
	}
}
