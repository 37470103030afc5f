package controlplane

import (
	"context"
	"crypto/tls"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	_ "embed" // The KWOK Stages.
)

// KWOKVersion is the KWOK tools/kwok pins and builds.
const KWOKVersion = "v0.8.0"

// Names of the job flow's processes (Options.JobFlow).
const (
	ProcKubeScheduler = "kube-scheduler"
	ProcKWOK          = "kwok"
)

// KWOKNodeLabel marks the Nodes KWOK manages (AddNodes puts it on each).
const KWOKNodeLabel = "kwok.x-k8s.io/node"

// stages are the KWOK Stages the job flow runs with: Nodes become Ready and
// keep their leases; pods become Running; Armada's job pods (label
// armada_job_id) then Succeed, or Fail with the exit code their job's
// annotation asks for. See kwok/stages.yaml.
//
//go:embed kwok/stages.yaml
var stages []byte

// jobFlowControllers are the kube-controller-manager controllers the job
// flow adds: node-lifecycle removes the not-ready taint admission puts on a
// new Node once KWOK reports it Ready (and taints a Node whose lease KWOK
// stops renewing). The workload controllers (deployment, replicaset,
// statefulset, job) stay off: the composed workloads' pods are run as local
// processes by package podrun, whose runner reports their status, and only
// the bare pods Armada's executor creates for jobs go to KWOK's Nodes.
const jobFlowControllers = "node-lifecycle-controller"

// jobFlowBinaries are the binaries Options.JobFlow needs beside the
// control plane's.
func (o *Options) jobFlowBinaries() []binary {
	kube := "kubernetes-" + KubernetesVersion
	return []binary{{
		name: "kube-scheduler " + KubernetesVersion, path: &o.KubeScheduler, file: filepath.Join(kube, "kube-scheduler"),
		target: clusterBins, script: "tools/kubernetes/build.sh",
	}, {
		name: "kwok " + KWOKVersion, path: &o.KWOK, file: "kwok-" + KWOKVersion,
		target: clusterBins, script: "tools/kwok/build.sh",
	}}
}

// StartJobFlow starts kube-scheduler and KWOK on a control plane started
// with Options.JobFlow and JobFlowLater, once their binaries exist.
func (c *ControlPlane) StartJobFlow(ctx context.Context) error {
	if !c.opts.JobFlow || !c.opts.JobFlowLater {
		return errors.New("cannot start the job flow: the control plane was started without Options.JobFlow and JobFlowLater")
	}
	if c.procs[ProcKWOK] != nil {
		return errors.New("cannot start the job flow: it is already running")
	}
	if err := c.opts.findBinaries(c.opts.jobFlowBinaries()); err != nil {
		return err
	}
	return c.step("kube-scheduler and kwok ready", func() error { return c.startJobFlow(ctx) })
}

// startJobFlow starts kube-scheduler, which binds Armada's job pods (which
// carry only a node selector) to Nodes, and KWOK, which plays every
// kubelet of the Nodes AddNodes creates with the Stages above.
func (c *ControlPlane) startJobFlow(ctx context.Context) error {
	p, err := freePorts(ctx, 2)
	if err != nil {
		return err
	}
	schedPort, kwokPort := strconv.Itoa(p[0]), strconv.Itoa(p[1])
	sched := c.newProcess(ProcKubeScheduler, c.opts.KubeScheduler, []string{
		"--kubeconfig=" + c.kubeconfig,
		"--authentication-kubeconfig=" + c.kubeconfig,
		"--authorization-kubeconfig=" + c.kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + schedPort,
		"--cert-dir=" + filepath.Join(c.dir, "kube-scheduler"),
	}, nil)
	if err := sched.start(); err != nil {
		return err
	}
	stageFile := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(stageFile, stages, 0o600); err != nil {
		return errors.Wrap(err, "cannot write KWOK stages")
	}
	kwok := c.newProcess(ProcKWOK, c.opts.KWOK, []string{
		"--kubeconfig=" + c.kubeconfig,
		"--manage-nodes-with-label-selector=" + KWOKNodeLabel,
		"--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:" + kwokPort,
		"--config=" + stageFile,
	}, nil)
	if err := kwok.start(); err != nil {
		return err
	}
	insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // Loopback health probe of a self-signed server.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}}
	if err := sched.waitReady(ctx, stepTimeout, "kube-scheduler /healthz", func(ctx context.Context) error {
		return httpGetOK(ctx, hc, "https://127.0.0.1:"+schedPort+"/healthz", "ok")
	}); err != nil {
		return err
	}
	return kwok.waitReady(ctx, stepTimeout, "kwok /healthz", func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, "http://127.0.0.1:"+kwokPort+"/healthz", "ok")
	})
}

