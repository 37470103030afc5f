package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// topicJobTimeout bounds one run of the topic-init Job's script: six
// calls of Pulsar's admin API, each at most a minute (curl --max-time),
// on a broker that may be slow on a loaded machine.
const topicJobTimeout = 5 * time.Minute

// topicsReady is the last line of the topic-init Job's script.
const topicsReady = "Pulsar topics ready"

// Brokers are the real Apache Pulsar brokers a top-level test's examples
// share (testenv.StartPulsar: the version table's release, standalone),
// without authentication, and, if an example's claim gives
// spec.pulsar.tokenSecretRef, with token authentication, so a Component
// that does not present the token from that Secret is refused.
// Each example's topic-init Job creates its tenant, and the example
// deletes it when it ends, so examples do not see each other's topics.
// Examples render the same tenant names, so an example holds its broker
// until it ends: examples running at once each use their own, and the
// brokers are started as they are first needed and kept for the test.
type Brokers struct {
	// owner is the test every broker lives as long as.
	owner *testing.T
	// token is set if brokers with token authentication may be asked for.
	token bool
	mu    sync.Mutex
	// idle are the brokers no example holds, by token authentication.
	idle map[bool][]*testenv.Pulsar
}

// StartBrokers starts a broker without authentication, and one with token
// authentication if token is set.
func StartBrokers(t *testing.T, token bool) *Brokers {
	t.Helper()
	b := &Brokers{owner: t, token: token, idle: map[bool][]*testenv.Pulsar{}}
	b.idle[false] = append(b.idle[false], testenv.StartPulsar(t))
	if token {
		b.idle[true] = append(b.idle[true], testenv.StartPulsarWithOptions(t, testenv.PulsarOptions{TokenAuth: true}))
	}
	return b
}

// hold returns an idle broker, with token authentication if token is
// set, starting one if none is idle, and gives it back when t ends.
func (b *Brokers) hold(t *testing.T, token bool) *testenv.Pulsar {
	t.Helper()
	b.mu.Lock()
	var p *testenv.Pulsar
	if n := len(b.idle[token]); n > 0 {
		p = b.idle[token][n-1]
		b.idle[token] = b.idle[token][:n-1]
	}
	b.mu.Unlock()
	if p == nil {
		t.Logf("every Pulsar broker (token authentication: %t) is in use by another example; starting one more", token)
		p = testenv.StartPulsarWithOptions(ownedTB{T: t, owner: b.owner}, testenv.PulsarOptions{TokenAuth: token})
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.idle[token] = append(b.idle[token], p)
	})
	return p
}

// ownedTB is a test that starts something its owner keeps: the owner's
// context, temporary directory and cleanup, the test's failures and log.
type ownedTB struct {
	*testing.T
	owner *testing.T
}

func (o ownedTB) Cleanup(f func())         { o.owner.Cleanup(f) }
func (o ownedTB) Context() context.Context { return o.owner.Context() }
func (o ownedTB) TempDir() string          { return o.owner.TempDir() }

// pulsarToken is the role of the token the test puts in the user's
// spec.pulsar.tokenSecretRef Secret.
const pulsarToken = "armada"

// useBroker holds a broker for the example and, with a tokenSecretRef,
// supplies a token it accepts in that Secret. An example with an
// in-cluster Pulsar whose chart values turn on token authentication gets
// a broker of its own configured as the chart configures its brokers.
func useBroker(t *testing.T, b *Brokers, r *Render, svc *Services, supplied map[SecretRef]string) {
	t.Helper()
	opts, client, inCluster := chartBroker(t, r)
	svc.PulsarInCluster = inCluster
	if inCluster && opts.TokenAuth {
		// A broker configured as the composed chart configures its
		// own, for this example alone: its key is the render's.
		svc.Pulsar = testenv.StartPulsarWithOptions(t, opts)
		svc.PulsarToken, svc.PulsarAuthorization = client, len(opts.SuperUserRoles) > 0
		return
	}
	ref, token := r.XRSecretRef("pulsar", "tokenSecretRef")
	if token && !b.token {
		t.Fatal("the claim gives spec.pulsar.tokenSecretRef, but no broker with token authentication was started")
	}
	svc.Pulsar = b.hold(t, token)
	if token {
		svc.PulsarToken = svc.Pulsar.Token(pulsarToken)
		supplied[ref] = svc.PulsarToken
	}
}

// hostPort is a URL's host:port.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("%q is not a URL with a host", raw)
	}
	return u.Host
}

