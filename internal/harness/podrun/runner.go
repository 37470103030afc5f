package podrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// kindJob is a batch/v1 Job's kind.
const kindJob = "Job"

// A Release is where one Armada release's binaries and source are.
type Release struct {
	// BinDir holds the release's binaries, named as Binaries.
	BinDir string
	// SourceDir is the release's module source tree: the binaries'
	// working directory, whose config/<component>/config.yaml they load
	// first.
	SourceDir string
	// LookoutUI, if set, holds the release's built Lookout UI (what the
	// armada-lookout image holds at /app/internal/lookoutui/build,
	// tools/lookoutui), which Lookout serves at / from
	// ./internal/lookoutui/build: Lookout then works in a directory laid
	// out as the image's /app (lookoutDir).
	LookoutUI string
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Client reaches the cluster the workloads were composed in.
	Client client.Client
	// Namespace holds the workloads, Services, Secrets and ConfigMaps.
	Namespace string
	// Releases returns the binaries of an image tag (x.y.z); false if
	// there are none.
	Releases func(tag string) (Release, bool)
	// APIServer is the Kubernetes API server (its URL and CA) a pod that
	// mounts its ServiceAccount's token reaches with that token, as in a
	// cluster; no process gets a kubeconfig (see serviceAccount).
	APIServer *rest.Config
	// Tools are the executables of the third-party images ToolForImage
	// knows, by tool name (Ghostunnel).
	Tools map[string]string
	// Dir holds each pod's root, volumes and log.
	Dir string
	// Names resolves the composed Service names; the caller relays the
	// external far ends (PostgreSQL, Redis, Pulsar) through it first.
	Names *Names
	// FreePort returns a free loopback port.
	FreePort func() (int, error)
	// Logf receives progress; nil discards it.
	Logf func(format string, args ...any)
}

// A Runner plays kubelet, kube-proxy and the workload controllers for the
// Deployments, StatefulSets and Jobs composed in one namespace: it runs
// each pod's containers as local processes (Armada's binaries at the
// image's release, the topic-init Job's script with this machine's curl),
// with their composed args, environment and mounted Secrets and
// ConfigMaps; makes each Service's names reach its pod's ports; and writes
// the workloads' status from what the processes do: a Job completes when
// its containers exit 0, a Deployment or StatefulSet is available when
// its container's readiness probe passes. A changed pod template restarts
// the pod.
type Runner struct {
	o     RunnerOptions
	hosts string

	mu    sync.Mutex
	pods  map[string]*pod
	ports map[string]int
}

// A pod is one running (or finished) pod of a workload.
type pod struct {
	w    Workload
	hash string
	// procs are the running containers.
	procs []*Process
	// local maps a container port to the loopback port it moved to.
	local map[int32]int
	// ready is set once the readiness probe passed; done once a Job's
	// containers exited 0, failed once one did not.
	ready, done bool
	failures    int
	err         error
	cancel      context.CancelFunc
	// restarts counts a long-running pod's restarts; restartAt is when the
	// next is due, zero while it runs.
	restarts  int
	restartAt time.Time
}

// NewRunner returns a Runner; call Run to start it.
func NewRunner(o RunnerOptions) (*Runner, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "cannot create the runner's directory")
	}
	hosts, err := o.Names.HostsFile(o.Dir, nil)
	if err != nil {
		return nil, errors.Wrap(err, "cannot write hosts file")
	}
	return &Runner{o: o, hosts: hosts, pods: map[string]*pod{}, ports: map[string]int{}}, nil
}

