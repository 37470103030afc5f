package armada

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// render renders a spec with the given observations and fails the test on
// any error.
func render(t *testing.T, s v1alpha1.ArmadaSpec, o Observed) *Output {
	t.Helper()
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	out, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("test"), "xr")})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	return out
}

// find returns the object with a key, or for a key ending in "-" the
// first whose key starts with it.
func find(out *Output, key string) *Object {
	for i := range out.Objects {
		k := out.Objects[i].Key
		if k == key || (strings.HasSuffix(key, "-") && strings.HasPrefix(k, key)) {
			return &out.Objects[i]
		}
	}
	return nil
}

// migrated observes the Jobs that rendering s composes as complete: the
// topic-init Job and the migrations; with only, just the migrations of the
// named databases.
func migrated(t *testing.T, s v1alpha1.ArmadaSpec, only ...string) map[string]JobState {
	t.Helper()
	jobs := map[string]JobState{}
	for _, o := range render(t, s, Observed{}).Objects {
		j, ok := o.Object.(*batchv1.Job)
		if !ok {
			continue
		}
		if len(only) == 0 || strings.Contains(j.Name, "-pulsar-topics-") || slices.ContainsFunc(only, func(db string) bool { return strings.Contains(j.Name, "-migrate-"+db+"-") }) {
			jobs[j.Name] = JobComplete
		}
	}
	return jobs
}

func TestMigrationsGateComponents(t *testing.T) {
	cases := map[string]struct {
		reason   string
		observed Observed
		present  []string
		absent   []string
		cond     Condition
	}{
		"FreshInstall": {
			reason:   "Before any migration completes, database users are not created; the rest is.",
			observed: Observed{Jobs: migrated(t, spec(), "none")},
			present:  []string{"migrate-lookout-" + versionSuffix(DefaultVersion) + "-", "migrate-scheduler-" + versionSuffix(DefaultVersion) + "-", "event-ingester-workload", "binoculars-workload", "executor-local-workload", "server-config"},
			absent:   []string{"server-workload", "scheduler-workload", "scheduler-ingester-workload", "lookout-workload", "lookout-ingester-workload"},
			cond:     Condition{Type: ConditionComponents, Reason: ReasonWaitingForMigration},
		},
		"LookoutMigrated": {
			reason:   "Each component waits only for its own database's migration.",
			observed: Observed{Jobs: migrated(t, spec(), "lookout")},
			present:  []string{"server-workload", "lookout-workload", "lookout-ingester-workload"},
			absent:   []string{"scheduler-workload", "scheduler-ingester-workload"},
			cond:     Condition{Type: ConditionComponents, Reason: ReasonWaitingForMigration},
		},
		"AllMigrated": {
			reason:   "Once both migrations complete every workload is composed, not yet available.",
			observed: Observed{Jobs: migrated(t, spec())},
			present:  []string{"server-workload", "scheduler-workload", "scheduler-ingester-workload", "lookout-workload", "lookout-ingester-workload"},
			cond:     Condition{Type: ConditionComponents, Reason: ReasonUnavailable},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := render(t, spec(), tc.observed)
			for _, k := range tc.present {
				if find(out, k) == nil {
					t.Errorf("%s\n%s is not composed", tc.reason, k)
				}
			}
			for _, k := range tc.absent {
				if find(out, k) != nil {
					t.Errorf("%s\n%s is composed before its migration completed", tc.reason, k)
				}
			}
			got := out.Conditions[2]
			got.Message = ""
			if diff := cmp.Diff(tc.cond, got); diff != "" {
				t.Errorf("%s\ncondition: -want, +got:\n%s", tc.reason, diff)
			}
			if out.Ready {
				t.Errorf("%s\nOutput.Ready = true before any workload is available", tc.reason)
			}
		})
	}
}