// TopicJob is the render's Pulsar topic-init Job container, run as
// composed: its own script, environment and mounted Secrets.
type TopicJob struct {
	Inv  *podrun.Invocation
	Root string
}

// isTopicJob reports whether a container is the topic-init Job's.
func isTopicJob(w podrun.Workload, c corev1.Container) bool {
	return w.Kind == "Job" && c.Name == "pulsar-topics"
}

// servePulsar makes the names of the topic-init Job's ADMIN_URL reach
// the broker's web service, for every process alike, and deletes the
// Job's tenant from the broker when the test that started the services
// ends, so examples sharing a broker do not see each other's topics.
func servePulsar(t *testing.T, svc *Services, workloads []podrun.Workload) {
	t.Helper()
	for _, w := range workloads {
		for _, c := range w.Pod.Containers {
			if !isTopicJob(w, c) {
				continue
			}
			var adminURL, tenant string
			for _, e := range c.Env {
				switch e.Name {
				case "ADMIN_URL":
					adminURL = e.Value
				case "TENANT":
					tenant = e.Value
				}
			}
			if adminURL == "" || tenant == "" {
				t.Fatalf("%s: the topic-init Job sets no ADMIN_URL or TENANT", w.ID())
			}
			RelayName(t, svc.Names, hostPort(t, adminURL), hostPort(t, svc.Pulsar.AdminURL()))
			t.Cleanup(func() {
				if _, err := svc.Pulsar.Admin(context.Background(), http.MethodDelete, "/admin/v2/tenants/"+url.PathEscape(tenant)+"?force=true"); err != nil {
					t.Logf("cannot delete Pulsar tenant %s after the test: %v", tenant, err)
				}
			})
		}
	}
}