// A Node is a KWOK Node for the job flow: what Armada's executor sees of a
// worker machine.
type Node struct {
	Name string
	// Labels are added to kubernetes.io/hostname (Armada's default node id
	// label) and KWOKNodeLabel, for example the executor's pool label.
	Labels map[string]string
	// CPU, Memory and GPU (nvidia.com/gpu) are the Node's allocatable and
	// capacity; GPU may be empty.
	CPU, Memory, GPU string
	// Pods is the number of pods it takes; empty means 110.
	Pods string
	// Taints reserve the Node, for example for one executor's pool.
	Taints []corev1.Taint
}

// AddNodes creates Nodes for KWOK to run (Options.JobFlow) and waits
// until each is Ready without the not-ready taint, so kube-scheduler
// binds pods to it.
func (c *ControlPlane) AddNodes(ctx context.Context, nodes ...Node) error {
	for _, n := range nodes {
		if err := c.addNode(ctx, n); err != nil {
			return err
		}
	}
	p := c.procs[ProcKWOK]
	if p == nil {
		return errors.New("cannot add nodes: the control plane was started without Options.JobFlow, so no KWOK runs them")
	}
	for _, n := range nodes {
		if err := p.waitReady(ctx, stepTimeout, "node "+n.Name+" Ready and untainted", func(ctx context.Context) error {
			return c.nodeReady(ctx, n.Name)
		}); err != nil {
			return err
		}
	}
	return nil
}

func (c *ControlPlane) addNode(ctx context.Context, n Node) error {
	labels := map[string]string{corev1.LabelHostname: n.Name, KWOKNodeLabel: "fake", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	maps.Copy(labels, n.Labels)
	res := corev1.ResourceList{}
	pods := n.Pods
	if pods == "" {
		pods = "110"
	}
	// Ephemeral storage as a real node has: Armada gives every job a
	// default request for it (seen: jobs rejected with "insufficient
	// resources" on Nodes without it).
	quantities := map[corev1.ResourceName]string{
		corev1.ResourceCPU: n.CPU, corev1.ResourceMemory: n.Memory, corev1.ResourcePods: pods,
		corev1.ResourceEphemeralStorage: "100Gi", "nvidia.com/gpu": n.GPU,
	}
	for name, v := range quantities {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return errors.Wrapf(err, "cannot parse node %s %s", n.Name, name)
		}
		res[name] = q
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}},
		Spec:       corev1.NodeSpec{Taints: n.Taints},
	}
	if err := c.client.Create(ctx, node); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create node %s", n.Name)
	}
	// Status is a subresource: KWOK's node-initialize keeps what is set.
	// The Node may change meanwhile (node-lifecycle's taints): retry on
	// conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			return err
		}
		node.Status.Allocatable, node.Status.Capacity = res, res
		return c.client.Status().Update(ctx, node)
	})
	return errors.Wrapf(err, "cannot set node %s capacity", n.Name)
}

// nodeReady returns nil once a Node is Ready and has no not-ready taint.
func (c *ControlPlane) nodeReady(ctx context.Context, name string) error {
	n := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return err
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return errors.Errorf("tainted %s", t.Key)
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return errors.New("not Ready")
}
