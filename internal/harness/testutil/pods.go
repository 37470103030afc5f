package testutil

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodState summarises a pod for progress messages and errors: its name and
// phase, each container's state and restarts and, before any container
// has a status, the conditions that do not hold. logs, when set, gives the
// tail of a container that is not ready.
func PodState(p *corev1.Pod, logs func(container string) string) string {
	var b strings.Builder
	b.WriteString(p.Name + " " + string(p.Status.Phase))
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			fmt.Fprintf(&b, ", %s waiting (%s: %s)", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, ", %s terminated (%s, exit %d)", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		default:
			fmt.Fprintf(&b, ", %s running, ready %t", c.Name, c.Ready)
		}
		fmt.Fprintf(&b, ", %d restarts", c.RestartCount)
		if !c.Ready && logs != nil {
			b.WriteString(", log:\n" + logs(c.Name))
		}
	}
	if len(p.Status.ContainerStatuses) == 0 {
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, ", %s: %s", c.Type, c.Message)
			}
		}
	}
	return b.String()
}
