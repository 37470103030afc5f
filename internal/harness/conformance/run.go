package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// Run is one rendered Armada container to Run.
type Run struct {
	Inv *podrun.Invocation
	Cfg *armadaConfig
	// Job containers run to completion; others run until checked.
	Job bool
	// Root holds the container's volumes and its HOME.
	Root string
	// Cluster is the worker cluster of a remote executor, else "".
	Cluster string
	// HostsFile is the /etc/hosts the process sees (see names), once
	// overrides has written it.
	HostsFile string
	// Sidecars are the pod's tool containers (binoculars' TLS proxies).
	Sidecars []*Sidecar
}

// Command is how the test starts the run's binary: in a root of its own
// with the run's hosts file and volumes (podrun.PodCommand).
func (r *Run) Command(e *Env) (string, []string, error) {
	root, err := os.MkdirTemp(r.Root, "pod-")
	if err != nil {
		return "", nil, err
	}
	return podrun.PodCommand(root, r.HostsFile, e.SourceDir, r.Inv.Mounts, filepath.Join(e.BinDir, r.Inv.Component), r.Inv.Args)
}

// ID names the run in subtests and messages.
func (r *Run) ID() string { return r.Inv.Workload + "/" + r.Inv.Container }

// Effective returns a config key's value as Armada would see it: from the
// rendered environment if it sets the key, else from the loaded files.
func (r *Run) Effective(key string) (string, bool) {
	if v, ok := r.Inv.Lookup(envName(key)); ok {
		return v, true
	}
	v, ok := r.Cfg.Get(key)
	if !ok || v == nil {
		return "", ok
	}
	return fmt.Sprint(v), true
}

// Ports hands out free loopback Ports, never the same one twice.
type Ports struct {
	t    *testing.T
	mu   sync.Mutex
	used map[int]bool
}

// NewPorts returns the ports of a test.
func NewPorts(t *testing.T) *Ports {
	t.Helper()
	return &Ports{t: t}
}

// Free returns a free loopback port not handed out before.
func (p *Ports) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = map[int]bool{}
	}
	for {
		n := testenv.FreePort(p.t)
		if !p.used[n] {
			p.used[n] = true
			return n
		}
	}
}

// overrides is the environment the test adds to a rendered container's,
// and the hosts file it runs with. They are the only things not taken
// from the render:
//
//   - The rendered Postgres, Redis and Pulsar addresses are not rewritten:
//     the run's own /etc/hosts (see names) resolves the names of the
//     example's far ends (farEnds: where the claim and what it composes
//     put the services) to loopback addresses where relays to the private
//     Postgres and Redis and the real Pulsar broker wait on those ports.
//     A config naming anything else reaches nothing.
//   - Every listening port key the loaded config files set (grpcPort,
//     httpPort, metricsPort, apiPort, grpc.port, http.port, metrics.port,
//     metric.port, profiling.port) moves to a free loopback port, so the
//     processes collide neither with each other nor with the machine.
//   - KUBECONFIG names a kubeconfig for an API server that is not there:
//     outside a cluster, executor, binoculars and a leader-elected
//     scheduler need one to build their Kubernetes clients. Other
//     components never read it.
//   - PATH and HOME, which every container has from its image.
//
// An in-cluster executor, in checkLocalExecutors, gets KUBECONFIG for a
// real API server as its ServiceAccount instead, and reaches the
// scheduler by its Service names through the hosts file.
//
// A remote executor (checkRemoteExecutor) also gets KUBECONFIG for its
// worker cluster as its ServiceAccount, and HTTPS_PROXY naming the test's
// CONNECT proxy, which tunnels the rendered armadaUrl, unchanged, to the
// test's executor API.
//
// Viper honours ARMADA_ variables only for keys some loaded file sets, so
// each is added only for keys present. That the port overrides take
// effect is then proven by the processes: they log and listen on the
// moved ports.
func overrides(t *testing.T, e *Env, svc *Services, free func() int, rn *Run) (env []podrun.EnvVar, moved map[string]int) {
	t.Helper()
	resolveNames(t, svc, rn)
	moved, portEnv := portOverrides(rn.Cfg, func(string) int { return free() })
	env = append([]podrun.EnvVar{{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"}, {Name: "HOME", Value: rn.Root}}, portEnv...)
	env = append(env, podrun.EnvVar{Name: "KUBECONFIG", Value: e.Kubeconfig})
	for _, v := range env {
		if old, ok := rn.Inv.Lookup(v.Name); ok {
			t.Logf("%s: the test overrides rendered env %s=%q", rn.ID(), v.Name, old)
		}
	}
	return env, moved
}

// environ is a run's complete process environment: the rendered variables
// followed by the test's overrides, which win. Files the overrides name
// are shown where the process's root has them (podrun.PodPath).
func environ(rn *Run, extra []podrun.EnvVar) []string {
	out := make([]string, 0, len(rn.Inv.Env)+len(extra))
	for _, v := range rn.Inv.Env {
		out = append(out, v.Name+"="+v.Value)
	}
	for _, v := range extra {
		out = append(out, v.Name+"="+podrun.PodPath(v.Value))
	}
	return out
}

// configErrors matches a log line that means a process failed on its config
// rather than on a missing network dependency: LoadConfig's read, decode
// and validation failures (internal/common/startup.go,
// internal/common/config/validation.go), components' own config checks,
// and any fatal log or panic.
var configErrors = regexp.MustCompile(`^panic:|Error reading (base )?config|decoding failed|error\(s\) decoding|ConfigError:|Invalid config|Config error|` +
	`at least one auth method|Failed to create auth services|\bFATAL\b`)

// checkConfig fails the test for every rendered key Armada does not use and
// every rendered ARMADA_ variable it ignores.
func checkConfig(t *testing.T, rn *Run, log string) {
	t.Helper()
	for _, k := range unusedKeys(log) {
		switch {
		case rn.Cfg.InOverride(k):
			t.Errorf("%s (%s): rendered config key %q is unused by Armada (\"Unused keys\" warning)", rn.ID(), rn.Inv.Component, k)
		case rn.Cfg.InBase(k):
			t.Logf("%s (%s): key %q is unused but comes only from Armada's own base config; ignored", rn.ID(), rn.Inv.Component, k)
		default:
			t.Errorf("%s (%s): unused key %q is in no loaded file the test can attribute it to", rn.ID(), rn.Inv.Component, k)
		}
	}
	known := rn.Cfg.EnvNames()
	for _, v := range rn.Inv.Env {
		if strings.HasPrefix(v.Name, "ARMADA_") && v.Name != "ARMADA_LOG_CONFIG" && !known[v.Name] {
			t.Errorf("%s (%s): rendered env %s matches no key in any loaded config file, so Armada ignores it", rn.ID(), rn.Inv.Component, v.Name)
		}
	}
}

// ShowTail prints the end of p's log when the test fails.
func ShowTail(t *testing.T, rn *Run, p *podrun.Process) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: args %q; last %d lines of %s:\n%s", rn.ID(), rn.Inv.Args, tailLines, p.LogPath(), p.Tail(tailLines))
		}
	})
}

