package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

// CrossplaneNamespace is the namespace Crossplane runs packages in; the
// control plane creates it.
const CrossplaneNamespace = "crossplane-system"

// ChartDefaults are what Crossplane's Helm chart (and `crossplane core
// init`) create on a real install and Start does not: Crossplane's service
// account, whose image pull secrets package runtimes copy, and the default
// DeploymentRuntimeConfig every Provider and Function revision uses.
func ChartDefaults() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": "crossplane", "namespace": CrossplaneNamespace},
		}},
		{Object: map[string]any{
			"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
			"metadata": map[string]any{"name": "default"},
		}},
	}
}

// Files in Options.PackageDir the control plane installs.
var packageFiles = []string{
	"definition.yaml", "composition.yaml", "queue-definition.yaml", "queue-composition.yaml",
	"namespaced-definition.yaml", "namespaced-composition.yaml", "namespaced-queue-definition.yaml", "namespaced-queue-composition.yaml",
}

// applyCRDs creates the Crossplane namespace and applies Crossplane's,
// (unless skipped) provider-kubernetes' and the backing services' CRDs,
// plus ExtraCRDDirs, waiting until all are Established. KubernetesOnly
// applies only ExtraCRDDirs.
func (c *ControlPlane) applyCRDs(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CrossplaneNamespace}}
	if err := c.client.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create namespace "+CrossplaneNamespace)
	}
	var crds []*unstructured.Unstructured
	if !c.opts.KubernetesOnly {
		xp, err := manifest.ReadDir(c.opts.CrossplaneCRDDir)
		if err != nil {
			return err
		}
		crds = append(crds, xp...)
	}
	for _, dir := range c.opts.ExtraCRDDirs {
		extra, err := manifest.ReadDir(dir)
		if err != nil {
			return err
		}
		crds = append(crds, extra...)
	}
	if !c.opts.SkipProviderKubernetes && !c.opts.KubernetesOnly {
		pcrds, err := c.providerCRDs()
		if err != nil {
			return err
		}
		crds = append(crds, pcrds...)
	}
	if !c.opts.KubernetesOnly {
		// provider-armada's CRDs: the function composes its Queues and
		// ProviderConfig.
		own, err := manifest.ReadDir(filepath.Join(c.opts.RepoRoot, "package", "provider", "crds"))
		if err != nil {
			return err
		}
		crds = append(crds, own...)
		// The platform's ArmadaTenancyPolicy, which the function reads.
		tenancy, err := manifest.ReadDir(filepath.Join(c.opts.RepoRoot, "cluster", "tenancy"))
		if err != nil {
			return err
		}
		crds = append(crds, tenancy...)
	}
	if !c.opts.SkipBackingServiceCRDs && !c.opts.KubernetesOnly {
		bcrds, err := backingServiceCRDs(ctx)
		if err != nil {
			return err
		}
		crds = append(crds, bcrds...)
	}
	if err := c.apply(ctx, crds...); err != nil {
		return err
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	if err := c.waitCRDsEstablished(ctx, names...); err != nil {
		return err
	}
	if c.opts.KubernetesOnly {
		return nil
	}
	// The platform's admission policies (cluster/admission), long before
	// the first claim.
	admission, err := manifest.ReadDir(filepath.Join(c.opts.RepoRoot, "cluster", "admission"))
	if err != nil {
		return err
	}
	return c.apply(ctx, admission...)
}

// crossplaneArgs returns Crossplane core's command line.
func (c *ControlPlane) crossplaneArgs() []string {
	var args []string
	if c.opts.Debug {
		args = append(args, "--debug")
	}
	return append(args, "core", "start",
		"--namespace="+CrossplaneNamespace,
		// Webhooks need a serving certificate and webhook configurations
		// pointing at a Service; without them Usage protection is off.
		"--enable-webhooks=false",
		// Crossplane's client certificate for dialling functions.
		"--tls-client-certs-dir="+c.tlsDirs.crossplaneClient,
		"--xpkg-cache-dir="+filepath.Join(c.dir, "xpkg-cache"),
		"--xfn-cache-dir="+filepath.Join(c.dir, "xfn-cache"),
		"--metrics-port="+strconv.Itoa(c.ports.crossplaneMetrics),
		"--health-probe-port="+strconv.Itoa(c.ports.crossplaneHealth),
		"--webhook-port="+strconv.Itoa(c.ports.crossplaneWebhook),
		// Crossplane's XR circuit breaker (burst 100, 1/s) opens when the
		// harness marks a claim's workloads ready in a burst of status
		// writes a kubelet would spread out; while it is open, a spec
		// change waits for the next poll (60 s). A larger burst keeps the
		// breaker for real loops without delaying every refusal a minute.
		"--circuit-breaker-burst=1000",
	)
}

