package jobflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// inClusterConfig is Armada's log line when it builds its Kubernetes
// client from the pod's ServiceAccount (internal/common/cluster).
const inClusterConfig = "Running with in cluster client configuration"

// checkIdentities checks each composed pod runs with exactly the
// Kubernetes credentials the kubelet would give it: none in its
// environment as a kubeconfig; where its spec mounts its ServiceAccount's
// token, that token at the in-cluster path, authenticating (TokenReview)
// as the composed ServiceAccount, and, for the executor and binoculars,
// Armada's log saying it uses it;
// where it does not, no token at all. So the executor creates job pods
// with its composed RBAC, not with an admin's. c reaches the cluster the
// runner runs the pods of (cluster names it in messages): the TokenReview
// is that cluster's API server's, so a remote executor's token must be
// one its worker cluster issued.
func checkIdentities(ctx context.Context, t *testing.T, cluster string, c client.Client, runner *podrun.Runner) {
	t.Helper()
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var sets appsv1.StatefulSetList
	if err := c.List(ctx, &sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	pods := map[string]corev1.PodSpec{}
	for _, d := range deps.Items {
		pods["Deployment/"+d.Name] = d.Spec.Template.Spec
	}
	for _, s := range sets.Items {
		pods["StatefulSet/"+s.Name] = s.Spec.Template.Spec
	}
	procs := runner.Processes()
	executors := 0
	for short, spec := range pods {
		id := cluster + ": " + short
		if len(procs[short]) == 0 {
			t.Errorf("%s: no process running", id)
			continue
		}
		pr := procs[short][0]
		proc := "/proc/" + strconv.Itoa(pr.Pid())
		env, err := os.ReadFile(proc + "/environ")
		if err != nil {
			t.Errorf("%s: cannot read its environment: %v", id, err)
			continue
		}
		if strings.Contains("\x00"+string(env), "\x00KUBECONFIG=") {
			t.Errorf("%s runs with a KUBECONFIG; a pod has none", id)
		}
		token, err := os.ReadFile(filepath.Join(proc, "root", podrun.ResolveMountPath(podrun.ServiceAccountMountPath), "token"))
		mounts := spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken
		if !mounts {
			if err == nil {
				t.Errorf("%s: its spec mounts no ServiceAccount token, but it sees one at %s", id, podrun.ServiceAccountMountPath)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: its spec mounts its ServiceAccount's token, but it sees none: %v", id, err)
			continue
		}
		tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: string(token)}}
		if err := c.Create(ctx, tr); err != nil {
			t.Fatalf("TokenReview: %v", err)
		}
		want := fmt.Sprintf("system:serviceaccount:%s:%s", ns, spec.ServiceAccountName)
		if !tr.Status.Authenticated || tr.Status.User.Username != want {
			t.Errorf("%s: its token authenticates as %q (authenticated: %t), want its composed ServiceAccount %q", id, tr.Status.User.Username, tr.Status.Authenticated, want)
			continue
		}
		// The executor and binoculars build their clients at startup
		// (internal/common/cluster) and log how; the scheduler, with one
		// replica, elects no leader through Kubernetes (leader.mode
		// standalone) and builds none.
		if (strings.Contains(id, "executor") || strings.Contains(id, "binoculars")) && !strings.Contains(pr.Log(), inClusterConfig) {
			t.Errorf("%s: its log does not say %q: it does not use its ServiceAccount's token", id, inClusterConfig)
		}
		if strings.Contains(id, "executor") {
			executors++
		}
		t.Logf("%s runs as %s", id, tr.Status.User.Username)
	}
	if executors == 0 {
		t.Errorf("%s: no executor runs with a ServiceAccount token (pods: %d)", cluster, len(pods))
	}
}
