package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// policies are the platform's tenancy policies every example renders with.
const policies = "examples/tenancy-policy.yaml"

// targets are the other examples a team queue example requires: the file
// that holds its Armada.
var targets = map[string][]string{
	"examples/team-queue.yaml":       {"examples/production.yaml"},
	"examples/namespaced-queue.yaml": {"examples/namespaced.yaml"},
}

// notRendered are the example files that hold no claim or XR, and why.
var notRendered = map[string]string{
	"examples/tenancy-policy.yaml":          "the platform's ArmadaTenancyPolicies, which the others render with",
	"examples/tenant-role.yaml":             "a tenant's RBAC",
	"examples/provider/providerconfig.yaml": "provider-armada's ProviderConfig",
	"examples/provider/queue.yaml":          "a provider-armada Queue",
}

// TestRenderExamples renders every file of examples/ through the command,
// under the example tenancy policies, and checks it prints each claim or
// XR the file holds; a file without one must be in notRendered, and the
// command refuses it.
func TestRenderExamples(t *testing.T) {
	t.Chdir("../../../..")
	var paths []string
	for _, glob := range []string{"examples/*.yaml", "examples/*/*.yaml"} {
		p, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p...)
	}
	if len(paths) < 10 {
		t.Fatalf("found %d example files: the globs are broken", len(paths))
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(path, "examples/"), ".yaml"), func(t *testing.T) {
			docs, err := manifest.ReadDocs(path)
			if err != nil {
				t.Fatal(err)
			}
			xrs, err := xprender.XRs(docs)
			if err != nil {
				t.Fatal(err)
			}
			opt := options{example: path, root: ".", required: append([]string{policies}, targets[path]...)}
			var out bytes.Buffer
			err = run(t.Context(), &out, opt)
			if why, ok := notRendered[path]; ok {
				if len(xrs) != 0 || err == nil || !strings.Contains(err.Error(), "holds no ArmadaClaim") {
					t.Errorf("%s (%s): want a refusal naming what the file lacks; got %d XRs and error %v", path, why, len(xrs), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if len(xrs) == 0 {
				t.Fatalf("%s holds no claim or XR: render it, or list it in notRendered", path)
			}
			for _, xr := range xrs {
				header := claimKind(xr) + " " + name(xr) + " (" + path + ")"
				if !strings.Contains(out.String(), header) {
					t.Errorf("%s: output does not render %q:\n%s", path, header, out.String())
				}
			}
			if strings.Count(out.String(), "\nClaim status:") != len(xrs) {
				t.Errorf("%s: want %d claim statuses in the output:\n%s", path, len(xrs), out.String())
			}
		})
	}
}

// TestRenderRefusalSaysHowToPassPolicies renders an example the built-in
// policy refuses, without policies: the error names the flag that passes
// them.
func TestRenderRefusalSaysHowToPassPolicies(t *testing.T) {
	t.Chdir("../../../..")
	cases := map[string]struct {
		reason   string
		opt      options
		wantHint string
	}{
		"NoPolicies": {
			reason:   "Worker clusters are refused by the built-in policy; the error says how to pass the platform's.",
			opt:      options{example: "examples/multi-cluster.yaml", root: "."},
			wantHint: "pass the platform's policies with -required-resources FILE",
		},
		"NoTargetArmada": {
			reason:   "A team queue's Armada must be passed; the error says how.",
			opt:      options{example: "examples/team-queue.yaml", root: ".", required: []string{policies}},
			wantHint: "the team queue's Armada is required: pass the file that holds its claim or XR with -required-resources FILE",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(t.Context(), &bytes.Buffer{}, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.wantHint) {
				t.Errorf("%s\nrun(%s): got error %v, want one containing %q", tc.reason, tc.opt.example, err, tc.wantHint)
			}
		})
	}
}
