package jobflow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// Armadactl runs Armada's own CLI, built from the composed release, as a
// user in the cluster would: in a root of its own whose /etc/hosts
// resolves the composed Service names (so it dials the server's Service
// address, as composed), trusting the composed CA through SSL_CERT_FILE.
type Armadactl struct {
	// Bin is armadactl; Dir holds its roots and job files; Hosts is the
	// hosts file; CA the composed CA certificate; Server the server's
	// gRPC address as the claim's status.endpoints.grpc names it. With
	// no CA it dials without TLS (forceNoTls), as Armada's
	// local-development setup does.
	Bin, Dir, Hosts, CA, Server string
}

// cmd returns armadactl's command as user with args, in a root of its own.
func (a *Armadactl) cmd(ctx context.Context, user, password string, args ...string) (*exec.Cmd, error) {
	ctx1 := map[string]any{"armadaUrl": a.Server}
	if user != "" {
		ctx1["basicAuth"] = map[string]any{"username": user, "password": password}
	}
	if a.CA == "" {
		ctx1["forceNoTls"] = true
	}
	cfg := map[string]any{"currentContext": "jobflow", "contexts": map[string]any{"jobflow": ctx1}}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode armadactl's config")
	}
	root, err := os.MkdirTemp(a.Dir, "armadactl-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create armadactl's root")
	}
	file := filepath.Join(root, "armadactl.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, errors.Wrap(err, "cannot write armadactl's config")
	}
	full := append([]string{"--config", podrun.PodPath(file)}, args...)
	bin, cargs, err := podrun.PodCommand(filepath.Join(root, "mnt"), a.Hosts, podrun.PodPath(root), nil, a.Bin, full)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, cargs...) //nolint:gosec // Runs armadactl.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + podrun.PodPath(root)}
	if a.CA != "" {
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+podrun.PodPath(a.CA))
	}
	return cmd, nil
}