// RunTopicJob runs the Job's script once, with this machine's bash and
// curl as the image's, and the names of ADMIN_URL resolving to the
// broker's web service (servePulsar).
func RunTopicJob(t *testing.T, e *Env, svc *Services, j *TopicJob) {
	t.Helper()
	adminURL, _ := j.Inv.Lookup("ADMIN_URL")
	hosts, err := svc.Names.HostsFile(j.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	bin, args, err := podrun.PodCommand(root, hosts, j.Root, j.Inv.Mounts, j.Inv.Args[0], j.Inv.Args[1:])
	if err != nil {
		t.Fatal(err)
	}
	env := make([]string, 0, len(j.Inv.Env)+2)
	for _, v := range j.Inv.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin", "HOME="+podrun.PodPath(j.Root))
	p, err := startProcess(t, bin, e.SourceDir, args, env, filepath.Join(t.TempDir(), "pulsar-topics.log"))
	if err != nil {
		t.Fatal(err)
	}
	code, ok := p.Wait(topicJobTimeout)
	if !ok {
		t.Fatalf("the script did not finish within %s; log:\n%s", topicJobTimeout, p.Tail(tailLines))
	}
	if code != 0 || !strings.Contains(p.Log(), topicsReady) {
		t.Fatalf("the script exited %d (want 0, with %q); log:\n%s", code, topicsReady, p.Tail(tailLines))
	}
	t.Logf("ran against Pulsar at %s (as %s):\n%s", svc.Pulsar.AdminURL(), adminURL, strings.TrimSpace(p.Log()))
}

// CheckTopics checks from the broker that the job set events topic every
// Component uses is partitioned into the claim's partition count and the
// control-plane topic exists, as the Job's script made them: a Job
// creating other names leaves the components' topics missing.
func CheckTopics(t *testing.T, svc *Services, j *TopicJob, runs []*Run) {
	t.Helper()
	partitions, _ := j.Inv.Lookup("PARTITIONS")
	want, err := strconv.Atoi(partitions)
	if err != nil {
		t.Fatalf("the Job's PARTITIONS %q is not a number", partitions)
	}
	events, control := map[string]bool{}, map[string]bool{}
	for _, rn := range runs {
		if rn.Job || rn.Cluster != "" {
			continue
		}
		if v, ok := rn.Effective("pulsar.jobsetEventsTopic"); ok && rn.Cfg.Has("pulsar.URL") {
			events[fullTopic(v)] = true
		}
		if v, ok := rn.Effective("pulsar.controlPlaneEventsTopic"); ok && rn.Cfg.Has("pulsar.URL") {
			control[fullTopic(v)] = true
		}
	}
	if len(events) == 0 && len(control) == 0 {
		// A first install composes only the Jobs until the migrations
		// complete: check the topics the Job names; the components'
		// subscriptions are checked once they run.
		ev, _ := j.Inv.Lookup("EVENTS_TOPIC")
		cp, _ := j.Inv.Lookup("CONTROL_PLANE_TOPIC")
		events[fullTopic(ev)], control[fullTopic(cp)] = true, true
		t.Logf("no component of this render uses Pulsar yet: checking the topics the Job names, %s and %s", ev, cp)
	}
	if len(events) == 0 || len(control) == 0 {
		t.Fatalf("the components name no job set events topic (%v) or no control-plane topic (%v)", events, control)
	}
	for topic := range events {
		body, err := svc.Pulsar.Admin(t.Context(), http.MethodGet, "/admin/v2/"+restTopic(topic)+"/partitions")
		if err != nil {
			t.Errorf("the components' job set events topic %s: %v", topic, err)
			continue
		}
		var meta struct {
			Partitions int `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(body), &meta); err != nil {
			t.Errorf("cannot decode the partitions of %s: %v", topic, err)
			continue
		}
		if diff := cmp.Diff(want, meta.Partitions); diff != "" {
			t.Errorf("the components' job set events topic %s has the wrong partition count (0: not a partitioned topic): -want, +got:\n%s", topic, diff)
		}
	}
	for topic := range control {
		ns := restTopic(topic)[:strings.LastIndex(restTopic(topic), "/")]
		body, err := svc.Pulsar.Admin(t.Context(), http.MethodGet, "/admin/v2/"+ns)
		if err != nil {
			t.Errorf("cannot list the topics of %s: %v", ns, err)
			continue
		}
		var topics []string
		_ = json.Unmarshal([]byte(body), &topics)
		if !slices.Contains(topics, topic) {
			t.Errorf("the components' control-plane topic %s does not exist; %s holds %v", topic, ns, topics)
		}
	}
}

// fullTopic is a topic's full name: Pulsar reads a bare name as
// persistent://public/default/<name>.
func fullTopic(name string) string {
	if strings.Contains(name, "://") {
		return name
	}
	return "persistent://public/default/" + name
}

// restTopic is a full topic name's path in the admin REST API:
// persistent/<tenant>/<namespace>/<topic>.
func restTopic(full string) string {
	return strings.Replace(full, "://", "/", 1)
}

// checkPulsar checks from the broker that a component reached it as
// configured: an ingester's subscription (subscriptionName) on its job set
// events topic has a consumer. A wrong subscription name, topic, address
// or token leaves it without one. Components that only publish show it by
// their readiness probes (the server's /health answers 200 only once its
// producers exist).
func checkPulsar(o *outcome, svc *Services, rn *Run, timeout time.Duration) {
	sub, ok := rn.Effective("subscriptionName")
	topic, hasTopic := rn.Effective("pulsar.jobsetEventsTopic")
	if !ok || !hasTopic || svc.Pulsar == nil {
		return
	}
	topic = fullTopic(topic)
	deadline := time.Now().Add(timeout)
	var last string
	for {
		n, err := consumers(svc.Pulsar, topic, sub)
		if err == nil && n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("the broker shows subscription %q on %s with %d consumers", sub, topic, n))
			return
		}
		last = fmt.Sprintf("%d consumers, %v", n, err)
		if time.Now().After(deadline) {
			o.errorf("the broker shows no consumer on subscription %q of %s within %s (last: %s)", sub, topic, timeout, last)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// consumers counts the consumers of a subscription across a partitioned
// topic's partitions.
func consumers(p *testenv.Pulsar, topic, sub string) (int, error) {
	body, err := p.Admin(context.Background(), http.MethodGet, "/admin/v2/"+restTopic(topic)+"/partitioned-stats")
	if err != nil {
		return 0, err
	}
	var stats struct {
		Subscriptions map[string]struct {
			Consumers []json.RawMessage `json:"consumers"`
		} `json:"subscriptions"`
	}
	if err := json.Unmarshal([]byte(body), &stats); err != nil {
		return 0, errors.Wrapf(err, "cannot decode the stats of %s", topic)
	}
	return len(stats.Subscriptions[sub].Consumers), nil
}

// brokerAddr is the broker's binary-protocol host:port.
func brokerAddr(p *testenv.Pulsar) string {
	u, _ := url.Parse(p.ServiceURL())
	return net.JoinHostPort(u.Hostname(), u.Port())
}