// TestUpgradeHoldsImagesUntilMigrated moves through every pair of
// consecutive releases in the version table.
func TestUpgradeHoldsImagesUntilMigrated(t *testing.T) {
	for i := 1; i < len(Releases); i++ {
		from, to := Releases[i-1].Version, Releases[i].Version
		t.Run(from+"To"+to, func(t *testing.T) {
			oldSpec := spec(func(s *v1alpha1.ArmadaSpec) { s.Version = from })
			old := Observed{
				Jobs:      migrated(t, oldSpec),
				Workloads: map[string]Workload{"server": {Version: from, Ready: true}},
			}
			s := spec(func(s *v1alpha1.ArmadaSpec) { s.Version = to })

			out := render(t, s, old)
			for _, db := range []string{dbLookout, dbScheduler} {
				if find(out, "migrate-"+db+"-"+versionSuffix(to)+"-") == nil {
					t.Fatalf("upgrade did not compose the %s %s migration Job", to, db)
				}
			}
			server := find(out, "server-workload").Object.(*appsv1.Deployment)
			if got, want := server.Spec.Template.Spec.Containers[0].Image, "gresearch/armada-server:"+from; got != want {
				t.Errorf("server image during pending migration = %s, want the running %s", got, want)
			}
			if st := out.Status.Components["server"]; st.Ready || st.Version != from {
				t.Errorf("server status = %+v, want not ready at %s", st, from)
			}

			old.Jobs = migrated(t, s)
			out = render(t, s, old)
			server = find(out, "server-workload").Object.(*appsv1.Deployment)
			if got, want := server.Spec.Template.Spec.Containers[0].Image, "gresearch/armada-server:"+to; got != want {
				t.Errorf("server image after migration = %s, want %s", got, want)
			}
		})
	}
}

func TestMigrationRerunsForAnotherDatabase(t *testing.T) {
	prefix := "migrate-lookout-" + versionSuffix(DefaultVersion) + "-"
	a := find(render(t, spec(), Observed{}), prefix)
	b := find(render(t, spec(func(s *v1alpha1.ArmadaSpec) { s.Postgres.Host = "pg2" }), Observed{}), prefix)
	if a.Key == b.Key || a.Object.GetName() == b.Object.GetName() {
		t.Errorf("moving to another Postgres host kept migration Job %s; Jobs are immutable, so it must be a new Job", a.Object.GetName())
	}
	if n := len(a.Object.GetName()); n > 63 {
		t.Errorf("migration Job name %q is %d characters, more than a pod label allows", a.Object.GetName(), n)
	}
}

func TestDowngradeRefused(t *testing.T) {
	cases := map[string]struct{ running, desired string }{
		"Previous": {running: "0.22.8", desired: "0.22.7"},
		"Oldest":   {running: "0.22.8", desired: "0.22.6"},
		"Older":    {running: "0.22.7", desired: "0.22.6"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, _ := New(claimed(spec(func(s *v1alpha1.ArmadaSpec) { s.Version = tc.desired })))
			_, err := Render(in, Options{
				Observed: Observed{Workloads: map[string]Workload{"server": {Version: tc.running}}},
				Rand:     KeyedRand([]byte("test"), "xr"),
			})
			want := "spec.version: Forbidden: cannot downgrade Armada from " + tc.running + " to " + tc.desired
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Render(downgrade) error = %v, want prefix %q", err, want)
			}
		})
	}
}

