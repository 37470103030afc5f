package install

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/xpkg"
)

const (
	pkgV1     = "pkg.crossplane.io/v1"
	xrdName   = "xarmadas.platform.armadaproject.io"
	extV1     = "apiextensions.crossplane.io/v1"
	testOwner = client.FieldOwner("armada-install-test")
)

// TestInstall pushes the packages to a local registry and installs
// configuration-armada on the local control plane the way a user installs
// it on a cluster: one Configuration object, with Crossplane's package
// manager resolving function-armada and provider-kubernetes from the
// registry. ImageConfigs rewrite the packages' real paths to the local
// registry, so the Configuration is the one that would be published.
func TestInstall(t *testing.T) {
	start := time.Now()
	cliPath := cli(t)
	res := packages(t)
	host := startRegistry(t)
	for _, b := range res.Packages {
		push(t, cliPath, host, b)
	}
	pk := xpkg.Built{Name: "provider-kubernetes", Files: map[string]string{"": mirrorProviderKubernetes(t, cliPath)}}
	if err := xpkg.Push(t.Context(), cliPath, t.TempDir(), pk, local(host, providerKubernetesRepo+":"+controlplane.ProviderKubernetesVersion)); err != nil {
		t.Fatal(err)
	}
	t.Logf("packages built and pushed to %s in %.1fs", host, time.Since(start).Seconds())

	// No provider-kubernetes, function or XRD installed directly: the
	// Configuration package must bring them.
	cp := controlplane.StartForTest(t, controlplane.Options{SkipProviderKubernetes: true, SkipFunction: true, SkipPackage: true})
	kube := cp.Client()
	cfg := lookup(t, res, "configuration-armada")
	objs := []*unstructured.Unstructured{
		// What Crossplane's Helm chart and `crossplane core init` create on
		// a real install: Crossplane's service account (the package runtime
		// copies its image pull secrets) and the runtime settings every
		// Provider and Function revision uses.
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": "crossplane", "namespace": controlplane.CrossplaneNamespace},
		}},
		{Object: map[string]any{
			"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
			"metadata": map[string]any{"name": "default"},
		}},
		imageConfig("armadaproject-local", xpkg.DefaultRegistry+"/", host),
		imageConfig("crossplane-contrib-local", "xpkg.crossplane.io/crossplane-contrib/", host),
		{Object: map[string]any{
			"apiVersion": pkgV1, "kind": "Configuration",
			"metadata": map[string]any{"name": "configuration-armada"},
			"spec":     map[string]any{"package": cfg.Ref},
		}},
	}
	for _, o := range objs {
		if err := kube.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o), testOwner, client.ForceOwnership); err != nil {
			t.Fatalf("cannot apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	fnName, err := xpkg.PackageName(xpkg.DefaultRegistry + "/function-armada")
	if err != nil {
		t.Fatal(err)
	}
	pkName, err := xpkg.PackageName(providerKubernetesRepo)
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		apiVersion, kind, name string
		// conditions every one of which must hold.
		conditions map[string]string
		// pkg is the package a package object must install.
		pkg string
	}
	// The runtime Deployments Crossplane creates for the Function and the
	// Provider never get pods: there is no kubelet here. So their
	// RuntimeHealthy conditions, and the Healthy conditions of the Function
	// and Provider that sum them up, cannot become True (see README,
	// Install). Everything the package manager does itself can.
	want := []object{
		{apiVersion: pkgV1, kind: "Configuration", name: "configuration-armada", pkg: cfg.Ref,
			conditions: map[string]string{"Installed": "True (ActivePackageRevision)", "Healthy": "True (HealthyPackageRevision)"}},
		{apiVersion: pkgV1, kind: "Function", name: fnName, pkg: xpkg.DefaultRegistry + "/function-armada:" + version,
			conditions: map[string]string{"Installed": "True (ActivePackageRevision)"}},
		{apiVersion: pkgV1, kind: "Provider", name: pkName, pkg: providerKubernetesRepo + ":" + controlplane.ProviderKubernetesVersion,
			conditions: map[string]string{"Installed": "True (ActivePackageRevision)"}},
		{apiVersion: extV1, kind: "CompositeResourceDefinition", name: xrdName,
			conditions: map[string]string{"Established": "True (WatchingCompositeResource)", "Offered": "True (WatchingCompositeResourceClaim)"}},
		{apiVersion: extV1, kind: "Composition", name: xrdName},
	}
	for _, w := range want {
		waitFor(t, w.kind+" "+w.name, func() (bool, string) {
			u, ok := get(t.Context(), kube, w.apiVersion, w.kind, w.name)
			if !ok {
				return false, w.kind + " " + w.name + " does not exist\n" + summary(t, kube)
			}
			got := conditions(u)
			for typ, s := range w.conditions {
				if got[typ] != s {
					return false, w.kind + " " + w.name + ":\n" + messages(u) + summary(t, kube)
				}
			}
			return true, ""
		})
		if w.pkg == "" {
			continue
		}
		u, _ := get(t.Context(), kube, w.apiVersion, w.kind, w.name)
		p, _, _ := unstructured.NestedString(u.Object, "spec", "package")
		if diff := cmp.Diff(w.pkg, p); diff != "" {
			t.Errorf("%s %s spec.package: -want, +got:\n%s", w.kind, w.name, diff)
		}
	}
	t.Logf("installed in %.1fs (%.1fs since the test started)", time.Since(start).Seconds(), time.Since(start).Seconds())
	t.Logf("state:\n%s", summary(t, kube))
}

// summary lists every package and revision with its conditions.
func summary(t *testing.T, kube client.Client) string {
	t.Helper()
	var b []byte
	for _, kind := range []string{"Configuration", "ConfigurationRevision", "Function", "FunctionRevision", "Provider", "ProviderRevision"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(pkgV1)
		l.SetKind(kind + "List")
		if err := kube.List(t.Context(), l); err != nil {
			b = append(b, []byte(kind+": "+err.Error()+"\n")...)
			continue
		}
		for i := range l.Items {
			b = append(b, []byte(kind+" "+l.Items[i].GetName()+"\n"+messages(&l.Items[i]))...)
		}
	}
	return string(b)
}
