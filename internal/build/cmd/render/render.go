package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"
	"github.com/crossplane/function-sdk-go/logging"

	fn "github.com/armadaproject/armada-crossplane/internal/function"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// maxSteps bounds how many reconciles a render may take to converge.
const maxSteps = 6

// render serves function-armada, then converges each XR of opt.example
// in turn, printing each one's tree and status.
func render(ctx context.Context, w io.Writer, opt options) error {
	p := &printer{w: w}
	tools, err := xprender.FindTools()
	if err != nil {
		return err
	}
	docs, err := manifest.ReadDocs(opt.example)
	if err != nil {
		return err
	}
	xrs, err := xprender.XRs(docs)
	if err != nil {
		return err
	}
	if len(xrs) == 0 {
		return errors.Errorf("cannot render %s: it holds no ArmadaClaim, ArmadaQueueClaim, Armada or ArmadaQueue", opt.example)
	}
	dir, err := os.MkdirTemp("", "render-")
	if err != nil {
		return errors.Wrap(err, "cannot create temporary directory")
	}
	defer os.RemoveAll(dir) //nolint:errcheck // Best effort cleanup of a temp dir.
	given, err := readRequired(opt.required)
	if err != nil {
		return err
	}
	f, err := fn.New(logging.NewNopLogger())
	if err != nil {
		return errors.Wrap(err, "cannot create function-armada")
	}
	addr, stop, err := xprender.Serve(ctx, f)
	if err != nil {
		return err
	}
	defer stop()

	var outputs [][]byte
	for i, xr := range xrs {
		if i > 0 {
			p.printf("\n")
		}
		required, err := writeRequired(filepath.Join(dir, fmt.Sprintf("required-%d.yaml", i)), given, xrs, i)
		if err != nil {
			return err
		}
		out, err := converge(ctx, p, tools, opt, xprender.RenderOptions{XR: xr, FunctionAddress: addr, RequiredResources: required})
		if err != nil {
			return errors.Wrapf(err, "cannot render %s %s of %s", xr["kind"], name(xr), opt.example)
		}
		outputs = append(outputs, out)
	}
	if opt.out == "" {
		return p.err
	}
	if err := os.WriteFile(opt.out, manifest.Join(outputs), 0o600); err != nil {
		return errors.Wrap(err, "cannot write the render output")
	}
	p.printf("\nFull render: %s\n", opt.out)
	return p.err
}

// readRequired reads the files of required resources the user passed,
// every document, claims as their XRs.
func readRequired(files []string) ([]map[string]any, error) {
	var all []map[string]any
	for _, f := range files {
		docs, err := manifest.ReadDocs(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			xr, err := xprender.XRs([]map[string]any{d})
			if err != nil {
				return nil, errors.Wrapf(err, "cannot read required resources %s", f)
			}
			if len(xr) == 1 {
				d = xr[0]
			}
			all = append(all, d)
		}
	}
	return all, nil
}

// writeRequired writes the resources the function may require when it
// renders xrs[self] to path: those the user passed, then the example's
// other XRs (what a cluster holds once the example is applied: a team
// queue's Armada in the same file).
func writeRequired(path string, given, xrs []map[string]any, self int) (string, error) {
	docs := make([][]byte, 0, len(given)+len(xrs))
	for i, d := range append(slices.Clone(given), xrs...) {
		if i == len(given)+self {
			continue
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return "", errors.Wrap(err, "cannot encode a required resource")
		}
		docs = append(docs, b)
	}
	if err := os.WriteFile(path, manifest.Join(docs), 0o600); err != nil {
		return "", errors.Wrap(err, "cannot write required resources")
	}
	return path, nil
}

