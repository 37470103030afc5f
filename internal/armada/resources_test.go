package armada

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// list is a ResourceList of cpu and memory; "" leaves one out.
func list(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestMergeResources(t *testing.T) {
	def := corev1.ResourceRequirements{Requests: list("200m", "512Mi"), Limits: list("300m", "1Gi")}
	cases := map[string]struct {
		reason string
		user   *corev1.ResourceRequirements
		want   corev1.ResourceRequirements
	}{
		"Unset": {
			reason: "No resources are the defaults.",
			want:   def,
		},
		"Empty": {
			reason: "resources: {} keeps every default, limits included.",
			user:   &corev1.ResourceRequirements{},
			want:   def,
		},
		"RequestsOnly": {
			reason: "Requests alone keep the default limits.",
			user:   &corev1.ResourceRequirements{Requests: list("250m", "")},
			want:   corev1.ResourceRequirements{Requests: list("250m", "512Mi"), Limits: list("300m", "1Gi")},
		},
		"RequestAboveDefaultLimit": {
			reason: "A request above the default limit raises that limit to the request, never leaving limit < request.",
			user:   &corev1.ResourceRequirements{Requests: list("2", "4Gi")},
			want:   corev1.ResourceRequirements{Requests: list("2", "4Gi"), Limits: list("2", "4Gi")},
		},
		"LimitBelowDefaultRequest": {
			reason: "A limit below the default request lowers that request to the limit.",
			user:   &corev1.ResourceRequirements{Limits: list("100m", "")},
			want:   corev1.ResourceRequirements{Requests: list("100m", "512Mi"), Limits: list("100m", "1Gi")},
		},
		"Both": {
			reason: "What the user sets wins, resource by resource.",
			user:   &corev1.ResourceRequirements{Requests: list("1", "2Gi"), Limits: list("2", "4Gi")},
			want:   corev1.ResourceRequirements{Requests: list("1", "2Gi"), Limits: list("2", "4Gi")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := mergeResources(def, tc.user)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmergeResources(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestEveryContainerLimited renders with resources: {} on every component
// and the in-cluster Redis and checks every composed container, init
// container included, has a CPU and a memory limit.
func TestEveryContainerLimited(t *testing.T) {
	empty := &corev1.ResourceRequirements{}
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Redis = v1alpha1.Redis{Mode: modeInCluster, InCluster: &v1alpha1.RedisInCluster{Resources: empty}}
		for _, c := range []*v1alpha1.Component{
			&s.Components.Server, &s.Components.Scheduler, &s.Components.SchedulerIngester, &s.Components.Lookout,
			&s.Components.LookoutIngester, &s.Components.EventIngester, &s.Components.Binoculars, &s.Components.Executor,
		} {
			c.Resources = empty
		}
	})
	out := render(t, s, Observed{Jobs: migrated(t, s), Ready: map[string]bool{keyRedisStatefulSet: true}})
	for key, tpl := range podTemplates(out) {
		for _, c := range append(tpl.Spec.InitContainers, tpl.Spec.Containers...) {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Limits[r]; !ok {
					t.Errorf("%s: container %s has no %s limit", key, c.Name, r)
				}
			}
		}
	}
}
