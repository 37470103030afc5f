package conformance

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// ExecutorRun is an executor started by RunExecutor, still running.
type ExecutorRun struct {
	Proc *podrun.Process
	// Outcome is the lease outcome its log shows: LeaseOK's line, or the
	// error of leaseFailed.
	Outcome string
	// Log is its log once the outcome was seen.
	Log string
	// Moved are its listening ports (overrides).
	Moved map[string]int
}

// RunExecutor starts an executor as rendered, with the test's overrides
// and then changes (withEnv), and waits for its first lease outcome. It
// fails the test if the executor failed on its configuration, if its
// cluster's API server refused its ServiceAccount, or if it logged no
// outcome within remoteTimeout.
func RunExecutor(t *testing.T, e *Env, svc *Services, free func() int, rn *Run, changes []podrun.EnvVar) ExecutorRun {
	t.Helper()
	extra, moved := overrides(t, e, svc, free, rn)
	env := withEnv(environ(rn, extra), changes)
	logPath := filepath.Join(t.TempDir(), "executor-"+strconv.Itoa(free())+".log")
	bin, args, err := rn.Command(e)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(t, bin, e.SourceDir, args, env, logPath)
	if err != nil {
		t.Fatal(err)
	}
	ShowTail(t, rn, p)
	x := ExecutorRun{Proc: p, Moved: moved}
	reached := p.Until(remoteTimeout, func(l string) bool {
		if LeaseOK.MatchString(l) {
			x.Outcome = LeaseOK.FindString(l)
			return true
		}
		if m := leaseFailed.FindStringSubmatch(l); m != nil {
			x.Outcome = m[1]
			return true
		}
		return configErrorLine(l) != ""
	})
	x.Log = p.Log()
	if l := configErrorLine(x.Log); l != "" {
		t.Fatalf("%s failed on its configuration: %s", rn.ID(), l)
	}
	if l := forbidden.FindString(x.Log); l != "" {
		t.Errorf("%s: its cluster's API server refused the executor's ServiceAccount: %s", rn.ID(), firstLine(x.Log, forbidden))
	}
	if !reached {
		t.Fatalf("%s logged no lease outcome within %s", rn.ID(), remoteTimeout)
	}
	return x
}

// CheckLeasing checks an executor that leased: the keys its config sets
// were all used, it serves metrics, and it reports itself healthy, which
// it does only once its informers synced with its cluster's API server.
func CheckLeasing(t *testing.T, e *Env, rn *Run, x ExecutorRun) {
	t.Helper()
	checkConfig(t, rn, x.Proc.Log())
	checkRemoteMetrics(t, e, rn, x.Moved)
	if port, ok := x.Moved["httpPort"]; !ok {
		t.Errorf("%s: the loaded config files set no httpPort", rn.ID())
	} else if ok, last := podrun.Healthy(port, 5*time.Second); !ok {
		t.Errorf("%s: GET /health did not answer 2xx once leasing: %s", rn.ID(), last)
	}
}

// withEnv applies changes to an environment: each replaces the variable
// of its name, or removes it if its value is empty.
func withEnv(env []string, changes []podrun.EnvVar) []string {
	for _, c := range changes {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, c.Name+"=") })
		if c.Value != "" {
			env = append(env, c.Name+"="+podrun.PodPath(c.Value))
		}
	}
	return env
}

func FailedHandshakes(handshakes []string) []string {
	return slices.DeleteFunc(slices.Clone(handshakes), func(s string) bool { return s == "" })
}

// firstLine returns the first line of log re matches, trimmed; "" if
// none does.
func firstLine(log string, re *regexp.Regexp) string {
	for l := range strings.SplitSeq(log, "\n") {
		if re.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// checkRemoteMetrics scrapes a leasing remote executor's rendered metrics
// port, as its ServiceMonitor in the worker cluster would: it must serve
// Prometheus text. armada_ families internal/harness/metricnames does not find are
// only logged: once leasing, the executor serves its background tasks'
// armada_executor_<task>_latency_seconds, whose names Armada builds at run
// time from task names (internal/common/task), which the index cannot
// evaluate.
func checkRemoteMetrics(t *testing.T, e *Env, rn *Run, moved map[string]int) {
	t.Helper()
	var o outcome
	scrapeMetrics(&o, rn, &Component{Moved: moved}, check{})
	for _, msg := range o.Errors {
		t.Errorf("%s: %s", rn.ID(), msg)
	}
	var armada, unknown []string
	for _, n := range o.Scraped {
		if strings.HasPrefix(n, "armada_") {
			armada = append(armada, n)
			if e.Metrics.Lookup(n) == "" {
				unknown = append(unknown, n)
			}
		}
	}
	t.Logf("%s: %d metric families scraped, %d of them armada_; not found by internal/harness/metricnames: %v", rn.ID(), len(o.Scraped), len(armada), unknown)
}
