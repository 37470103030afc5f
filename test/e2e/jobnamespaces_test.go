package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// TestJobNamespaceGuards: the job namespaces a team queue composes hold
// the line the platform's ArmadaTenancyPolicy draws (spec.jobNamespaces),
// against the real admission of kube-apiserver:
//   - the policy's schema refuses an unknown level and a bad name pattern;
//   - a job namespace outside the policy's names (by default the tenant's
//     namespace as a prefix) is refused on the claim naming the field and
//     the setting, and nothing is composed;
//   - an allowed one is composed with pod-security.kubernetes.io/enforce at
//     the policy's level (restricted by default) and the policy's
//     ResourceQuota and LimitRange, with the queue's mark;
//   - Pod Security admission refuses a privileged, host-PID pod there
//     (created as cluster admin, so nothing but the namespace's level
//     refuses it) and admits a restricted-compliant one, which gets the
//     LimitRange's defaults; a root pod is refused under restricted and
//     admitted once the policy lowers the level to baseline (the label
//     follows the policy), where the host-PID pod is still refused; the
//     ResourceQuota refuses the pod over its count.
func TestJobNamespaceGuards(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	const ns = "e2e-nsguard"
	jobs := ns + "-ml" // not ns-jobs, the Armada's own default job namespace
	guards := func(level string) map[string]any {
		jn := map[string]any{
			"resourceQuota": map[string]any{"hard": map[string]any{"pods": "2"}},
			"limitRange": map[string]any{"limits": []any{map[string]any{
				"type": "Container", "default": map[string]any{"cpu": "250m", "memory": "64Mi"},
				"defaultRequest": map[string]any{"cpu": "100m", "memory": "32Mi"},
			}}},
		}
		if level != "" {
			jn["podSecurity"] = level
		}
		return map[string]any{"jobNamespaces": jn}
	}
	t.Run("PolicySchema", func(t *testing.T) {
		// The CRD refuses a level Pod Security does not have and a name
		// pattern with anything but [a-z0-9*-] and {namespace}.
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": claimAPIVersion, "kind": "ArmadaTenancyPolicy", "metadata": map[string]any{"name": ns + "-bad"},
			"spec": map[string]any{"jobNamespaces": map[string]any{"podSecurity": "root", "names": []any{"{tenant}_jobs"}}},
		}}
		err := kube().Create(ctx, bad)
		if err == nil {
			_ = kube().Delete(ctx, bad)
			t.Fatal("a policy with podSecurity root and the name pattern {tenant}_jobs was accepted")
		}
		for _, want := range []string{`spec.jobNamespaces.podSecurity: Unsupported value: "root"`, "spec.jobNamespaces.names[0]: Invalid value"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the bad policy: %v, want it naming %q", err, want)
			}
		}
		t.Logf("the bad policy: %v", err)
	})
	tenancyPolicy(t, ns, guards(""))
	target := applyExample(t, "minimal", ns)
	claimAccepted(t, target, "True")
	member := tenant(t, ns)
	queue := teamQueueClaim(ns, ns, target.GetName())
	_ = unstructured.SetNestedStringSlice(queue.Object, []string{"e2e-other-jobs"}, "spec", "namespaces")
	if err := member.Create(ctx, queue); err != nil {
		t.Fatalf("the tenant cannot create its queue claim: %v", err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), queue) })

	t.Run("NameRefused", func(t *testing.T) {
		msg := claimAccepted(t, queue, "False", "spec.namespaces[0]: Forbidden: namespace e2e-other-jobs is not a name tenant "+ns+"'s job namespaces may have",
			"name one matching "+ns+"-*", `ArmadaTenancyPolicy "`+ns+`" spec.jobNamespaces.names`)
		t.Logf("on the queue claim: %s", msg)
		time.Sleep(3 * time.Second)
		if refs := queueRefs(t, queue); len(refs) != 0 {
			t.Errorf("the refused queue composed %v", refs)
		}
		if get(t, "v1", "Namespace", "", "e2e-other-jobs") != nil {
			t.Error("the refused job namespace e2e-other-jobs exists")
		}
	})

	setNamespaces(t, member, queue, jobs)
	claimAccepted(t, queue, "True")
	mark := "ArmadaQueueClaim " + ns + "/ml"

	t.Run("Composed", func(t *testing.T) {
		d := waitFor(t, "the job namespace enforcing restricted, with its quota and limits", func() (bool, string) {
			n := get(t, "v1", "Namespace", "", jobs)
			if n == nil {
				return false, "no namespace " + jobs
			}
			l := n.GetLabels()
			for _, mode := range []string{"enforce", "warn", "audit"} {
				if l["pod-security.kubernetes.io/"+mode] != "restricted" || l["pod-security.kubernetes.io/"+mode+"-version"] != "latest" {
					return false, fmt.Sprintf("labels %v", l)
				}
			}
			for _, kind := range []string{"ResourceQuota", "LimitRange"} {
				o := get(t, "v1", kind, jobs, "armada-jobs")
				if o == nil {
					return false, "no " + kind
				}
				if got := o.GetAnnotations()["armadaproject.io/owner"]; got != mark {
					return false, kind + " mark " + got
				}
			}
			// The quota counts only once kube-controller-manager computed it.
			hard, _, _ := unstructured.NestedStringMap(get(t, "v1", "ResourceQuota", jobs, "armada-jobs").Object, "status", "hard")
			return hard["pods"] == "2", fmt.Sprintf("quota status.hard %v", hard)
		})
		t.Logf("job namespace guarded %s after the claim was Accepted", d.Round(time.Millisecond))
	})

	hostPID := jobPod(jobs, "e2e-hostpid", func(p *corev1.Pod) {
		p.Spec.HostPID = true
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	root := jobPod(jobs, "e2e-root", func(p *corev1.Pod) { p.Spec.SecurityContext = nil; p.Spec.Containers[0].SecurityContext = nil })
	refused := func(t *testing.T, p *corev1.Pod, parts ...string) {
		t.Helper()
		err := kube().Create(ctx, p.DeepCopy())
		if err == nil {
			_ = kube().Delete(ctx, p)
			t.Fatalf("pod %s was admitted, want it refused naming %q", p.Name, parts)
		}
		for _, s := range parts {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("pod %s: %v, want it refused naming %q", p.Name, err, parts)
			}
		}
		t.Logf("pod %s refused: %v", p.Name, err)
	}
	// Admitted pods stay until the whole test ends: the quota counts them.
	top := t
	admitted := func(t *testing.T, p *corev1.Pod) *corev1.Pod {
		t.Helper()
		got := p.DeepCopy()
		if err := kube().Create(ctx, got); err != nil {
			t.Fatalf("pod %s refused: %v", p.Name, err)
		}
		top.Cleanup(func() { _ = kube().Delete(ctx, got) })
		return got
	}

	t.Run("Restricted", func(t *testing.T) {
		refused(t, hostPID, `violates PodSecurity "restricted:latest"`, "host namespaces (hostPID=true)", "privileged")
		refused(t, root, `violates PodSecurity "restricted:latest"`, "runAsNonRoot")
		p := admitted(t, jobPod(jobs, "e2e-restricted", nil))
		lim := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
		if lim.String() != "250m" {
			t.Errorf("the admitted pod's CPU limit is %q, want the LimitRange's default 250m", lim.String())
		}
	})

	t.Run("Baseline", func(t *testing.T) {
		tenancyPolicy(t, ns, guards("baseline"))
		// Crossplane runs the function again on its next reconcile of the
		// XR; a change to it starts one now.
		touch(t, get(t, claimAPIVersion, "XArmadaQueue", "", queueXR(t, queue)))
		waitFor(t, "the job namespace enforcing baseline", func() (bool, string) {
			l := get(t, "v1", "Namespace", "", jobs).GetLabels()
			return l["pod-security.kubernetes.io/enforce"] == "baseline", fmt.Sprintf("labels %v", l)
		})
		refused(t, hostPID, `violates PodSecurity "baseline:latest"`, "host namespaces (hostPID=true)", "privileged")
		admitted(t, root)
		refused(t, jobPod(jobs, "e2e-third", nil), "exceeded quota: armada-jobs", "limited: pods=2")
	})
}

// jobPod is a pod in a job namespace that meets the restricted Pod
// Security Standard (as Armada's jobs there must), changed by mutate.
func jobPod(ns, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			SecurityContext: armada.RestrictedPodSecurity(1000, 1000, nil),
			Containers: []corev1.Container{{
				Name: "job", Image: "busybox", Command: []string{"true"},
				SecurityContext: armada.RestrictedContainerSecurity(),
				Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}},
			}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}
