package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
)

// executorUser is the default claim's local executor, as the Kubernetes
// API knows it.
const executorUser = "system:serviceaccount:armada:armada-executor-local"

// admissionInstall renders the default claim in namespace armada with
// queue jobflow: its job namespace armada-jobs and admission policy.
func admissionInstall(t *testing.T) []armada.Object {
	t.Helper()
	xr := armada.XR{
		Name:   "armada-x7k2p",
		Labels: map[string]string{"crossplane.io/claim-name": "armada", "crossplane.io/claim-namespace": "armada"},
		Spec: v1alpha1.ArmadaSpec{
			Postgres: v1alpha1.Postgres{Host: "pg", User: "armada", SSLMode: "disable", PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "pg", Key: "password"}},
			Redis:    v1alpha1.Redis{Addrs: []string{"redis:6379"}},
			Pulsar:   v1alpha1.Pulsar{URL: "pulsar://pulsar:6650", AdminURL: "http://pulsar:8080"},
			Auth:     v1alpha1.Auth{BasicUsers: []v1alpha1.BasicUser{{Name: "admin", Groups: []string{"armada-admins"}}}},
			Queues:   []v1alpha1.ArmadaQueue{{Name: "jobflow", QueueParameters: armadav1.QueueParameters{PriorityFactor: "1"}}},
		},
	}
	in, errs := armada.New(xr)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	out, err := armada.Render(in, armada.Options{Rand: armada.KeyedRand([]byte("k"), "xr")})
	if err != nil {
		t.Fatal(err)
	}
	var objs []armada.Object
	for _, o := range out.Objects {
		switch o.Object.GetObjectKind().GroupVersionKind().Kind {
		case "Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			objs = append(objs, o)
		case "ServiceAccount", "RoleBinding":
			if o.Object.GetNamespace() == "armada-jobs" {
				objs = append(objs, o)
			}
		}
	}
	return objs
}

