package backups

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/api"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// migrate migrates pg's databases as the composed migration Jobs do: it
// plays CloudNativePG (the role and the Databases the render composes,
// the app Secret the Jobs read their password from, the -rw Service name
// relayed to pg) and runs the render's Jobs with package podrun's Runner,
// which runs each as its image's Armada binary at the composed release
// with the composed args, config Secret and environment, and marks it
// complete once it exits 0, as in the job-flow suite. It returns the
// password of the app Secret it plays.
func migrate(t *testing.T, pg *testenv.Postgres, r *composed) string {
	t.Helper()
	rel, _, err := jobflow.FindRelease(t.Context(), armada.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	password := testenv.RandomPassword(t)
	objs := []client.Object{&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: r.AppSecret.Name, Namespace: r.Namespace},
		Data:       map[string][]byte{r.AppSecret.Key: []byte(password)},
	}}
	pg.CreateRole(t, r.DBUser, password)
	for db, owner := range r.Databases {
		pg.CreateDatabase(t, db, owner)
	}
	for _, o := range r.Objects {
		switch o.(type) {
		case *batchv1.Job, *corev1.Secret, *corev1.ConfigMap:
			objs = append(objs, o)
		}
	}
	if len(r.Jobs) != 2 {
		t.Fatalf("the render composes migration Jobs %v, want one per database (scheduler and lookout)", r.Jobs)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&batchv1.Job{}, &appsv1.Deployment{}).Build()
	names := podrun.NewNames()
	t.Cleanup(names.Close)
	if err := names.Relay(r.DBAddr, net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port))); err != nil {
		t.Fatal(err)
	}
	runner, err := podrun.NewRunner(podrun.RunnerOptions{
		Client: c, Namespace: r.Namespace,
		Releases: func(tag string) (podrun.Release, bool) { return rel, tag == armada.DefaultVersion },
		Dir:      t.TempDir(), Names: names,
		FreePort: func() (int, error) { return testenv.FreePort(t), nil },
		Logf:     t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { runner.Run(ctx, 500*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	jobflow.WaitFor(t, 2*time.Minute, "the composed migration Jobs to complete", func() (bool, string) {
		for _, name := range r.Jobs {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("batch/v1")
			u.SetKind("Job")
			if err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, u); err != nil {
				return false, err.Error()
			}
			if !complete(u) {
				return false, fmt.Sprintf("Job %s is not complete: %s\n%s", name, jobflow.RunnerState(runner), jobflow.PodLogs(runner))
			}
		}
		return true, ""
	}, nil)
	return password
}

// complete reports whether a Job has a Complete condition.
func complete(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Complete" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// Queues and jobs are written into Armada's migrated schema, with the
// columns Armada's migrations create (v0.22.8: lookout's 001, 004, 005,
// 007, 013 and scheduler's 001, 038, 039): Armada itself writes them only
// from Pulsar's event stream (its server publishes submissions, its
// ingesters write both databases), and a Pulsar broker costs this test
// a minute of a shared machine's CPU. A queue's definition is the
// protobuf Armada's server stores (internal/server/queue's
// PostgresQueueRepository marshals api.Queue).

// writeQueue writes or replaces queue name in the lookout database.
func writeQueue(t *testing.T, pg *testenv.Postgres, name string, priorityFactor float64) {
	t.Helper()
	def, err := (&api.Queue{Name: name, PriorityFactor: priorityFactor}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pg.MustExec(t, "lookout", fmt.Sprintf("INSERT INTO queue (name, definition) VALUES (%s, '\\x%x') "+
		"ON CONFLICT (name) DO UPDATE SET definition = EXCLUDED.definition", testenv.QuoteLiteral(name), def))
}

// writeJobs writes jobs first..last of queue's job set into both
// databases: the scheduler's jobs and job_metadata, Lookout's job.
func writeJobs(t *testing.T, pg *testenv.Postgres, queue string, first, last int, state string) {
	t.Helper()
	ordinal := map[string]int{"queued": 1, "running": 3, "succeeded": 4}[state]
	q := testenv.QuoteLiteral(queue)
	ids := fmt.Sprintf("FROM generate_series(%d, %d) i", first, last)
	pg.MustExec(t, "scheduler", "INSERT INTO jobs (job_id, job_set, queue, user_id, submitted, priority, queued, succeeded, scheduling_info, last_modified) "+
		"SELECT 'job-' || lpad(i::text, 4, '0'), 'set-1', "+q+", 'admin', 1700000000000000000 + i, 1, "+
		strconv.FormatBool(state == "queued")+", "+strconv.FormatBool(state == "succeeded")+", '\\x0a00', now() "+ids+"; "+
		"INSERT INTO job_metadata (job_id, submit_message) SELECT 'job-' || lpad(i::text, 4, '0'), '\\x0a0473657431' "+ids)
	pg.MustExec(t, "lookout", "INSERT INTO job (job_id, queue, owner, namespace, jobset, cpu, memory, ephemeral_storage, gpu, priority, "+
		"submitted, state, last_transition_time, last_transition_time_seconds, annotations) "+
		"SELECT 'job-' || lpad(i::text, 4, '0'), "+q+", 'admin', 'default', 'set-1', 150, 67108864, 0, 0, 1, "+
		"'2026-01-01'::timestamp + i * interval '1 second', "+strconv.Itoa(ordinal)+", '2026-01-01'::timestamp, 1767225600, '{}' "+ids)
}

// armadaRows are the queues and jobs of both databases, as psql prints
// them: each queue's name and definition as Armada's api.Queue decodes
// it, the scheduler's jobs and Lookout's.
func armadaRows(t *testing.T, pg *testenv.Postgres) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range lines(pg.MustExec(t, "lookout", "SELECT name, encode(definition, 'hex') FROM queue ORDER BY name")) {
		name, def, _ := strings.Cut(line, "|")
		b, err := hex.DecodeString(def)
		if err != nil {
			t.Fatalf("queue %s: definition %q is not hex: %v", name, def, err)
		}
		q := &api.Queue{}
		if err := q.Unmarshal(b); err != nil {
			t.Fatalf("queue %s: the definition is not Armada's api.Queue: %v", name, err)
		}
		out["lookout queues"] = append(out["lookout queues"], fmt.Sprintf("%s priorityFactor=%v", q.Name, q.PriorityFactor))
	}
	out["scheduler jobs"] = lines(pg.MustExec(t, "scheduler", "SELECT j.job_id, j.queue, j.job_set, j.queued, j.succeeded, encode(m.submit_message, 'hex') "+
		"FROM jobs j JOIN job_metadata m USING (job_id) ORDER BY j.job_id"))
	out["lookout jobs"] = lines(pg.MustExec(t, "lookout", "SELECT job_id, queue, jobset, state, submitted FROM job ORDER BY job_id"))
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