// Run runs armadactl as user with args and returns its combined output.
func (a *Armadactl) Run(ctx context.Context, user, password string, args ...string) (string, error) {
	cmd, err := a.cmd(ctx, user, password, args...)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// Script writes an executable script at path that runs armadactl as user
// with the arguments it is given, as Run does, for a person to carry on
// by hand. The password is in a 0600 file beside it, never in output.
func (a *Armadactl) Script(ctx context.Context, path, user, password string) error {
	cmd, err := a.cmd(ctx, user, password)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# armadactl as " + user + ", in a root whose /etc/hosts resolves the composed Service names (written by make run).\nexec env -i")
	for _, e := range cmd.Env {
		b.WriteString(" " + shellQuote(e))
	}
	for _, arg := range cmd.Args {
		b.WriteString(" " + shellQuote(arg))
	}
	b.WriteString(" \"$@\"\n")
	return errors.Wrap(os.WriteFile(path, []byte(b.String()), 0o700), "cannot write the armadactl script") //nolint:gosec // An executable script.
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Command is the armadactl command line a user would type, for messages.
func (a *Armadactl) Command(args ...string) string {
	return "armadactl --armadaUrl " + a.Server + " " + strings.Join(args, " ")
}

// Submit writes a job file of jobs into queue's jobSet and submits it.
func (a *Armadactl) Submit(ctx context.Context, user, password, queue, jobSet string, jobs ...map[string]any) (string, error) {
	items := make([]any, len(jobs))
	for i, j := range jobs {
		items[i] = j
	}
	b, err := yaml.Marshal(map[string]any{"queue": queue, "jobSetId": jobSet, "jobs": items})
	if err != nil {
		return "", errors.Wrap(err, "cannot encode the job file")
	}
	f := filepath.Join(a.Dir, jobSet+".yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		return "", errors.Wrap(err, "cannot write the job file")
	}
	// The server learns of a new queue from its queue cache, which it
	// refreshes every queueCacheRefreshPeriod (10 s in Armada's defaults):
	// a submit just after provider-armada created the queue is refused
	// with "could not find queue" until then.
	deadline := time.Now().Add(queueCacheWait)
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := a.Run(sctx, user, password, "submit", podrun.PodPath(f))
		cancel()
		if err == nil || !strings.Contains(out, "could not find queue") || time.Now().After(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(2 * time.Second):
		}
	}
}

// queueCacheWait is how long Submit retries a submit refused because the
// server's queue cache does not hold the queue yet: three of Armada's
// default refresh periods.
const queueCacheWait = 30 * time.Second

// Watch follows a job set's events with `armadactl watch --raw
// --exit-if-inactive` until every job in it has finished, calling each,
// if not nil, with every event as it arrives. It returns the events and
// armadactl's whole output. `--exit-if-inactive` exits at once while the
// job set has no events yet (a submission still on its way through Pulsar
// and the event ingester to Redis): Watch runs it again, a second apart,
// until it shows some or ctx is done.
func (a *Armadactl) Watch(ctx context.Context, user, password, queue, jobSet string, each func(Event)) ([]Event, string, error) {
	for {
		evs, out, err := a.watchOnce(ctx, user, password, queue, jobSet, each)
		if err != nil || len(evs) > 0 {
			return evs, out, err
		}
		select {
		case <-ctx.Done():
			return evs, out, nil
		case <-time.After(time.Second):
		}
	}
}

func (a *Armadactl) watchOnce(ctx context.Context, user, password, queue, jobSet string, each func(Event)) ([]Event, string, error) {
	cmd, err := a.cmd(ctx, user, password, "watch", queue, jobSet, "--raw", "--exit-if-inactive")
	if err != nil {
		return nil, "", err
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var (
		out  bytes.Buffer
		evs  []Event
		wg   sync.WaitGroup
		scan = bufio.NewScanner(pr)
	)
	scan.Buffer(make([]byte, 64*1024), 4*1024*1024)
	wg.Go(func() {
		for scan.Scan() {
			l := scan.Text()
			out.WriteString(l + "\n")
			if ev, ok := parseEvent(l); ok {
				evs = append(evs, ev)
				if each != nil {
					each(ev)
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	})
	err = cmd.Run()
	_ = pw.Close()
	wg.Wait()
	return evs, out.String(), err
}

// JobSpec is a one-job job file's job in namespace, with annotations
// choosing what its KWOK pod does (kwok.armadaproject.io/run-for,
// kwok.armadaproject.io/exit-code). The namespace must be one the
// executor's composed RoleBindings grant (the install's own, or a team
// queue's); its pod meets the restricted Pod Security Standard, which the
// install's namespace enforces.
func JobSpec(namespace string, annotations map[string]string) map[string]any {
	res := map[string]any{"cpu": "100m", "memory": "64Mi"}
	j := map[string]any{
		"priority": 0, "namespace": namespace,
		"podSpec": map[string]any{
			"terminationGracePeriodSeconds": 0,
			"restartPolicy":                 "Never",
			"containers": []any{map[string]any{
				"name": "work", "image": "busybox:1.36", "command": []any{"sh", "-c", "sleep 1"},
				"securityContext": map[string]any{
					"runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false,
					"capabilities":   map[string]any{"drop": []any{"ALL"}},
					"seccompProfile": map[string]any{"type": "RuntimeDefault"},
				},
				"resources": map[string]any{"requests": res, "limits": res},
			}},
		},
	}
	if annotations != nil {
		j["annotations"] = annotations
	}
	return j
}

// An Event is one event of `armadactl watch --raw`.
type Event struct {
	// Type is the event's type less "*api.Job" and "Event": Succeeded.
	Type string
	Raw  map[string]any
}

// JobID is the event's job, if it names one.
func (e Event) JobID() string {
	if id, ok := e.Raw["jobId"].(string); ok {
		return id
	}
	for _, v := range e.Raw {
		if m, ok := v.(map[string]any); ok {
			if id, ok := m["jobId"].(string); ok {
				return id
			}
		}
	}
	return ""
}

// parseEvent reads a line `armadactl watch --raw` prints:
// "*api.JobSucceededEvent {json}".
func parseEvent(l string) (Event, bool) {
	typ, js, ok := strings.Cut(strings.TrimSpace(l), " ")
	if !ok || !strings.HasPrefix(typ, "*api.Job") {
		return Event{}, false
	}
	ev := Event{Type: strings.TrimSuffix(strings.TrimPrefix(typ, "*api.Job"), "Event")}
	_ = json.Unmarshal([]byte(js), &ev.Raw)
	return ev, true
}

// Types are the events' types, in order, without repeats in a row.
func Types(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if len(out) == 0 || out[len(out)-1] != e.Type {
			out = append(out, e.Type)
		}
	}
	return out
}

// RawEvents prints events for failure messages.
func RawEvents(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %v\n", e.Type, e.Raw)
	}
	return b.String()
}

// IsSubsequence reports whether want appears in got in order.
func IsSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// LookoutJob is a job as Lookout's API returns it.
type LookoutJob struct {
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

// Lookout is how a client reaches Lookout's API: its URL (the claim's
// status.endpoints.lookout, HTTPS when spec.tls is on), the composed names
// it resolves through, and the CA it trusts (the claim's composed CA; no
// other root).
type Lookout struct {
	URL   string
	Names *podrun.Names
	// CA is the PEM CA the client trusts; with none (TLS off) it trusts
	// the system roots.
	CA []byte
}

// LookoutJobs asks Lookout's API (its composed Service, as the claim's
// status.endpoints.lookout names it) for a job set's jobs, as user.
func LookoutJobs(ctx context.Context, l Lookout, user, password, jobSet string) ([]LookoutJob, error) {
	body := fmt.Sprintf(`{"filters":[{"field":"jobSet","value":%q,"match":"exact"}],"order":{"field":"jobId","direction":"ASC"},"take":1000}`, jobSet)
	var out struct {
		Jobs []LookoutJob `json:"jobs"`
	}
	if err := lookoutPost(ctx, l, user, password, "/api/v1/jobs", body, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// LookoutRunError is the error Lookout shows for a job's run (its API's
// getJobRunError): why a failed run failed.
func LookoutRunError(ctx context.Context, l Lookout, user, password, runID string) (string, error) {
	var out struct {
		ErrorString string `json:"errorString"`
	}
	if err := lookoutPost(ctx, l, user, password, "/api/v1/jobRunError", fmt.Sprintf(`{"runId":%q}`, runID), &out); err != nil {
		return "", err
	}
	return out.ErrorString, nil
}

// lookoutPost posts body to Lookout's API at path as user and decodes
// the answer into out.
func lookoutPost(ctx context.Context, l Lookout, user, password, path, body string, out any) error {
	hc, err := l.client()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL+path, strings.NewReader(body))
	if err != nil {
		return errors.Wrap(err, "cannot build Lookout's request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(user, password)
	resp, err := hc.Do(req)
	if err != nil {
		return errors.Wrap(err, "cannot ask Lookout")
	}
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.Errorf("lookout answered %s: %s", resp.Status, b.String())
	}
	return errors.Wrapf(json.Unmarshal(b.Bytes(), out), "cannot parse lookout's answer %q", b.String())
}