// converge renders one XR until it converges, prints its tree and status,
// and returns the converged output.
func converge(ctx context.Context, p *printer, tools xprender.Tools, opt options, ro xprender.RenderOptions) ([]byte, error) {
	kind, _ := ro.XR["kind"].(string)
	var err error
	ro.Composition, ro.XRD, err = xprender.PackageFiles(opt.root, kind)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	steps, err := tools.Converge(ctx, ro, maxSteps)
	if err != nil {
		return nil, err
	}
	p.printf("%s %s (%s) through function-armada and Crossplane %s (core %s)\n",
		claimKind(ro.XR), name(ro.XR), opt.example, xprender.CLIVersion, xprender.CoreVersion)
	p.printf("First reconcile composes %d objects; converged after %d reconciles in %s, treating Jobs as complete and workloads as available.\n\n",
		len(steps[0].Composed), len(steps), time.Since(start).Round(time.Millisecond))

	final := steps[len(steps)-1]
	printTree(p, kind, final.Composed)
	all, err := manifest.Split(final.Output)
	if err != nil {
		return nil, err
	}
	status, _ := all[0]["status"].(map[string]any)
	printStatus(p, status)
	return final.Output, nil
}

// claimKind is the kind a user creates for xr: its claim's, or the
// namespaced XR's own.
func claimKind(xr map[string]any) string {
	switch xr["kind"] {
	case "XArmada":
		return "ArmadaClaim"
	case "XArmadaQueue":
		return "ArmadaQueueClaim"
	}
	kind, _ := xr["kind"].(string)
	return kind
}

// name is "namespace/name" of the claim behind xr, or of the namespaced XR.
func name(xr map[string]any) string {
	meta, _ := xr["metadata"].(map[string]any)
	if labels, _ := meta["labels"].(map[string]any); labels[xcrd.LabelKeyClaimName] != nil {
		return fmt.Sprintf("%s/%s", labels[xcrd.LabelKeyClaimNamespace], labels[xcrd.LabelKeyClaimName])
	}
	return fmt.Sprintf("%s/%s", meta["namespace"], meta["name"])
}

// printTree prints composed objects grouped by kind.
func printTree(p *printer, xrKind string, composed []map[string]any) {
	byKind := map[string][]string{}
	for _, o := range composed {
		kind, _ := o["kind"].(string)
		m, _ := o["metadata"].(map[string]any)
		name, _ := m["name"].(string)
		if ns, _ := m["namespace"].(string); ns != "" {
			name = ns + "/" + name
		}
		byKind[kind] = append(byKind[kind], name)
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	p.printf("%s composed %d objects:\n", xrKind, len(composed))
	for i, k := range kinds {
		branch, indent := "├─", "│  "
		if i == len(kinds)-1 {
			branch, indent = "└─", "   "
		}
		names := byKind[k]
		sort.Strings(names)
		p.printf("%s %s (%d)\n", branch, k, len(names))
		for j, n := range names {
			b := "├─"
			if j == len(names)-1 {
				b = "└─"
			}
			p.printf("%s%s %s\n", indent, b, n)
		}
	}
}

// statusFields are the status fields printed: an Armada's, then a team
// queue's. Crossplane's bookkeeping and the details are left out.
var statusFields = []string{"version", "endpoints", "components", "credentialsSecret", "armada", "queue", "endpoint", "namespaces"}

// printStatus prints the XR status the claim would show.
func printStatus(p *printer, status map[string]any) {
	show := map[string]any{}
	for _, k := range statusFields {
		if v, ok := status[k]; ok {
			show[k] = v
		}
	}
	list, _ := status["conditions"].([]any)
	conds := make([]string, 0, len(list))
	for _, c := range list {
		m, _ := c.(map[string]any)
		conds = append(conds, fmt.Sprintf("%s=%s (%s)", m["type"], m["status"], m["reason"]))
	}
	b, _ := yaml.Marshal(show)
	p.printf("\nClaim status:\n  conditions: %s\n  %s", strings.Join(conds, ", "), strings.ReplaceAll(string(b), "\n", "\n  "))
	p.printf("\n")
}

// printer writes the command's output, keeping the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}