func TestCredentialsStable(t *testing.T) {
	first := render(t, spec(), Observed{})
	secret := find(first, keyCredentials).Object.(*corev1.Secret)
	observed := map[string]string{}
	for user, p := range secret.Data {
		observed[user] = string(p)
	}
	if len(observed) != 5 {
		t.Fatalf("credentials hold %d users, want 4 internal users and admin", len(observed))
	}
	// A different key would generate different passwords; observed ones
	// must win.
	in, _ := New(claimed(spec()))
	again, err := Render(in, Options{Observed: Observed{Passwords: observed}, Rand: KeyedRand([]byte("another key"), "xr")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(secret, find(again, keyCredentials).Object); diff != "" {
		t.Errorf("credentials changed across reconciles: -first, +again:\n%s", diff)
	}
}

// TestSecretsOnlyThroughReferences checks no generated password appears in
// any composed object other than the credentials Secret, and that every
// component gets passwords through secretKeyRef.
func TestSecretsOnlyThroughReferences(t *testing.T) {
	out := render(t, spec(), Observed{Jobs: migrated(t, spec())})
	creds := find(out, keyCredentials).Object.(*corev1.Secret)
	for _, o := range out.Objects {
		if o.Key == keyCredentials {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := o.Object.(*corev1.Secret); ok {
			b = append(b, s.Data[configKey]...)
		}
		for user, p := range creds.Data {
			if bytes.Contains(b, p) {
				t.Errorf("%s contains the password of %s", o.Key, user)
			}
		}
	}
	server := find(out, "server-workload").Object.(*appsv1.Deployment)
	for _, e := range server.Spec.Template.Spec.Containers[0].Env {
		if strings.HasSuffix(e.Name, "PASSWORD") && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("server env %s is not from a Secret", e.Name)
		}
	}
}

// TestRestrictedPodSecurity checks every pod template against the
// "restricted" Pod Security Standard's rules.
func TestRestrictedPodSecurity(t *testing.T) {
	sentinel := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Redis = v1alpha1.Redis{Mode: modeInCluster, InCluster: &v1alpha1.RedisInCluster{Sentinel: &v1alpha1.RedisSentinel{}}}
	})
	for name, s := range map[string]v1alpha1.ArmadaSpec{"Default": spec(), "RedisSentinel": sentinel} {
		t.Run(name, func(t *testing.T) { checkRestricted(t, render(t, s, Observed{Jobs: migrated(t, s)})) })
	}
}

// checkRestricted checks every pod template of a render.
func checkRestricted(t *testing.T, out *Output) {
	t.Helper()
	pods := 0
	for _, o := range out.Objects {
		var pod *corev1.PodSpec
		switch w := o.Object.(type) {
		case *appsv1.Deployment:
			pod = &w.Spec.Template.Spec
		case *appsv1.StatefulSet:
			pod = &w.Spec.Template.Spec
		case *batchv1.Job:
			pod = &w.Spec.Template.Spec
		case *batchv1.CronJob:
			pod = &w.Spec.JobTemplate.Spec.Template.Spec
		default:
			continue
		}
		checkRestrictedPod(t, o.Key, pod)
		pods++
	}
	if pods == 0 {
		t.Error("the render composes no pod template")
	}
}

// checkRestrictedPod checks one pod template against the "restricted" Pod
// Security Standard's rules, and that its containers' root filesystems
// are read-only.
func checkRestrictedPod(t *testing.T, key string, pod *corev1.PodSpec) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod security context is not restricted: %+v", key, psc)
	}
	for _, c := range pod.Containers {
		sc := c.SecurityContext
		if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || sc.Capabilities == nil || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s: container %s security context is not restricted: %+v", key, c.Name, sc)
		}
		// Beyond "restricted": nothing composed writes its image's files.
		if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
			t.Errorf("%s: container %s has a writable root filesystem", key, c.Name)
		}
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("%s: hostPath volume %s", key, v.Name)
		}
	}
}

func TestHighlyAvailableScheduler(t *testing.T) {
	ha := spec(func(s *v1alpha1.ArmadaSpec) { s.Components.Scheduler.Replicas = ptr.To[int32](3) })
	out := render(t, ha, Observed{Jobs: migrated(t, ha)})
	sts := find(out, "scheduler-workload").Object.(*appsv1.StatefulSet)
	if *sts.Spec.Replicas != 3 || sts.Spec.ServiceName != "armada-scheduler-headless" {
		t.Errorf("scheduler StatefulSet replicas=%d serviceName=%s, want 3 and the headless Service", *sts.Spec.Replicas, sts.Spec.ServiceName)
	}
	if h := find(out, "scheduler-headless").Object.(*corev1.Service); h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("scheduler-headless is not headless")
	}
	role := find(out, "scheduler-leader-role")
	if role == nil {
		t.Fatal("no lease Role for the leader-elected scheduler")
	}
	if r := role.Object.(*rbacv1.Role); r.Namespace != "armada" || r.Rules[0].Resources[0] != "leases" {
		t.Errorf("lease Role = %+v, want leases in the armada namespace", r)
	}
	cfg := config(t, out, "scheduler-config")
	leader := cfg["leader"].(map[string]any)
	if leader["mode"] != "kubernetes" || !strings.HasPrefix(leader["leaderConnection"].(map[string]any)["armadaUrl"].(string), "<name>.armada-scheduler-headless.armada.svc:") {
		t.Errorf("scheduler leader config = %v, want kubernetes mode reaching pods through the headless Service", leader)
	}
	var podName bool
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		podName = podName || (e.Name == "ARMADA_LEADER_PODNAME" && e.ValueFrom.FieldRef.FieldPath == "metadata.name")
	}
	if !podName {
		t.Errorf("scheduler does not get ARMADA_LEADER_PODNAME from its pod name")
	}
}

