package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

// TestStart brings a whole control plane up, uses each of its parts once and
// checks Stop leaves no process behind.
func TestStart(t *testing.T) {
	testStart(t, Options{})
}

// testStart runs TestStart with o, whose DataDir it sets.
func testStart(t *testing.T, o Options) {
	t.Helper()
	dir := t.TempDir()
	o.DataDir = dir
	c := StartForTest(t, o)
	for _, s := range c.Steps() {
		t.Logf("step %-32s %6.1fs", s.Name, s.Duration.Seconds())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cl := c.Client()

	// The claim CRD exists and is established: the XRD is Offered.
	xrd := &unstructured.Unstructured{}
	xrd.SetAPIVersion("apiextensions.crossplane.io/v1")
	xrd.SetKind("CompositeResourceDefinition")
	if err := cl.Get(ctx, types.NamespacedName{Name: "xarmadas.platform.armadaproject.io"}, xrd); err != nil {
		t.Fatalf("cannot get XRD: %v", err)
	}
	for _, cond := range []string{"Established", "Offered"} {
		if got, _ := manifest.ConditionOf(xrd, cond); got.Status != "True" {
			t.Errorf("XRD condition %s: got %q, want True", cond, got)
		}
	}
	claim := &extv1.CustomResourceDefinition{}
	if err := cl.Get(ctx, types.NamespacedName{Name: "armadaclaims.platform.armadaproject.io"}, claim); err != nil {
		t.Fatalf("cannot get claim CRD: %v", err)
	}

	// The API server stores ordinary objects.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatalf("cannot create namespace: %v", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "hello"},
		StringData: map[string]string{"greeting": "hello"},
	}
	if err := cl.Create(ctx, secret); err != nil {
		t.Fatalf("cannot create secret: %v", err)
	}

	// provider-kubernetes reconciles a namespaced Object into a ConfigMap,
	// with the default ClusterProviderConfig.
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
		"kind":       "Object",
		"metadata":   map[string]any{"namespace": ns.Name, "name": "wrapped"},
		"spec": map[string]any{"forProvider": map[string]any{"manifest": map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"namespace": ns.Name, "name": "wrapped"},
			"data":       map[string]any{"from": "provider-kubernetes"},
		}}},
	}}
	if err := cl.Create(ctx, obj); err != nil {
		t.Fatalf("cannot create Object: %v", err)
	}
	cm := &corev1.ConfigMap{}
	for {
		err := cl.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "wrapped"}, cm)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("provider-kubernetes did not create the ConfigMap: %v\n%s", err, c.LogTail(ProcProviderKubernetes, 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
	if got := cm.Data["from"]; got != "provider-kubernetes" {
		t.Errorf("ConfigMap data: got %q, want provider-kubernetes", got)
	}

	// Restarting the function and Crossplane keeps their endpoints.
	if err := c.StopFunction(); err != nil {
		t.Fatalf("cannot stop function: %v", err)
	}
	if err := c.StartFunction(ctx); err != nil {
		t.Fatalf("cannot restart function: %v", err)
	}
	if err := c.StopCrossplane(); err != nil {
		t.Fatalf("cannot stop Crossplane: %v", err)
	}
	if err := c.StartCrossplane(ctx); err != nil {
		t.Fatalf("cannot restart Crossplane: %v", err)
	}

	// Restore resumes a paused function and starts a stopped Crossplane
	// and function again; with both running it changes nothing.
	if err := c.PauseFunction(); err != nil {
		t.Fatalf("cannot pause function: %v", err)
	}
	if err := c.StopCrossplane(); err != nil {
		t.Fatalf("cannot stop Crossplane: %v", err)
	}
	waitState(t, c.procs[ProcFunction], "state T")
	if err := c.Restore(ctx); err != nil {
		t.Fatalf("cannot restore: %v", err)
	}
	waitState(t, c.procs[ProcFunction], "state S")
	waitState(t, c.procs[ProcCrossplane], "running")
	if err := c.StopFunction(); err != nil {
		t.Fatalf("cannot stop function: %v", err)
	}
	if err := c.Restore(ctx); err != nil {
		t.Fatalf("cannot restore: %v", err)
	}
	waitState(t, c.procs[ProcFunction], "running")
	if err := c.Restore(ctx); err != nil {
		t.Fatalf("cannot restore a running control plane: %v", err)
	}

	// Stop kills every process group and, with a caller's DataDir, keeps
	// the logs.
	groups := c.ProcessGroups()
	if len(groups) != 6 {
		t.Errorf("process count: got %d (%v), want 6", len(groups), groups)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("cannot stop: %v", err)
	}
	for name, pgids := range groups {
		for _, pgid := range pgids {
			if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process group %d of %s survived Stop (kill -0: %v)", pgid, name, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", ProcCrossplane+".log")); err != nil {
		t.Errorf("cannot find Crossplane log after Stop: %v", err)
	}
}

// TestStartMissingBinary checks a missing binary fails Start with the make
// target that builds it, and leaves nothing behind.
func TestStartMissingBinary(t *testing.T) {
	bin := t.TempDir()
	data := filepath.Join(t.TempDir(), "data")
	_, err := Start(t.Context(), Options{BinDir: bin, DataDir: data})
	if err == nil {
		t.Fatal("Start with an empty BinDir: got no error")
	}
	for _, want := range []string{"etcd " + EtcdVersion, filepath.Join(bin, "etcd-"+EtcdVersion), "make cluster-bins", "tools/etcd/build.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start created DataDir %s before failing (stat: %v)", data, err)
	}
}