// TestAdmissionPolicy applies the job namespace and admission policy
// function-armada composes for the default claim to a real kube-apiserver
// and creates pods as the Armada's executor (impersonating its
// ServiceAccount, with its composed RoleBinding, and one in the Armada's
// own namespace standing for any grant there): the CEL is the API
// server's, not a copy. A job's pod is admitted only in a job namespace of
// its queue, as the namespace's default ServiceAccount, with no token, no
// Secret the Armada composes and no component labels; each refusal is
// Forbidden (which Armada's executor reports as the job's failure, see
// internal/executor/job/submit.go isRecoverable) and names its rule. Pods
// not created by the executor are not the policy's concern.
func TestAdmissionPolicy(t *testing.T) {
	c := StartForTest(t, Options{KubernetesOnly: true, SkipProviderKubernetes: true})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cl := c.Client()
	roles := armada.FixedClusterRoles()
	for i := range roles {
		if err := cl.Create(ctx, &roles[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"armada", "elsewhere"} {
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range admissionInstall(t) {
		if err := cl.Create(ctx, o.Object); err != nil {
			t.Fatalf("cannot create %s: %v", o.Key, err)
		}
	}
	// The executor's job rights in the Armada's namespace and in an
	// unannotated one: what RBAC alone allowed before (and what a
	// platform might grant); the policy must still refuse.
	for _, ns := range []string{"armada", "elsewhere"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "executor-jobs", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: armada.FixedJobRoleName("executor")},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "armada-executor-local", Namespace: "armada"}},
		}
		if err := cl.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}

	cfg := c.RESTConfig()
	cfg.Impersonate.UserName = executorUser
	executor := kubernetes.NewForConfigOrDie(cfg)
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig())

	job := func(ns string, mods ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "job-", Namespace: ns, Labels: map[string]string{"armada_queue_id": "jobflow", "armada_job_id": "j"}},
			// Restricted, as the job namespaces' Pod Security level asks.
			Spec: corev1.PodSpec{
				RestartPolicy:   corev1.RestartPolicyNever,
				SecurityContext: armada.RestrictedPodSecurity(1000, 1000, nil),
				Containers:      []corev1.Container{{Name: "work", Image: "busybox", SecurityContext: armada.RestrictedContainerSecurity()}},
			},
		}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	volume := func(v corev1.Volume) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
	}

	// The policy takes effect within seconds of its creation: until a job
	// in the Armada's namespace is refused, wait.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := executor.CoreV1().Pods("armada").Create(ctx, job("armada"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), armada.RuleJobNamespace), nil
	}); err != nil {
		t.Fatalf("the admission policy never refused a job in the Armada's namespace: %v", err)
	}

	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		admin  bool
		// rule is the rule that refuses it, empty if admitted.
		rule string
	}{
		"WellBehaved": {
			reason: "A job of queue jobflow in its job namespace, as the default ServiceAccount, is admitted.",
			pod:    job("armada-jobs"),
		},
		"ArmadasNamespace": {
			reason: "The Armada's own namespace is never a job namespace.",
			pod:    job("armada"), rule: armada.RuleJobNamespace,
		},
		"UnannotatedNamespace": {
			reason: "A namespace not composed for this Armada's jobs is refused.",
			pod:    job("elsewhere"), rule: armada.RuleJobNamespace,
		},
		"AnotherQueue": {
			reason: "A job namespace of other queues is refused to this queue's job.",
			pod:    job("armada-jobs", func(p *corev1.Pod) { p.Labels["armada_queue_id"] = "team-x" }), rule: armada.RuleJobNamespace,
		},
		"NoQueue": {
			reason: "A pod with no queue label is no job of a queue.",
			pod:    job("armada-jobs", func(p *corev1.Pod) { delete(p.Labels, "armada_queue_id") }), rule: armada.RuleJobNamespace,
		},
		"ExecutorServiceAccount": {
			reason: "The executor's ServiceAccount (or any but default) is refused.",
			pod:    job("armada-jobs", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "armada-executor-local" }), rule: armada.RuleServiceAccount,
		},
		"AutomountToken": {
			reason: "A job asking for the token to be mounted is refused.",
			pod:    job("armada-jobs", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(true) }), rule: armada.RuleServiceAccountToken,
		},
		"TokenVolume": {
			reason: "A projected service account token, as a job asks for it or the ServiceAccount admission plugin adds it (naming the default " +
				"ServiceAccount, which this control plane's API server, without that plugin, does not), is refused.",
			pod: job("armada-jobs", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }, volume(corev1.Volume{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
			}}})),
			rule: armada.RuleServiceAccountToken,
		},
		"TLSSecretVolume": {
			reason: "A volume of the Armada's TLS Secret is refused.",
			pod: job("armada-jobs", volume(corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "armada-tls"},
			}})),
			rule: armada.RuleComposedSecrets,
		},
		"ProjectedCredentials": {
			reason: "A projected volume of the Armada's credentials Secret is refused.",
			pod: job("armada-jobs", volume(corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "armada-credentials"}}}},
			}}})),
			rule: armada.RuleComposedSecrets,
		},
		"OwnSecret": {
			reason: "A Secret of the team's own is fine.",
			pod: job("armada-jobs", volume(corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "my-data"},
			}})),
		},
		"SchedulerLabels": {
			reason: "The labels the scheduler's Service selects are refused.",
			pod: job("armada-jobs", func(p *corev1.Pod) {
				p.Labels["app.kubernetes.io/name"] = "armada"
				p.Labels["app.kubernetes.io/instance"] = "armada"
				p.Labels["app.kubernetes.io/component"] = "scheduler"
			}),
			rule: armada.RuleComponentLabels,
		},
		"NotTheExecutor": {
			reason: "Pods others create are not the policy's: the platform's admin creates one in the Armada's namespace.",
			pod:    job("armada"), admin: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cs := executor
			if tc.admin {
				cs = admin
			}
			_, err := cs.CoreV1().Pods(tc.pod.Namespace).Create(ctx, tc.pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case tc.rule == "" && err != nil:
				t.Errorf("%s\ncreate: %v; want admitted", tc.reason, err)
			case tc.rule == "":
			case err == nil:
				t.Errorf("%s\ncreate admitted; want refused by rule %s", tc.reason, tc.rule)
			case !kerrors.IsForbidden(err) || !strings.Contains(err.Error(), "rule "+tc.rule+":"):
				t.Errorf("%s\ncreate: %v (reason %s); want Forbidden naming rule %s", tc.reason, err, kerrors.ReasonForError(err), tc.rule)
			default:
				t.Logf("refused: %v", err)
			}
		})
	}
}
