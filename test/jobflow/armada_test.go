package jobflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/podrun"
	"github.com/armadaproject/armada-crossplane/internal/provider"
)

// armadactl runs Armada's own CLI, built from the composed release, as a
// user in the cluster would: in a root of its own whose /etc/hosts
// resolves the composed Service names (so it dials the server's Service
// address, as composed), trusting the composed CA through SSL_CERT_FILE.
type armadactl struct {
	bin, dir, hosts, ca, server string
}

// run runs armadactl as user with args and returns its combined output.
func (a *armadactl) run(ctx context.Context, user, password string, args ...string) (string, error) {
	cfg := map[string]any{
		"currentContext": "jobflow",
		"contexts": map[string]any{"jobflow": map[string]any{
			"armadaUrl": a.server,
			"basicAuth": map[string]any{"username": user, "password": password},
		}},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(a.dir, "armadactl-")
	if err != nil {
		return "", err
	}
	file := filepath.Join(root, "armadactl.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return "", err
	}
	full := append([]string{"--config", podrun.PodPath(file)}, args...)
	bin, cargs, err := podrun.PodCommand(filepath.Join(root, "mnt"), a.hosts, podrun.PodPath(root), nil, a.bin, full)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, cargs...) //nolint:gosec // Runs armadactl.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + podrun.PodPath(root), "SSL_CERT_FILE=" + podrun.PodPath(a.ca)}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// command is the armadactl command line a user would type, for messages.
func (a *armadactl) command(args ...string) string {
	return "armadactl --armadaUrl " + a.server + " " + strings.Join(args, " ")
}

// event is one event of `armadactl watch --raw`.
type event struct {
	Type string
	Raw  map[string]any
}

// parseEvents reads the lines `armadactl watch --raw` prints:
// "*api.JobSucceededEvent {json}".
func parseEvents(out string) []event {
	var evs []event
	for l := range strings.SplitSeq(out, "\n") {
		typ, js, ok := strings.Cut(strings.TrimSpace(l), " ")
		if !ok || !strings.HasPrefix(typ, "*api.Job") {
			continue
		}
		ev := event{Type: strings.TrimSuffix(strings.TrimPrefix(typ, "*api.Job"), "Event")}
		_ = json.Unmarshal([]byte(js), &ev.Raw)
		evs = append(evs, ev)
	}
	return evs
}

// types are the events' types, in order, without repeats in a row.
func types(evs []event) []string {
	var out []string
	for _, e := range evs {
		if len(out) == 0 || out[len(out)-1] != e.Type {
			out = append(out, e.Type)
		}
	}
	return out
}

// lookoutJob is a job as Lookout's API returns it.
type lookoutJob struct {
	JobID       string            `json:"jobId"`
	Queue       string            `json:"queue"`
	JobSet      string            `json:"jobSet"`
	State       string            `json:"state"`
	Annotations map[string]string `json:"annotations"`
	Runs        []struct {
		RunID       string  `json:"runId"`
		Cluster     string  `json:"cluster"`
		Node        *string `json:"node"`
		Pool        *string `json:"pool"`
		JobRunState string  `json:"jobRunState"`
		ExitCode    *int    `json:"exitCode"`
	} `json:"runs"`
}

// lookoutJobs asks Lookout's API (its composed Service, as the claim's
// status.endpoints.lookout names it) for a job set's jobs, as user.
func lookoutJobs(ctx context.Context, names *podrun.Names, url, user, password, jobSet string) ([]lookoutJob, error) {
	body := fmt.Sprintf(`{"filters":[{"field":"jobSet","value":%q,"match":"exact"}],"order":{"field":"jobId","direction":"ASC"},"take":100}`, jobSet)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return names.Dial(ctx, addr)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/jobs", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(user, password)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lookout answered %s: %s", resp.Status, b.String())
	}
	var out struct {
		Jobs []lookoutJob `json:"jobs"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("cannot parse lookout's answer %q: %w", b.String(), err)
	}
	return out.Jobs, nil
}

// runProvider runs provider-armada's controllers against the control plane
// until ctx is done, dialling Armada's composed server address as a pod
// would, through names.
func runProvider(ctx context.Context, t *testing.T, names *podrun.Names) {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(cp.RESTConfig(), ctrl.Options{Metrics: server.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := armadav1.SchemeBuilder.AddToScheme(mgr.GetScheme()); err != nil {
		t.Fatal(err)
	}
	o := controller.Options{
		Logger: logging.NewNopLogger(), PollInterval: 5 * time.Second, MaxConcurrentReconciles: 2,
		GlobalRateLimiter: ratelimiter.NewGlobal(100),
	}
	if err := provider.Setup(mgr, provider.Options{Controller: o, CreationGracePeriod: time.Second, Dialer: names.Dial}); err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("provider-armada stopped: %v", err)
		}
	}()
}
