// Package xprender drives the real Crossplane CLI and core to render and
// validate XArmadas with function-armada served in-process. Tests, `make
// render` and `make run` use it.
package xprender

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// Tool versions the project pins (tools/crossplane/go.mod).
const (
	CLIVersion  = "v2.5.0"
	CoreVersion = "v2.4.0"
)

// FunctionName is function-armada's package name in the Composition.
const FunctionName = "function-armada"

// Tools are the Crossplane binaries.
type Tools struct {
	// CLI is the `crossplane` CLI; Core the Crossplane core binary that the
	// CLI runs `internal render` in.
	CLI, Core string
}

// FindTools locates the binaries from $CROSSPLANE_CLI and $CROSSPLANE_CORE,
// or the Makefile's tool cache. A missing binary is an error that says how
// to build it, never a reason to skip.
func FindTools() (Tools, error) {
	cli, err := FindCLI()
	if err != nil {
		return Tools{}, err
	}
	core, err := find("CROSSPLANE_CORE", "crossplane-core", CoreVersion)
	if err != nil {
		return Tools{}, err
	}
	return Tools{CLI: cli, Core: core}, nil
}

// FindCLI locates the `crossplane` CLI from $CROSSPLANE_CLI or the
// Makefile's tool cache, as FindTools does.
func FindCLI() (string, error) {
	return find("CROSSPLANE_CLI", "crossplane-cli", CLIVersion)
}

func find(env, name, version string) (string, error) {
	p, err := testutil.Tool(env, name, version)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		return "", errors.Errorf("cannot find %s: run `make tools` to build the pinned Crossplane CLI and core", p)
	}
	return p, nil
}

// Serve serves a function over insecure gRPC on a free loopback port. It
// returns the address and a stop function.
func Serve(ctx context.Context, fn fnv1.FunctionRunnerServiceServer) (string, func(), error) {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, errors.Wrap(err, "cannot listen on loopback")
	}
	srv := grpc.NewServer()
	fnv1.RegisterFunctionRunnerServiceServer(srv, fn)
	go func() { _ = srv.Serve(lis) }()
	return lis.Addr().String(), srv.Stop, nil
}

// ClaimToXR turns the first ArmadaClaim or ArmadaQueueClaim in docs into
// the composite resource Crossplane would create for it (see XRs); a
// namespaced Armada or ArmadaQueue has no claim: it is its own XR.
func ClaimToXR(docs []map[string]any) (map[string]any, error) {
	xrs, err := XRs(docs)
	if err != nil {
		return nil, err
	}
	if len(xrs) == 0 {
		return nil, errors.New("cannot find an ArmadaClaim, ArmadaQueueClaim, Armada or ArmadaQueue document")
	}
	return xrs[0], nil
}

// XRs are the composite resources of docs, in order: for each claim the XR
// Crossplane would create for it (same spec, the claim's name, and the
// claim labels), and each XR (XArmada, Armada, XArmadaQueue, ArmadaQueue)
// as it is. Other documents are left out.
func XRs(docs []map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, d := range docs {
		xr, ok, err := asXR(d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, xr)
		}
	}
	return out, nil
}

// asXR is d's composite resource, and whether d is a claim or an XR.
func asXR(d map[string]any) (map[string]any, bool, error) {
	kind, claimed := claimKinds[fmt.Sprint(d["kind"])]
	namespaced := NamespacedKinds[fmt.Sprint(d["kind"])]
	if clusterKinds[fmt.Sprint(d["kind"])] {
		return d, true, nil
	}
	if !claimed && !namespaced {
		return nil, false, nil
	}
	meta, _ := d["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if name == "" || ns == "" {
		return nil, false, errors.Errorf("cannot convert %s: it needs metadata.name and metadata.namespace", d["kind"])
	}
	if namespaced {
		return d, true, nil
	}
	return map[string]any{
		"apiVersion": d["apiVersion"],
		"kind":       kind,
		"metadata": map[string]any{
			"name": name,
			"labels": map[string]any{
				xcrd.LabelKeyClaimName:      name,
				xcrd.LabelKeyClaimNamespace: ns,
			},
		},
		"spec": d["spec"],
	}, true, nil
}