// TestLeaseRoleBindingWaitsForRole: the lease RoleBinding is composed once
// its Role is observed (the API server refuses the binding while the Role
// does not exist), and kept while either is.
func TestLeaseRoleBindingWaitsForRole(t *testing.T) {
	ha := spec(func(s *v1alpha1.ArmadaSpec) { s.Components.Scheduler.Replicas = ptr.To[int32](3) })
	cases := map[string]struct {
		observed []string
		want     map[string]bool
	}{
		"NothingObserved": {
			want: map[string]bool{"scheduler-leader-role": true, "scheduler-leader-rolebinding": false},
		},
		"RoleObserved": {
			observed: []string{"scheduler-leader-role"},
			want:     map[string]bool{"scheduler-leader-role": true, "scheduler-leader-rolebinding": true},
		},
		"BindingObservedRoleGone": {
			observed: []string{"scheduler-leader-rolebinding"},
			want:     map[string]bool{"scheduler-leader-role": true, "scheduler-leader-rolebinding": true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := Observed{Jobs: migrated(t, ha), Keys: map[string]bool{}}
			for _, k := range tc.observed {
				o.Keys[k] = true
			}
			out := render(t, ha, o)
			got := map[string]bool{}
			for k := range tc.want {
				got[k] = find(out, k) != nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("composed (-want +got):\n%s", diff)
			}
		})
	}
}

// config decodes a composed config Secret.
func config(t *testing.T, out *Output, key string) map[string]any {
	t.Helper()
	s := find(out, key).Object.(*corev1.Secret)
	m := map[string]any{}
	if err := yaml.Unmarshal(s.Data[configKey], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCrossComponentKeysMatch checks the keys Armada's components must
// agree on (reference/armada.md §10).
func TestCrossComponentKeysMatch(t *testing.T) {
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Pulsar.Tenant, s.Pulsar.Namespace = "armada", "prod"
		s.Redis.DB = ptr.To[int32](3)
		s.Scheduling.Pools = []v1alpha1.Pool{{Name: "cpu"}, {Name: "gpu"}}
		s.Executors = []v1alpha1.Executor{{ClusterID: "a", Pool: "gpu"}}
	})
	out := render(t, s, Observed{Jobs: migrated(t, s)})
	events := "persistent://armada/prod/events"
	for _, c := range []string{"server", "scheduler", "scheduler-ingester", "lookout-ingester", "event-ingester"} {
		if got := config(t, out, c+"-config")["pulsar"].(map[string]any)["jobsetEventsTopic"]; got != events {
			t.Errorf("%s events topic = %v, want %s", c, got, events)
		}
	}
	for _, c := range []string{"server", "scheduler-ingester"} {
		if got := config(t, out, c+"-config")["pulsar"].(map[string]any)["controlPlaneEventsTopic"]; got != "persistent://armada/prod/control-plane" {
			t.Errorf("%s control-plane topic = %v", c, got)
		}
	}
	if a, b := config(t, out, "server-config")["eventsApiRedis"].(map[string]any)["db"], config(t, out, "event-ingester-config")["redis"].(map[string]any)["db"]; a != b || a != float64(3) {
		t.Errorf("redis db: server %v, event ingester %v, want both 3", a, b)
	}
	exec := config(t, out, "executor-a-config")
	if got := exec["application"].(map[string]any)["pool"]; got != "gpu" {
		t.Errorf("executor pool = %v", got)
	}
	if got := exec["executorApiConnection"].(map[string]any)["armadaUrl"]; got != "armada-scheduler.armada.svc:50051" {
		t.Errorf("executor reaches %v, want the scheduler's gRPC Service", got)
	}
	pools := config(t, out, "scheduler-config")["scheduling"].(map[string]any)["pools"]
	if diff := cmp.Diff([]any{map[string]any{"name": "cpu"}, map[string]any{"name": "gpu"}}, pools); diff != "" {
		t.Errorf("scheduler pools: -want, +got:\n%s", diff)
	}
	if got := config(t, out, "scheduler-config")["auth"].(map[string]any)["permissionGroupMapping"].(map[string]any)["execute_jobs"]; !cmp.Equal(got, []any{groupExecutors}) {
		t.Errorf("scheduler execute_jobs = %v, want the executors group", got)
	}
}

