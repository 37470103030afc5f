package controlplane

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// TestToolModulesShareVersions: the modules built in one run require every
// module they share at one version, but for the few listed with a reason,
// so that the Go build cache compiles the Kubernetes libraries, gRPC,
// protobuf and the rest once for the project's tests, Kubernetes'
// kube-apiserver, kube-controller-manager and kube-scheduler, Crossplane
// core and CLI, provider-kubernetes, provider-sql and KWOK: the cache keys a
// compiled package by its source, its flags and its dependencies' versions.
// Raising a pin in one of them means raising it in the others (`go get
// module@version` in each); Kubernetes' own version sets the Kubernetes
// libraries' (tools/kubernetes replaces its staging modules with theirs).
func TestToolModulesShareVersions(t *testing.T) {
	cases := map[string]struct {
		module, with string
		// differ are modules module needs at another version, and why.
		differ map[string]string
	}{
		"CrossplaneWithProject": {
			module: "tools/crossplane", with: ".",
			differ: map[string]string{
				"github.com/go-json-experiment/json": "the project's browser test's chromedp v0.16.0 (cdproto) needs a newer one; raising Crossplane's would rebuild its binaries for one small package",
			},
		},
		"KubernetesWithProject": {
			module: "tools/kubernetes", with: ".",
		},
		"ProviderKubernetesWithProject": {
			module: "tools/provider-kubernetes", with: ".",
		},
		"KWOKWithProject": {
			module: "tools/kwok", with: ".",
		},
		"ProviderSQLWithCrossplane": {
			module: "tools/provider-sql", with: "tools/crossplane",
			differ: map[string]string{
				"github.com/crossplane/crossplane-runtime/v2": "provider-sql v0.16.0 imports apis/common, which crossplane-runtime v2.4.0 no longer has",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, with := requires(t, tc.module), requires(t, tc.with)
			for m, v := range got {
				want, shared := with[m]
				if !shared || v == want {
					continue
				}
				if _, ok := tc.differ[m]; !ok {
					t.Errorf("%s requires %s %s, %s %s: require %s in both, or list why not", tc.module, m, v, tc.with, want, want)
				}
			}
			for m := range tc.differ {
				if _, ok := got[m]; !ok {
					t.Errorf("%s is listed as differing, but %s does not require it", m, tc.module)
				}
			}
		})
	}
}

// requires is what the go.mod in dir (relative to the repository root)
// requires: module path to version, the version it is replaced with where
// a replace names one (tools/kubernetes' staging modules).
func requires(t *testing.T, dir string) map[string]string {
	t.Helper()
	path := filepath.Join("..", "..", "..", dir, "go.mod")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if _, ok := out[r.Old.Path]; ok && r.New.Version != "" {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out
}

// TestPinsMatchToolModules: each tool's version is written once, in the
// wrapper module under tools/ that builds it (the Makefile and the build
// scripts read it from there); the Go constants that name a binary by its
// version must say the same, or the tests would look for a binary no
// build makes.
func TestPinsMatchToolModules(t *testing.T) {
	pinned := func(name string) string {
		p, ok := thirdparty.Get(name)
		if !ok {
			return "not in thirdparty.Pinned"
		}
		return p.Version
	}
	cases := map[string]struct {
		got, dir, module string
	}{
		"EtcdVersion":                  {got: EtcdVersion, dir: "tools/etcd", module: "go.etcd.io/etcd/server/v3"},
		"KubernetesVersion":            {got: KubernetesVersion, dir: "tools/kubernetes", module: "k8s.io/kubernetes"},
		"KWOKVersion":                  {got: KWOKVersion, dir: "tools/kwok", module: "sigs.k8s.io/kwok"},
		"CrossplaneVersion":            {got: CrossplaneVersion, dir: "tools/crossplane", module: "github.com/crossplane/crossplane/v2"},
		"xprender.CoreVersion":         {got: xprender.CoreVersion, dir: "tools/crossplane", module: "github.com/crossplane/crossplane/v2"},
		"xprender.CLIVersion":          {got: xprender.CLIVersion, dir: "tools/crossplane", module: "github.com/crossplane/cli/v2"},
		"ProviderKubernetesVersion":    {got: ProviderKubernetesVersion, dir: "tools/provider-kubernetes", module: "github.com/crossplane-contrib/provider-kubernetes"},
		"thirdparty.Pinned/kubernetes": {got: pinned("provider-kubernetes"), dir: "tools/provider-kubernetes", module: "github.com/crossplane-contrib/provider-kubernetes"},
		"thirdparty.Pinned/sql":        {got: pinned("provider-sql"), dir: "tools/provider-sql", module: "github.com/crossplane-contrib/provider-sql"},
		"ProviderSQLVersion":           {got: ProviderSQLVersion, dir: "tools/provider-sql", module: "github.com/crossplane-contrib/provider-sql"},
		"testenv.VersityGWVersion":     {got: testenv.VersityGWVersion, dir: "tools/versitygw", module: "github.com/versity/versitygw"},
		"testenv.OIDCVersion":          {got: testenv.OIDCVersion, dir: "tools/oidc", module: "github.com/zitadel/oidc/v3"},
		"armada.TLSProxyVersion":       {got: armada.TLSProxyVersion, dir: "tools/ghostunnel", module: "github.com/ghostunnel/ghostunnel"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, ok := requires(t, tc.dir)[tc.module]
			if !ok {
				t.Fatalf("%s/go.mod requires no %s", tc.dir, tc.module)
			}
			if diff := cmp.Diff(want, tc.got); diff != "" {
				t.Errorf("%s names %s, %s/go.mod pins %s: change the constant with the pin (-want +got):\n%s", name, tc.got, tc.dir, want, diff)
			}
		})
	}
}