// NewRuns reconstructs every Armada container of a render's workloads,
// Jobs' first, with the workload of each, and the Pulsar topic-init Jobs'
// containers; skipped counts the other non-Armada containers.
func NewRuns(t *testing.T, e *Env, r *Render, workloads []podrun.Workload, supplied map[SecretRef]string) (
	runs []*Run, workloadOf map[*Run]podrun.Workload, topics []*TopicJob, skipped int,
) {
	t.Helper()
	workloadOf = map[*Run]podrun.Workload{}
	// A namespaced Armada runs in its own namespace; an XArmada in
	// spec.namespace.
	ns := r.XRString(r.XRString("default", "spec", "namespace"), "metadata", "namespace")
	rs := &podrun.Resolver{Sources: renderSources{render: r, supplied: supplied}, Namespace: ns}
	for _, w := range workloads {
		containers := append(slices.Clone(w.Pod.InitContainers), w.Pod.Containers...)
		for i, c := range containers {
			if podrun.KindOfImage(c.Image) != podrun.ArmadaImage {
				job, skip := otherContainer(t, rs, w, c, runs)
				if job != nil {
					topics = append(topics, job)
				}
				if skip {
					skipped++
				}
				continue
			}
			root := t.TempDir()
			inv, err := rs.Invocation(w, c, root)
			if err != nil {
				t.Errorf("%s: container %s cannot be reproduced from the render: %v", w.ID(), c.Name, err)
				continue
			}
			if inv.Tag != e.Version {
				t.Logf("%s: image tag %s differs from the Armada %s binaries under test", w.ID(), inv.Tag, e.Version)
			}
			cfg, err := loadArmadaConfig(e.SourceDir, inv.Component, inv.ConfigFiles)
			if err != nil {
				t.Errorf("%s: %v", w.ID(), err)
				continue
			}
			rn := &Run{Inv: inv, Cfg: cfg, Job: w.Kind == "Job" || i < len(w.Pod.InitContainers), Root: root, Cluster: w.Cluster}
			runs = append(runs, rn)
			workloadOf[rn] = w
		}
	}
	return runs, workloadOf, topics, skipped
}

// otherContainer handles a container of w that is not one of Armada's: a
// Pulsar topic-init Job's script (returned), a tool sidecar (recorded on
// its Armada container's run), or a container the test does not run
// (skip), which must be one it accounts for.
func otherContainer(t *testing.T, rs *podrun.Resolver, w podrun.Workload, c corev1.Container, runs []*Run) (job *TopicJob, skip bool) {
	t.Helper()
	if isTopicJob(w, c) {
		root := t.TempDir()
		inv, err := rs.Script(w, c, root)
		if err != nil {
			t.Errorf("%s: container %s cannot be reproduced from the render: %v", w.ID(), c.Name, err)
			return nil, false
		}
		return &TopicJob{Inv: inv, Root: root}, false
	}
	if tool, ok := podrun.ToolForImage(c.Image); ok {
		addSidecar(t, rs, w, c, tool, runs)
		return nil, false
	}
	why, known := notRunReason(c.Image)
	if known {
		t.Logf("%s: container %s runs %s, not an Armada image; not run: %s", w.ID(), c.Name, c.Image, why)
	} else {
		t.Errorf("%s: container %s runs %s, which the test neither runs nor accounts for (see notRun)", w.ID(), c.Name, c.Image)
	}
	return nil, true
}
