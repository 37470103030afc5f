package tenancy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
)

// podSecurityLabels are the Pod Security labels of a job namespace at level.
func podSecurityLabels(level string) map[string]string {
	return map[string]string{
		"pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn": level, "pod-security.kubernetes.io/warn-version": "latest",
		"pod-security.kubernetes.io/audit": level, "pod-security.kubernetes.io/audit-version": "latest",
	}
}

func TestJobNamespace(t *testing.T) {
	quota := corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}
	limits := corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}
	meta := metav1.ObjectMeta{Name: "armada-jobs", Namespace: "team-a-jobs", Labels: map[string]string{
		"app.kubernetes.io/managed-by": "function-armada", "app.kubernetes.io/part-of": "armada",
	}}
	cases := map[string]struct {
		reason string
		policy Policy
		want   JobNamespace
	}{
		"BuiltIn": {
			reason: "Without a policy, job namespaces enforce (and warn and audit) restricted, with nothing in them.",
			policy: Policy{},
			want:   JobNamespace{Labels: podSecurityLabels("restricted")},
		},
		"UnsetLevel": {
			reason: "A policy that sets nothing of spec.jobNamespaces keeps restricted.",
			policy: policy(func(s *tenancyv1.TenancyPolicySpec) { s.MaxPriority = nil }),
			want:   JobNamespace{Labels: podSecurityLabels("restricted")},
		},
		"Privileged": {
			reason: "Only the platform's policy lowers the level.",
			policy: policy(func(s *tenancyv1.TenancyPolicySpec) { s.JobNamespaces.PodSecurity = tenancyv1.PodSecurityPrivileged }),
			want:   JobNamespace{Labels: podSecurityLabels("privileged")},
		},
		"QuotaAndLimits": {
			reason: "The policy's ResourceQuota and LimitRange specs are composed in the namespace.",
			policy: policy(func(s *tenancyv1.TenancyPolicySpec) {
				s.JobNamespaces = tenancyv1.JobNamespacePolicy{PodSecurity: "baseline", ResourceQuota: &quota, LimitRange: &limits}
			}),
			want: JobNamespace{Labels: podSecurityLabels("baseline"), Objects: []NamespaceObject{
				{Suffix: "-quota", Object: &corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: meta, Spec: quota}},
				{Suffix: "-limits", Object: &corev1.LimitRange{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"}, ObjectMeta: meta, Spec: limits}},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.policy.JobNamespace("team-a-jobs")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nJobNamespace(team-a-jobs): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckJobNamespaces(t *testing.T) {
	fp := field.NewPath("spec", "namespaces")
	cases := map[string]struct {
		reason string
		policy Policy
		names  []string
		want   field.ErrorList
	}{
		"TenantPrefix": {
			reason: "By default a job namespace is named after the tenant's namespace, a dash and more.",
			policy: Policy{},
			names:  []string{"team-a-jobs", "team-a-gpu"},
		},
		"OtherName": {
			reason: "By default any other name is refused, naming the field, the pattern and the policy.",
			policy: Policy{},
			names:  []string{"team-a-jobs", "team-b-jobs", "team-a"},
			want: field.ErrorList{
				field.Forbidden(fp.Index(1), "namespace team-b-jobs is not a name tenant team-a's job namespaces may have; name one matching team-a-*: "+
					"not allowed by "+builtin+" spec.jobNamespaces.names"),
				field.Forbidden(fp.Index(2), "namespace team-a is not a name tenant team-a's job namespaces may have; name one matching team-a-*: "+
					"not allowed by "+builtin+" spec.jobNamespaces.names"),
			},
		},
		"Patterns": {
			reason: "The policy's patterns replace the default: {namespace} is the tenant's namespace, * any run of characters.",
			policy: policy(func(s *tenancyv1.TenancyPolicySpec) {
				s.JobNamespaces.Names = []string{"jobs-{namespace}", "shared-batch"}
			}),
			names: []string{"jobs-team-a", "shared-batch", "team-a-jobs"},
			want: field.ErrorList{field.Forbidden(fp.Index(2), "namespace team-a-jobs is not a name tenant team-a's job namespaces may have; "+
				"name one matching jobs-team-a or shared-batch: not allowed by "+named+" spec.jobNamespaces.names")},
		},
		"Any": {
			reason: "A platform may allow any name; the function still refuses its own, the Armada's and existing namespaces (teamqueue.CheckReach).",
			policy: policy(func(s *tenancyv1.TenancyPolicySpec) { s.JobNamespaces.Names = []string{"*"} }),
			names:  []string{"anything", "team-b-jobs"},
		},
		"WholeName": {
			reason: "A pattern matches the whole name, not a part of it.",
			policy: policy(func(s *tenancyv1.TenancyPolicySpec) { s.JobNamespaces.Names = []string{"{namespace}-jobs"} }),
			names:  []string{"x-team-a-jobs"},
			want: field.ErrorList{field.Forbidden(fp.Index(0), "namespace x-team-a-jobs is not a name tenant team-a's job namespaces may have; "+
				"name one matching team-a-jobs: not allowed by "+named+" spec.jobNamespaces.names")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.policy.CheckJobNamespaces("team-a", fp, tc.names)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheckJobNamespaces(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
