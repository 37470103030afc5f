package node

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
)

// runComposed creates, in namespace ns, the composed Deployment name of
// the render golden file's pod template as a Pod bound to node, with the
// Secrets and ServiceAccount the template names.
func runComposed(ctx context.Context, t *testing.T, cs kubernetes.Interface, r *conformance.Render, ns, name, node string) *corev1.Pod {
	t.Helper()
	var dep *appsv1.Deployment
	for _, u := range r.Objects {
		if u.GetKind() == "Deployment" && u.GetName() == name {
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep == nil {
		t.Fatalf("the render composes no Deployment %s", name)
	}
	for _, u := range r.Objects {
		sa := u.GetKind() == "ServiceAccount" && u.GetName() == dep.Spec.Template.Spec.ServiceAccountName
		if u.GetKind() != "Secret" && !sa {
			continue
		}
		c := u.DeepCopy()
		c.SetNamespace(ns)
		c.SetOwnerReferences(nil)
		var err error
		switch c.GetKind() {
		case "Secret":
			s := &corev1.Secret{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(c.Object, s); err == nil {
				_, err = cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
			}
		default:
			sa := &corev1.ServiceAccount{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(c.Object, sa); err == nil {
				_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
			}
		}
		if err != nil {
			t.Fatalf("cannot create %s %s: %v", c.GetKind(), c.GetName(), err)
		}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: dep.Spec.Template.Labels}, Spec: dep.Spec.Template.Spec}
	p.Spec.NodeName = node
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("cannot create pod %s: %v", name, err)
	}
	return p
}
