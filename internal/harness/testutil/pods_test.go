package testutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodState(t *testing.T) {
	logs := func(c string) string { return "last line of " + c }
	cases := map[string]struct {
		reason string
		status corev1.PodStatus
		logs   func(string) string
		want   string
	}{
		"Containers": {
			reason: "Each container's state and restarts, and the log of each that is not ready.",
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "a", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "b", RestartCount: 2, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}},
				{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3}}},
			}},
			logs: logs,
			want: "p Running, a running, ready true, 0 restarts" +
				", b waiting (CrashLoopBackOff: back-off), 2 restarts, log:\nlast line of b" +
				", c terminated (Error, exit 3), 0 restarts, log:\nlast line of c",
		},
		"NoLogs": {
			reason: "Without logs, no log.",
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "b", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
			}},
			want: "p Running, b waiting (ImagePullBackOff: ), 0 restarts",
		},
		"Unscheduled": {
			reason: "Before any container has a status, the conditions that do not hold.",
			status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/1 nodes are available"},
			}},
			logs: logs,
			want: "p Pending, PodScheduled: 0/1 nodes are available",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: tc.status}
			if diff := cmp.Diff(tc.want, PodState(p, tc.logs)); diff != "" {
				t.Errorf("%s\nPodState(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
