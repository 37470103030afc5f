package install

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
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
	pushMirrors(t, cliPath, host)
	t.Logf("packages built and pushed to %s in %.1fs", host, time.Since(start).Seconds())

	// No provider-kubernetes, function or XRD installed directly: the
	// Configuration package must bring them.
	cp := controlplane.StartForTest(t, controlplane.Options{SkipProviderKubernetes: true, SkipFunction: true, SkipPackage: true})
	kube := cp.Client()
	cfg := lookup(t, res, "configuration-armada")
	// What Crossplane's Helm chart creates on a real install, then the
	// package's sources and the Configuration.
	objs := append(controlplane.ChartDefaults(),
		imageConfig("armadaproject-local", xpkg.DefaultRegistry+"/", host),
		imageConfig("crossplane-contrib-local", "xpkg.crossplane.io/crossplane-contrib/", host),
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": pkgV1, "kind": "Configuration",
			"metadata": map[string]any{"name": "configuration-armada"},
			"spec":     map[string]any{"package": cfg.Ref},
		}},
	)
	for _, o := range objs {
		if err := kube.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o), testOwner, client.ForceOwnership); err != nil {
			t.Fatalf("cannot apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	active := "True (ActivePackageRevision)"
	healthy := "True (HealthyPackageRevision)"
	unhealthy := "False (UnhealthyPackageRevision)"
	// noPods is why the runtime of a Function or Provider never becomes
	// healthy here: Crossplane creates its Deployment, but no deployment
	// controller or kubelet runs, so it never reports Available.
	noPods := `deployment has no condition of type "Available"`
	type object struct {
		apiVersion, kind, name string
		// revisionOf names the package whose only revision this is.
		revisionOf string
		// conditions are all of the object's conditions, as Type:
		// "Status (Reason)"; messages are substrings of some of them.
		conditions, messages map[string]string
		// pkg is the package a package object must install.
		pkg string
	}
	// Everything the package manager does itself becomes True; only the
	// runtimes' health (RuntimeHealthy, and the Healthy of the Function and
	// Provider that sums it up) stays False, for want of pods.
	deps := dependsOn(t, cfg)
	want := make([]object, 0, 4+2*len(deps))
	want = append(want,
		object{
			apiVersion: pkgV1, kind: "Configuration", name: "configuration-armada", pkg: cfg.Ref,
			conditions: map[string]string{"Installed": active, "Healthy": healthy},
		},
		object{
			apiVersion: pkgV1, kind: "ConfigurationRevision", revisionOf: "configuration-armada",
			conditions: map[string]string{"RevisionHealthy": healthy},
		},
	)
	// Every dependency the built Configuration declares (TestPackageContents
	// checks which), installed at its pinned version and running its
	// package's image from the local registry.
	wantImages := make([]string, 0, len(deps))
	for _, d := range deps {
		name, err := xpkg.PackageName(d.pkg)
		if err != nil {
			t.Fatal(err)
		}
		ref := d.pkg + ":" + d.version
		wantImages = append(wantImages, local(host, ref))
		want = append(want, object{
			apiVersion: pkgV1, kind: d.kind, name: name, pkg: ref,
			conditions: map[string]string{"Installed": active, "Healthy": unhealthy}, messages: map[string]string{"Healthy": noPods},
		}, object{
			apiVersion: pkgV1, kind: d.kind + "Revision", revisionOf: name,
			conditions: map[string]string{"RevisionHealthy": healthy, "RuntimeHealthy": unhealthy}, messages: map[string]string{"RuntimeHealthy": noPods},
		})
	}
	// Every XRD Established, and Offered where it has claims (the v2 XRDs
	// of the namespaced XRs have none), with its Composition.
	for _, x := range []struct {
		name    string
		claimed bool
	}{{xrdName, true}, {"xarmadaqueues.platform.armadaproject.io", true}, {"armadas.platform.armadaproject.io", false}, {"armadaqueues.platform.armadaproject.io", false}} {
		conds := map[string]string{"Established": "True (WatchingCompositeResource)"}
		if x.claimed {
			conds["Offered"] = "True (WatchingCompositeResourceClaim)"
		}
		want = append(want, object{apiVersion: extV1, kind: "CompositeResourceDefinition", name: x.name, conditions: conds},
			object{apiVersion: extV1, kind: "Composition", name: x.name, conditions: map[string]string{}})
	}
	for _, w := range want {
		what := w.kind + " " + w.name + w.revisionOf
		waitFor(t, what, func() (bool, string) {
			u, err := find(t.Context(), kube, w.apiVersion, w.kind, w.name, w.revisionOf)
			if err != nil {
				return false, err.Error() + "\n" + summary(t, kube)
			}
			if diff := cmp.Diff(w.conditions, conditions(u)); diff != "" {
				return false, what + " conditions: -want, +got:\n" + diff + messages(u) + summary(t, kube)
			}
			for typ, m := range w.messages {
				if got := message(u, typ); !strings.Contains(got, m) {
					return false, fmt.Sprintf("%s %s message: want it to contain %q, got %q", what, typ, m, got)
				}
			}
			if w.pkg == "" {
				return true, ""
			}
			p, _, _ := unstructured.NestedString(u.Object, "spec", "package")
			return p == w.pkg, fmt.Sprintf("%s spec.package: want %s, got %s", what, w.pkg, p)
		})
	}
	// The runtimes Crossplane deploys run the packages' embedded images,
	// pulled from where the ImageConfigs point.
	runtimes := &appsv1.DeploymentList{}
	if err := kube.List(t.Context(), runtimes, client.InNamespace(controlplane.CrossplaneNamespace)); err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, d := range runtimes.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	sort.Strings(images)
	sort.Strings(wantImages)
	if diff := cmp.Diff(wantImages, images); diff != "" {
		t.Errorf("runtime Deployments' images: -want, +got:\n%s", diff)
	}
	t.Logf("installed; %.1fs since the test started", time.Since(start).Seconds())
	t.Logf("state:\n%s", summary(t, kube))

	upgrade(t, kube, cliPath, host, cfg)
	uninstall(t, kube, deps)
}

// upgradeVersion is the version the upgrade step moves to.
const upgradeVersion = "v0.0.2-test"

// upgrade publishes the packages at upgradeVersion and follows the
// docs/guides/install.md's upgrade: point the Configuration at the new version, which
// Crossplane refuses while the Function dependency is older (it does not
// upgrade dependencies by default), then move the Function too.
func upgrade(t *testing.T, kube client.Client, cliPath, host string, cfg xpkg.Built) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	res, err := xpkg.Build(t.Context(), xpkg.Options{RepoRoot: root, OutDir: t.TempDir(), CLI: cliPath, Version: upgradeVersion})
	if err != nil {
		t.Fatalf("cannot build packages at %s: %v", upgradeVersion, err)
	}
	for _, b := range res.Packages {
		push(t, cliPath, host, b)
	}
	fnName, err := xpkg.PackageName(xpkg.DefaultRegistry + "/function-armada")
	if err != nil {
		t.Fatal(err)
	}
	setPackage(t, kube, "Configuration", cfg.Name, lookup(t, res, cfg.Name).Ref)
	stale := "is incompatible with constraint " + upgradeVersion
	waitFor(t, "the Configuration to refuse the older Function", func() (bool, string) {
		u, _ := testutil.Lookup(t.Context(), kube, pkgV1, "Configuration", "", cfg.Name)
		return strings.Contains(message(u, "Healthy"), stale), messages(u)
	})
	setPackage(t, kube, "Function", fnName, lookup(t, res, "function-armada").Ref)
	if b, ok := res.Lookup("provider-armada"); ok {
		pName, err := xpkg.PackageName(xpkg.DefaultRegistry + "/provider-armada")
		if err != nil {
			t.Fatal(err)
		}
		setPackage(t, kube, "Provider", pName, b.Ref)
	}
	waitFor(t, "the upgraded Configuration to be Healthy", func() (bool, string) {
		u, _ := testutil.Lookup(t.Context(), kube, pkgV1, "Configuration", "", cfg.Name)
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(pkgV1)
		l.SetKind("ConfigurationRevisionList")
		if err := kube.List(t.Context(), l, client.MatchingLabels{"pkg.crossplane.io/package": cfg.Name}); err != nil {
			return false, err.Error()
		}
		for _, r := range l.Items {
			img, _, _ := unstructured.NestedString(r.Object, "spec", "image")
			state, _, _ := unstructured.NestedString(r.Object, "spec", "desiredState")
			if state == "Active" && strings.HasSuffix(img, ":"+upgradeVersion) {
				return conditions(u)["Healthy"] == "True (HealthyPackageRevision)", messages(u)
			}
		}
		return false, "no active revision at " + upgradeVersion + "\n" + summary(t, kube)
	})
}

