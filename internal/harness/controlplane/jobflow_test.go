package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// TestJobFlowPods runs kube-scheduler and KWOK (Options.JobFlow) and takes
// bare pods, like the ones Armada's executor creates (only a node selector
// on the node's hostname label), through the project's Stages: a job pod
// (label armada_job_id) is bound, runs and succeeds; one whose job asks
// for exit code 3 fails with it; a pod that is no job's keeps running.
func TestJobFlowPods(t *testing.T) {
	c := StartForTest(t, Options{KubernetesOnly: true, JobFlow: true})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := c.AddNodes(ctx, Node{Name: "kwok-a", CPU: "16", Memory: "64Gi", GPU: "2", Labels: map[string]string{"pool": "gpu"}}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := c.Client().Get(ctx, client.ObjectKey{Name: "kwok-a"}, node); err != nil {
		t.Fatal(err)
	}
	wantAlloc := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("2"),
	}
	for name, want := range wantAlloc {
		if got := node.Status.Allocatable[name]; got.Cmp(want) != 0 {
			t.Errorf("node allocatable %s: got %s, want %s", name, got.String(), want.String())
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}
	if err := c.Client().Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		labels, annotations map[string]string
		phase               corev1.PodPhase
		exitCode            int32
	}{
		"JobSucceeds": {labels: map[string]string{jobIDLabel: "a"}, annotations: map[string]string{"kwok.armadaproject.io/run-for": "1s"}, phase: corev1.PodSucceeded},
		"JobFails":    {labels: map[string]string{jobIDLabel: "b"}, annotations: map[string]string{"kwok.armadaproject.io/exit-code": "3"}, phase: corev1.PodFailed, exitCode: 3},
		"NotAJob":     {phase: corev1.PodRunning},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(name), Namespace: "jobs", Labels: tc.labels, Annotations: tc.annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{corev1.LabelHostname: "kwok-a"},
					Containers:    []corev1.Container{{Name: "work", Image: "busybox"}},
				},
			}
			if err := c.Client().Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			for {
				if err := c.Client().Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
					t.Fatal(err)
				}
				if pod.Status.Phase == tc.phase && (tc.phase != corev1.PodRunning || time.Now().After(deadline.Add(-50*time.Second))) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("pod %s: phase %s (node %q), want %s; kwok log:\n%s", pod.Name, pod.Status.Phase, pod.Spec.NodeName, tc.phase, c.LogTail(ProcKWOK, 20))
				}
				time.Sleep(200 * time.Millisecond)
			}
			if pod.Spec.NodeName != "kwok-a" {
				t.Errorf("pod %s is bound to %q, want kwok-a", pod.Name, pod.Spec.NodeName)
			}
			var got int32
			for _, s := range pod.Status.ContainerStatuses {
				if s.State.Terminated != nil {
					got = s.State.Terminated.ExitCode
				}
			}
			if diff := cmp.Diff(tc.exitCode, got); diff != "" {
				t.Errorf("pod %s exit code: -want, +got:\n%s", pod.Name, diff)
			}
		})
	}
}

// TestJobFlowLater starts a control plane with Options.JobFlowLater and
// kube-scheduler's and KWOK's binaries absent, as make run does before it
// has built them: it starts without them, StartJobFlow refuses while they
// are missing (naming the make target), then starts both once they exist,
// and a Node AddNodes creates becomes Ready and untainted (KWOK runs it,
// and kube-controller-manager runs the job flow's node-lifecycle
// controller from the start).
func TestJobFlowLater(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent")
	c := StartForTest(t, Options{KubernetesOnly: true, JobFlow: true, JobFlowLater: true, KubeScheduler: absent, KWOK: absent})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if diff := cmp.Diff([]string{ProcEtcd, ProcKubeAPIServer, ProcKubeControllerManager}, c.ProcessNames()); diff != "" {
		t.Errorf("processes before StartJobFlow: -want, +got:\n%s", diff)
	}
	if err := c.StartJobFlow(ctx); err == nil || !strings.Contains(err.Error(), "make "+clusterBins) {
		t.Fatalf("StartJobFlow with the binaries absent: got error %v, want one naming make %s", err, clusterBins)
	}
	// Built now: their default paths in BinDir.
	c.opts.KubeScheduler, c.opts.KWOK = "", ""
	if err := c.StartJobFlow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNodes(ctx, Node{Name: "kwok-later", CPU: "4", Memory: "8Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := c.StartJobFlow(ctx); err == nil {
		t.Error("StartJobFlow a second time: got no error, want one (it is already running)")
	}
}

// jobIDLabel is the label the Stages select job pods by.
const jobIDLabel = "armada_job_id"

// TestJobIDLabelIsArmadas checks the label the Stages select job pods by
// is the one Armada's executor puts on them, in every supported release's
// source (internal/executor/domain/pod_metadata.go).
func TestJobIDLabelIsArmadas(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stages), fmt.Sprintf(`.metadata.labels[%q]`, jobIDLabel)) {
		t.Fatalf("kwok/stages.yaml selects no pods by label %s", jobIDLabel)
	}
	re := regexp.MustCompile(`\bJobId\s*=\s*"([^"]+)"`)
	for _, v := range armada.SupportedVersions {
		f := filepath.Join(strings.TrimSpace(string(out)), "github.com", "armadaproject", "armada@v"+v, "internal", "executor", "domain", "pod_metadata.go")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("Armada %s source is not in the module cache (%v): run `make armada-bins`", v, err)
		}
		m := re.FindSubmatch(b)
		if len(m) < 2 || string(m[1]) != jobIDLabel {
			t.Errorf("Armada %s labels job pods %q (%s), but the KWOK Stages select %q", v, m, f, jobIDLabel)
		}
	}
}
