package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/podrun"
	"github.com/armadaproject/armada-crossplane/internal/testenv"
)

// run is one rendered Armada container to run.
type run struct {
	Inv *invocation
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
	Sidecars []*sidecar
}

// Command is how the test starts the run's binary: in a root of its own
// with the run's hosts file and volumes (podCommand).
func (r *run) Command(e *env) (string, []string, error) {
	root, err := os.MkdirTemp(r.Root, "pod-")
	if err != nil {
		return "", nil, err
	}
	return podrun.PodCommand(root, r.HostsFile, e.SourceDir, r.Inv.Mounts, filepath.Join(e.BinDir, r.Inv.Component), r.Inv.Args)
}

// ID names the run in subtests and messages.
func (r *run) ID() string { return r.Inv.Workload + "/" + r.Inv.Container }

// Effective returns a config key's value as Armada would see it: from the
// rendered environment if it sets the key, else from the loaded files.
func (r *run) Effective(key string) (string, bool) {
	if v, ok := r.Inv.Lookup(envName(key)); ok {
		return v, true
	}
	v, ok := r.Cfg.Get(key)
	if !ok || v == nil {
		return "", ok
	}
	return fmt.Sprint(v), true
}

// ports hands out free loopback ports, never the same one twice.
type ports struct {
	t    *testing.T
	mu   sync.Mutex
	used map[int]bool
}

// Free returns a free loopback port not handed out before.
func (p *ports) Free() int {
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
func overrides(t *testing.T, e *env, svc *services, free func() int, rn *run) (env []envVar, moved map[string]int) {
	t.Helper()
	resolveNames(t, svc, rn)
	moved, portEnv := portOverrides(rn.Cfg, func(string) int { return free() })
	env = append([]envVar{{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"}, {Name: "HOME", Value: rn.Root}}, portEnv...)
	env = append(env, envVar{Name: "KUBECONFIG", Value: e.Kubeconfig})
	for _, v := range env {
		if old, ok := rn.Inv.Lookup(v.Name); ok {
			t.Logf("%s: the test overrides rendered env %s=%q", rn.ID(), v.Name, old)
		}
	}
	return env, moved
}

// environ is a run's complete process environment: the rendered variables
// followed by the test's overrides, which win. Files the overrides name
// are shown where the process's root has them (podPath).
func environ(rn *run, extra []envVar) []string {
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
var configErrors = regexp.MustCompile(`^panic:|Error reading (base )?config|decoding failed|error\(s\) decoding|ConfigError:|Invalid config|Config error|at least one auth method|Failed to create auth services|\bFATAL\b`)

// checkConfig fails the test for every rendered key Armada does not use and
// every rendered ARMADA_ variable it ignores.
func checkConfig(t *testing.T, rn *run, log string) {
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

// showTail prints the end of p's log when the test fails.
func showTail(t *testing.T, rn *run, p *process) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: args %q; last %d lines of %s:\n%s", rn.ID(), rn.Inv.Args, tailLines, p.LogPath(), p.Tail(tailLines))
		}
	})
}