// Run syncs the namespace's workloads every interval until ctx is done,
// then stops every process.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	defer r.stopAll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.o.Logf("runner: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync starts, restarts and checks the pods of every workload once.
func (r *Runner) Sync(ctx context.Context) error {
	ws, objs, err := r.workloads(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, w := range ws {
		seen[w.ID()] = true
		hash := templateHash(w)
		r.mu.Lock()
		p := r.pods[w.ID()]
		r.mu.Unlock()
		if p != nil && p.hash != hash {
			r.o.Logf("runner: %s changed: restarting its pod", w.ID())
			p.stop()
			p = nil
		}
		if p == nil {
			p = &pod{w: w, hash: hash}
			r.mu.Lock()
			r.pods[w.ID()] = p
			r.mu.Unlock()
			if w.Kind == kindJob {
				if jobComplete(objs[w.ID()]) {
					p.done = true
					continue
				}
				pctx, cancel := context.WithCancel(ctx)
				p.cancel = cancel
				go r.runJob(pctx, p, objs[w.ID()])
				continue
			}
			if err := r.startPod(p); err != nil {
				p.err = err
				r.o.Logf("runner: %s: %v", w.ID(), err)
				continue
			}
		}
		if w.Kind != kindJob && len(p.procs) == 0 && p.restartAt.IsZero() {
			// A pod that could not start (a Secret it mounts not created
			// yet: Crossplane creates composed objects in no fixed order)
			// is tried again, as the kubelet would.
			if err := r.startPod(p); err != nil {
				p.err = err
				continue
			}
		}
		if w.Kind != kindJob {
			r.checkReady(ctx, p, objs[w.ID()])
		}
	}
	r.mu.Lock()
	for id, p := range r.pods {
		if !seen[id] {
			r.o.Logf("runner: %s is gone: stopping its pod", id)
			p.stop()
			delete(r.pods, id)
		}
	}
	r.mu.Unlock()
	return r.relayServices(ctx)
}

// Err returns the error that keeps a workload's pod from running, if any.
func (r *Runner) Err(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pods[id]; p != nil {
		return p.err
	}
	return nil
}

// Processes returns the running processes by workload ID.
func (r *Runner) Processes() map[string][]*Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*Process{}
	for id, p := range r.pods {
		out[id] = slices.Clone(p.procs)
	}
	return out
}

// Logs returns the log files of every pod run so far, by workload ID.
func (r *Runner) Logs() map[string][]string {
	out := map[string][]string{}
	m, _ := filepath.Glob(filepath.Join(r.o.Dir, "logs", "*.log"))
	for _, f := range m {
		out[filepath.Base(f)] = append(out[filepath.Base(f)], f)
	}
	return out
}

// stopAll stops every pod.
func (r *Runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pods {
		p.stop()
	}
}

// Stop stops every pod now.
func (r *Runner) Stop() { r.stopAll() }

func (p *pod) stop() {
	if p.cancel != nil {
		p.cancel()
	}
	for _, pr := range p.procs {
		pr.Stop()
	}
	p.procs = nil
}

// workloads lists the namespace's Deployments, StatefulSets and Jobs, Jobs
// first, each group by name, with the objects by workload ID.
func (r *Runner) workloads(ctx context.Context) ([]Workload, map[string]*unstructured.Unstructured, error) {
	var out []Workload
	objs := map[string]*unstructured.Unstructured{}
	ns := client.InNamespace(r.o.Namespace)
	var jobs batchv1.JobList
	if err := r.o.Client.List(ctx, &jobs, ns); err != nil {
		return nil, nil, errors.Wrap(err, "cannot list Jobs")
	}
	var deps appsv1.DeploymentList
	if err := r.o.Client.List(ctx, &deps, ns); err != nil {
		return nil, nil, errors.Wrap(err, "cannot list Deployments")
	}
	var sets appsv1.StatefulSetList
	if err := r.o.Client.List(ctx, &sets, ns); err != nil {
		return nil, nil, errors.Wrap(err, "cannot list StatefulSets")
	}
	add := func(kind string, obj client.Object, t corev1.PodTemplateSpec, replicas *int32) error {
		if replicas != nil && *replicas == 0 {
			return nil
		}
		w := Workload{Kind: kind, Name: obj.GetName(), Namespace: obj.GetNamespace(), Pod: t.Spec, Labels: t.Labels, Annotations: t.Annotations}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return errors.Wrapf(err, "cannot convert %s", w.ID())
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion(map[string]string{kindJob: "batch/v1"}[kind])
		if kind != kindJob {
			u.SetAPIVersion("apps/v1")
		}
		u.SetKind(kind)
		objs[w.ID()] = u
		out = append(out, w)
		return nil
	}
	for i := range jobs.Items {
		if err := add(kindJob, &jobs.Items[i], jobs.Items[i].Spec.Template, nil); err != nil {
			return nil, nil, err
		}
	}
	for i := range deps.Items {
		if err := add("Deployment", &deps.Items[i], deps.Items[i].Spec.Template, deps.Items[i].Spec.Replicas); err != nil {
			return nil, nil, err
		}
	}
	for i := range sets.Items {
		if err := add("StatefulSet", &sets.Items[i], sets.Items[i].Spec.Template, sets.Items[i].Spec.Replicas); err != nil {
			return nil, nil, err
		}
	}
	return out, objs, nil
}