func TestUserConfigWins(t *testing.T) {
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Components.Executor.Config = &runtime.RawExtension{Raw: []byte(`{"kubernetes":{"minimumPodAge":"1m"},"application":{"maxLeasedJobs":5}}`)}
		s.Executors = []v1alpha1.Executor{{ClusterID: "a", Config: &runtime.RawExtension{Raw: []byte(`{"kubernetes":{"minimumPodAge":"2m"}}`)}}}
	})
	app := config(t, render(t, s, Observed{}), "executor-a-config")
	if got := app["kubernetes"].(map[string]any)["minimumPodAge"]; got != "2m" {
		t.Errorf("minimumPodAge = %v, want the executor's own 2m over the component's 1m", got)
	}
	a := app["application"].(map[string]any)
	if a["maxLeasedJobs"] != float64(5) || a["clusterId"] != "a" {
		t.Errorf("application = %v, want the user's maxLeasedJobs merged beside the generated clusterId", a)
	}
}

func TestDeterministic(t *testing.T) {
	a, err := yaml.Marshal(render(t, spec(), Observed{}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		b, _ := yaml.Marshal(render(t, spec(), Observed{}))
		if diff := cmp.Diff(string(a), string(b)); diff != "" {
			t.Fatalf("render %d differs: -first, +again:\n%s", i, diff)
		}
	}
}

// TestExecutorNodeTaint checks that an executor's node taint confines it:
// the executor counts only nodes with that taint (beside untainted ones)
// and the jobs of its pool tolerate it, once per taint.
func TestExecutorNodeTaint(t *testing.T) {
	taint := &v1alpha1.NodeTaint{Key: "armadaproject.io/team-a", Value: "true"}
	s := spec(func(s *v1alpha1.ArmadaSpec) {
		s.Scheduling.Pools = []v1alpha1.Pool{{Name: "cpu"}, {Name: "gpu"}}
		s.Executors = []v1alpha1.Executor{
			{ClusterID: "a", Pool: "gpu", NodeTaint: taint},
			{ClusterID: "b", Pool: "gpu", NodeTaint: taint},
			{ClusterID: "c", Pool: "gpu", NodeTaint: &v1alpha1.NodeTaint{Key: "armadaproject.io/gpu"}},
			{ClusterID: "d", Pool: "cpu"},
		}
	})
	out := render(t, s, Observed{Jobs: migrated(t, s)})
	if got := config(t, out, "executor-a-config")["kubernetes"]; !cmp.Equal(got, map[string]any{"toleratedTaints": []any{taint.Key}}) {
		t.Errorf("executor a kubernetes config = %v, want it to tolerate %s", got, taint.Key)
	}
	if got, ok := config(t, out, "executor-d-config")["kubernetes"]; ok {
		t.Errorf("executor d has no node taint but its config sets kubernetes: %v", got)
	}
	want := []any{
		map[string]any{"name": "cpu"},
		map[string]any{"name": "gpu", "jobDefaults": map[string]any{"tolerations": []any{
			map[string]any{"key": taint.Key, "operator": "Equal", "value": "true", "effect": "NoSchedule"},
			map[string]any{"key": "armadaproject.io/gpu", "operator": "Exists", "effect": "NoSchedule"},
		}}},
	}
	pools := config(t, out, "scheduler-config")["scheduling"].(map[string]any)["pools"]
	if diff := cmp.Diff(want, pools); diff != "" {
		t.Errorf("scheduler pools: -want, +got:\n%s", diff)
	}
}