// PackageFiles are the Composition and XRD, under the repository root,
// that render an XR of the kind.
func PackageFiles(root, kind string) (composition, xrd string, err error) {
	prefix, ok := map[string]string{
		"XArmada": "", "Armada": "namespaced-", "XArmadaQueue": "queue-", "ArmadaQueue": "namespaced-queue-",
	}[kind]
	if !ok {
		return "", "", errors.Errorf("cannot render a %s: it is not a composite resource of this package", kind)
	}
	dir := filepath.Join(root, "package", "xarmada")
	return filepath.Join(dir, prefix+"composition.yaml"), filepath.Join(dir, prefix+"definition.yaml"), nil
}

// NamespacedKinds are the namespaced (Crossplane v2) XR kinds.
var NamespacedKinds = map[string]bool{"Armada": true, "ArmadaQueue": true}

// clusterKinds are the cluster-scoped XR kinds, which claims become.
var clusterKinds = map[string]bool{"XArmada": true, "XArmadaQueue": true}

// claimKinds maps each claim kind to its composite kind.
var claimKinds = map[string]string{"ArmadaClaim": "XArmada", "ArmadaQueueClaim": "XArmadaQueue"}

// RenderOptions are the inputs of one render.
type RenderOptions struct {
	// XR is the composite resource to render.
	XR map[string]any
	// Composition and XRD are paths to the generated package files.
	Composition, XRD string
	// FunctionAddress is where function-armada is served.
	FunctionAddress string
	// Observed, if set, is a directory of observed composed resources.
	Observed string
	// RequiredResources, if set, is a YAML file of the resources the
	// function may require, such as a team queue's target XArmada.
	RequiredResources string
}

// Render runs `crossplane composition render` with the function served at
// opt.FunctionAddress, returning its YAML output.
func (t Tools) Render(ctx context.Context, opt RenderOptions) ([]byte, error) {
	dir, err := os.MkdirTemp("", "xprender-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create temporary directory")
	}
	defer os.RemoveAll(dir) //nolint:errcheck // Best effort cleanup of a temp dir.
	xr, err := yaml.Marshal(opt.XR)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode XR")
	}
	xrPath, fnPath := filepath.Join(dir, "xr.yaml"), filepath.Join(dir, "functions.yaml")
	if err := os.WriteFile(xrPath, xr, 0o600); err != nil {
		return nil, errors.Wrap(err, "cannot write XR")
	}
	if err := os.WriteFile(fnPath, []byte(functions(opt.FunctionAddress)), 0o600); err != nil {
		return nil, errors.Wrap(err, "cannot write functions")
	}
	args := []string{
		"composition", "render", xrPath, opt.Composition, fnPath,
		"--crossplane-binary=" + t.Core, "--xrd=" + opt.XRD,
		// Function results are left out: render lists Crossplane's own
		// readiness results in map order, which is not stable. Our
		// conditions are on the XR.
		"--include-full-xr",
	}
	if opt.Observed != "" {
		args = append(args, "--observed-resources="+opt.Observed)
	}
	if opt.RequiredResources != "" {
		args = append(args, "--required-resources="+opt.RequiredResources)
	}
	return run(ctx, t.CLI, args...)
}

// Validate runs `crossplane resource validate` offline: the extensions
// (XRDs, CRDs) against the resources (a file, or "-" with stdin).
func (t Tools) Validate(ctx context.Context, extensions []string, resources string, stdin []byte) ([]byte, error) {
	cache, err := os.MkdirTemp("", "xpvalidate-")
	if err != nil {
		return nil, errors.Wrap(err, "cannot create temporary directory")
	}
	defer os.RemoveAll(cache) //nolint:errcheck // Best effort cleanup of a temp dir.
	args := []string{
		"resource", "validate", strings.Join(extensions, ","), resources,
		"--crossplane-image=", "--cache-dir=" + cache, "--error-on-missing-schemas",
	}
	cmd := exec.CommandContext(ctx, t.CLI, args...) //nolint:gosec // Our own pinned binary.
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return out, errors.Wrapf(err, "crossplane resource validate failed:\n%s", out)
}

func functions(addr string) string {
	return fmt.Sprintf(`apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: %s
  annotations:
    render.crossplane.io/runtime: Development
    render.crossplane.io/runtime-development-target: %s
spec:
  package: xpkg.crossplane.io/armadaproject/function-armada:v0.0.0
`, FunctionName, addr)
}

func run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // Our own pinned binary.
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.Wrapf(err, "%s %s failed: %s", filepath.Base(bin), args[0], strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