// templateHash identifies a workload's pod template.
func templateHash(w Workload) string {
	b, err := json.Marshal(struct {
		Pod         corev1.PodSpec    `json:"pod"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}{w.Pod, w.Labels, w.Annotations})
	if err != nil {
		// A decoded PodSpec always encodes; never the same as a real hash.
		return "unencodable: " + err.Error()
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// jobComplete reports whether a Job has a Complete condition.
func jobComplete(u *unstructured.Unstructured) bool {
	c, _ := manifest.ConditionOf(u, "Complete")
	return c.Status == "True"
}

// markHealthy writes the status the workload's controller would once its
// pod is ready or complete.
func (r *Runner) markHealthy(ctx context.Context, u *unstructured.Unstructured) error {
	cur := &unstructured.Unstructured{}
	cur.SetAPIVersion(u.GetAPIVersion())
	cur.SetKind(u.GetKind())
	if err := r.o.Client.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		return errors.Wrapf(err, "cannot get %s %s", u.GetKind(), u.GetName())
	}
	st, ok := simulate.HealthyStatus(cur, time.Now())
	if !ok {
		return nil
	}
	// The API server refuses to decrease a Job's failed count: keep the
	// failed attempts before the one that succeeded.
	if f, ok, _ := unstructured.NestedInt64(cur.Object, "status", "failed"); ok {
		st["failed"] = f
	}
	cur.Object["status"] = st
	if err := r.o.Client.Status().Update(ctx, cur); err != nil && !kerrors.IsConflict(err) {
		return errors.Wrapf(err, "cannot update the status of %s %s", u.GetKind(), u.GetName())
	}
	return nil
}

// markFailed counts a failed pod in a Job's status.
func (r *Runner) markFailed(ctx context.Context, u *unstructured.Unstructured, failures int) {
	cur := &unstructured.Unstructured{}
	cur.SetAPIVersion(u.GetAPIVersion())
	cur.SetKind(u.GetKind())
	if err := r.o.Client.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		return
	}
	_ = unstructured.SetNestedField(cur.Object, int64(failures), "status", "failed")
	_ = r.o.Client.Status().Update(ctx, cur)
}

// runJob runs a Job's containers one after the other, init containers
// first, until all exit 0 or its backoffLimit is spent.
func (r *Runner) runJob(ctx context.Context, p *pod, u *unstructured.Unstructured) {
	limit := int64(6)
	if v, ok, _ := unstructured.NestedInt64(u.Object, "spec", "backoffLimit"); ok {
		limit = v
	}
	for attempt := 0; ; attempt++ {
		err := r.runJobOnce(ctx, p, attempt)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			r.mu.Lock()
			p.done, p.err = true, nil
			r.mu.Unlock()
			r.o.Logf("runner: %s complete", p.w.ID())
			if err := r.markHealthy(ctx, u); err != nil {
				r.o.Logf("runner: %v", err)
			}
			return
		}
		r.mu.Lock()
		p.failures++
		p.err = err
		r.mu.Unlock()
		r.o.Logf("runner: %s attempt %d failed: %v", p.w.ID(), attempt+1, err)
		r.markFailed(ctx, u, p.failures)
		if int64(p.failures) > limit {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt+1) * 2 * time.Second):
		}
	}
}

func (r *Runner) runJobOnce(ctx context.Context, p *pod, attempt int) error {
	for i, c := range append(slices.Clone(p.w.Pod.InitContainers), p.w.Pod.Containers...) {
		pr, err := r.startContainer(p, c, fmt.Sprintf("%s-%d-%d", c.Name, attempt, i))
		if err != nil {
			return err
		}
		r.mu.Lock()
		p.procs = append(p.procs, pr)
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			pr.Stop()
			return ctx.Err()
		case <-pr.done:
		}
		if code := pr.cmd.ProcessState.ExitCode(); code != 0 {
			return errors.Errorf("container %s exited with code %d; last lines of %s:\n%s", c.Name, code, pr.LogPath(), pr.Tail(20))
		}
	}
	return nil
}

// startPod starts every container of a long-running workload's pod.
func (r *Runner) startPod(p *pod) error {
	if len(p.w.Pod.InitContainers) > 0 {
		return errors.Errorf("%s has init containers, which the runner does not run", p.w.ID())
	}
	for _, c := range p.w.Pod.Containers {
		pr, err := r.startContainer(p, c, c.Name)
		if err != nil {
			p.stop()
			return err
		}
		p.procs = append(p.procs, pr)
	}
	r.o.Logf("runner: %s started", p.w.ID())
	return nil
}

// startContainer starts one container of p: an Armada image as its
// release's binary, the Pulsar image's command (the topic-init Job) with
// this machine's bash and curl.
func (r *Runner) startContainer(p *pod, c corev1.Container, name string) (*Process, error) {
	root, err := os.MkdirTemp(r.o.Dir, p.w.Kind+"-"+p.w.Name+"-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create pod directory")
	}
	saDir, saEnv, err := r.serviceAccount(p.w, root)
	if err != nil {
		return nil, err
	}
	env := append([]EnvVar{
		{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"},
		{Name: "HOME", Value: PodPath(root)},
	}, saEnv...)
	var cmd *podCmd
	switch KindOfImage(c.Image) {
	case ArmadaImage:
		cmd, err = r.armadaCommand(p, c, root)
	case PulsarImage:
		cmd, err = r.pulsarCommand(p, c, root)
	case ToolImage:
		cmd, err = r.toolCommand(p, c, root)
	case OtherImage:
		err = errors.Errorf("%s container %s runs %s, which is neither Armada's nor Pulsar's image: the runner cannot run it", p.w.ID(), c.Name, c.Image)
	}
	if err != nil {
		return nil, err
	}
	if saDir != "" {
		cmd.inv.Mounts[ServiceAccountMountPath] = saDir
	}
	full := make([]string, 0, len(cmd.inv.Env)+len(env)+len(cmd.env))
	for _, e := range append(append(slices.Clone(cmd.inv.Env), env...), cmd.env...) {
		full = append(full, e.Name+"="+e.Value)
	}
	cmdPath, cmdArgs, err := PodCommand(filepath.Join(root, "mnt"), r.hosts, cmd.dir, cmd.inv.Mounts, cmd.bin, cmd.args)
	if err != nil {
		return nil, err
	}
	logs := filepath.Join(r.o.Dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return nil, errors.Wrap(err, "cannot create log directory")
	}
	pr, err := Start(cmdPath, cmd.dir, cmdArgs, full, filepath.Join(logs, p.w.Kind+"-"+p.w.Name+"-"+name+".log"))
	return pr, errors.Wrapf(err, "%s container %s", p.w.ID(), c.Name)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