// startCrossplaneFirst registers and starts Crossplane core.
func (c *ControlPlane) startCrossplaneFirst(ctx context.Context) error {
	// The package manager caches package contents here and fails to unpack
	// any package ("read/write on closed pipe") if the directory is missing.
	if err := os.MkdirAll(filepath.Join(c.dir, "xpkg-cache"), 0o700); err != nil {
		return errors.Wrap(err, "cannot create package cache directory")
	}
	c.newProcess(ProcCrossplane, c.opts.Crossplane, c.crossplaneArgs(), []string{"KUBECONFIG=" + c.CrossplaneKubeconfig()})
	return c.StartCrossplane(ctx)
}

// StartCrossplane starts Crossplane core again after StopCrossplane, with
// the same ports, and waits until it is ready.
func (c *ControlPlane) StartCrossplane(ctx context.Context) error {
	p := c.procs[ProcCrossplane]
	if err := p.start(); err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(c.ports.crossplaneHealth) + "/readyz"
	return p.waitReady(ctx, stepTimeout, "crossplane /readyz", func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, url, "ok")
	})
}

// StopCrossplane kills Crossplane core, for fault-injection tests. Restart
// it with StartCrossplane.
func (c *ControlPlane) StopCrossplane() error {
	return c.procs[ProcCrossplane].stop()
}

// installPackage applies PackageDir's XRD and Composition and waits
// until the XRD is Established and, if it has claim names, Offered with an
// Established claim CRD.
func (c *ControlPlane) installPackage(ctx context.Context) error {
	var objs []*unstructured.Unstructured
	for _, f := range packageFiles {
		o, err := manifest.ReadFile(filepath.Join(c.opts.PackageDir, f))
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	if err := c.apply(ctx, objs...); err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() != "CompositeResourceDefinition" {
			continue
		}
		if err := c.waitXRD(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// xrdTimeout bounds the wait for an XRD: Crossplane establishes one in about
// a second, so a longer wait means it keeps failing.
const xrdTimeout = time.Minute

// waitXRD waits until the XRD is Established (and Offered if it declares
// claim names) and its CRDs are Established. On failure the error holds the
// XRD's conditions and the Warning events Crossplane recorded for it, which
// say why, for example that the API server rejected the generated CRD.
func (c *ControlPlane) waitXRD(ctx context.Context, xrd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(xrd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(xrd.Object, "spec", "names", "plural")
	claim, hasClaim, _ := unstructured.NestedString(xrd.Object, "spec", "claimNames", "plural")
	want := []string{"Established"}
	crds := []string{plural + "." + group}
	if hasClaim {
		want = append(want, "Offered")
		crds = append(crds, claim+"."+group)
	}
	what := "XRD " + xrd.GetName() + " to be " + strings.Join(want, " and ")
	err := c.procs[ProcCrossplane].waitReady(ctx, xrdTimeout, what, func(ctx context.Context) error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(xrd.GroupVersionKind())
		if err := c.client.Get(ctx, types.NamespacedName{Name: xrd.GetName()}, u); err != nil {
			return errors.Wrap(err, "cannot get XRD")
		}
		for _, t := range want {
			if c, _ := manifest.ConditionOf(u, t); c.Status != "True" {
				return errors.Errorf("conditions %s", manifest.ConditionSummary(u))
			}
		}
		return nil
	})
	if err != nil {
		return errors.Errorf("%v\nwarning events of the XRD:\n%s", err, c.warningEvents(ctx, xrd.GetName()))
	}
	return c.waitCRDsEstablished(ctx, crds...)
}

// warningEvents returns the distinct messages of the Warning events about
// the cluster-scoped object name, one a line.
func (c *ControlPlane) warningEvents(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	events := &corev1.EventList{}
	if err := c.client.List(ctx, events); err != nil {
		return "(cannot list events: " + err.Error() + ")"
	}
	seen := map[string]bool{}
	var b strings.Builder
	for _, e := range events.Items {
		if e.InvolvedObject.Name != name || e.Type != corev1.EventTypeWarning || seen[e.Message] {
			continue
		}
		seen[e.Message] = true
		fmt.Fprintf(&b, "%s: %s\n", e.Reason, e.Message)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

// waitCRDsEstablished waits until every named CRD is Established.
func (c *ControlPlane) waitCRDsEstablished(ctx context.Context, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for _, name := range names {
		for {
			crd := &extv1.CustomResourceDefinition{}
			err := c.client.Get(ctx, types.NamespacedName{Name: name}, crd)
			if err == nil && crdEstablished(crd) {
				break
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = errors.New("not Established")
				}
				return errors.Wrapf(err, "cannot wait for CRD %s", name)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func crdEstablished(crd *extv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == extv1.Established && cond.Status == extv1.ConditionTrue {
			return true
		}
	}
	return false
}