// setPackage points a package object at ref, as `kubectl patch` does.
func setPackage(t *testing.T, kube client.Client, kind, name, ref string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(pkgV1)
	u.SetKind(kind)
	u.SetName(name)
	patch := []byte(`{"spec":{"package":"` + ref + `"}}`)
	if err := kube.Patch(t.Context(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("cannot set %s %s spec.package to %s: %v", kind, name, ref, err)
	}
}

// uninstall follows docs/guides/install.md: deleting the Configuration removes the
// XRD and Composition, and deleting the dependencies leaves no package.
func uninstall(t *testing.T, kube client.Client, deps []dependency) {
	t.Helper()
	del := func(apiVersion, kind, name string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		if err := kube.Delete(t.Context(), u); err != nil {
			t.Fatalf("cannot delete %s %s: %v", kind, name, err)
		}
	}
	del(pkgV1, "Configuration", "configuration-armada")
	for _, kind := range []string{"CompositeResourceDefinition", "Composition"} {
		waitFor(t, kind+" "+xrdName+" to be deleted", func() (bool, string) {
			u, err := testutil.Lookup(t.Context(), kube, extV1, kind, "", xrdName)
			if err != nil {
				return false, err.Error()
			}
			return u == nil, "still exists"
		})
	}
	for _, d := range deps {
		name, err := xpkg.PackageName(d.pkg)
		if err != nil {
			t.Fatal(err)
		}
		del(pkgV1, d.kind, name)
	}
	waitFor(t, "every package and revision to be deleted", func() (bool, string) {
		s := summary(t, kube)
		return s == "", s
	})
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

// find returns the named cluster-scoped object or, with revisionOf, the
// only revision of that package.
func find(ctx context.Context, kube client.Client, apiVersion, kind, name, revisionOf string) (*unstructured.Unstructured, error) {
	if revisionOf == "" {
		u, err := testutil.Lookup(ctx, kube, apiVersion, kind, "", name)
		if err == nil && u == nil {
			err = errors.Errorf("%s %s does not exist", kind, name)
		}
		return u, err
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiVersion)
	l.SetKind(kind + "List")
	if err := kube.List(ctx, l, client.MatchingLabels{"pkg.crossplane.io/package": revisionOf}); err != nil {
		return nil, err
	}
	if len(l.Items) != 1 {
		return nil, errors.Errorf("want one %s of %s, got %d", kind, revisionOf, len(l.Items))
	}
	return &l.Items[0], nil
}

// dependency is one entry of a Configuration's spec.dependsOn.
type dependency struct{ kind, pkg, version string }

// dependsOn returns the dependencies the built Configuration declares.
func dependsOn(t *testing.T, cfg xpkg.Built) []dependency {
	t.Helper()
	var out []dependency
	for _, o := range packageObjects(t, readImage(t, hostFile(t, cfg))) {
		if o.GetKind() != "Configuration" {
			continue
		}
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			m, _ := d.(map[string]any)
			out = append(out, dependency{kind: fmt.Sprint(m["kind"]), pkg: fmt.Sprint(m["package"]), version: fmt.Sprint(m["version"])})
		}
	}
	if len(out) == 0 {
		t.Fatal("the built Configuration declares no dependencies")
	}
	return out
}
