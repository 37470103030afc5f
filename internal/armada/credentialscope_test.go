package armada

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// credentialKeys are the keys of the credentials Secret each workload's
// pods read, by workload key; workloads that read none are left out.
func credentialKeys(in *Install, out *Output) map[string][]string {
	got := map[string][]string{}
	for k, tpl := range podTemplates(out) {
		var keys []string
		for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == in.credentialsSecret() && !slices.Contains(keys, r.SecretKeyRef.Key) {
					keys = append(keys, r.SecretKeyRef.Key)
				}
			}
		}
		if len(keys) > 0 {
			slices.Sort(keys)
			got[k] = keys
		}
	}
	return got
}

// acceptedUsers are the basic-auth users each component's config lists,
// by config Secret key; components that list none are left out.
func acceptedUsers(t *testing.T, out *Output) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for _, o := range out.Objects {
		if !strings.HasSuffix(o.Key, "-config") {
			continue
		}
		users, _ := lookupPath(config(t, out, o.Key), "auth", "basicAuth", "users").(map[string]any)
		if len(users) > 0 {
			got[o.Key] = slices.Sorted(maps.Keys(users))
		}
	}
	return got
}

// lookupPath returns the value at a path of nested maps, or nil.
func lookupPath(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// TestCredentialsPerComponent: each component holds the passwords of the
// users its API accepts (the internal users that connect to it and, for
// the server, Lookout and binoculars, the spec's basic users) and of the
// user it authenticates as; no others. Its config lists only the users it
// accepts, so no internal user is listed with an empty password anywhere
// it has no password.
func TestCredentialsPerComponent(t *testing.T) {
	type want struct {
		keys  map[string][]string
		users map[string][]string
	}
	defaults := want{
		keys: map[string][]string{
			// Accepts the scheduler, provider-armada and users;
			// authenticates to the scheduler as internal-server.
			"server-workload": {"admin", userQueues, userScheduler, userServer},
			// Accepts the server and the executors; authenticates to
			// the server as internal-scheduler.
			"scheduler-workload":      {userExecutor, userScheduler, userServer},
			"lookout-workload":        {"admin"},
			"binoculars-workload":     {"admin"},
			"executor-local-workload": {userExecutor},
		},
		users: map[string][]string{
			"server-config":     {"admin", userQueues, userScheduler},
			"scheduler-config":  {userExecutor, userServer},
			"lookout-config":    {"admin"},
			"binoculars-config": {"admin"},
		},
	}
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   want
	}{
		"Default": {
			reason: "Each component gets only the passwords it checks or sends.",
			spec:   spec(),
			want:   defaults,
		},
		"ReplicatedScheduler": {
			reason: "Replicated schedulers reach their leader as internal-server, which the scheduler already accepts.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.Components.Scheduler.Replicas = ptr.To[int32](2) }),
			want:   defaults,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, errs := New(claimed(tc.spec))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			out := convergedHealthy(t, tc.spec, Observed{})
			got := want{keys: credentialKeys(in, out), users: acceptedUsers(t, out)}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("%s\ncredentials per component: -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}
