// Command render shows what function-armada composes for an example claim:
// it serves the function locally, renders the claim's XR with the real
// Crossplane CLI and core, feeds the result back as a healthy cluster
// would report it until it converges, and prints a tree of every composed
// object and the claim's status. `make run` and `make render` call it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
	fn "github.com/armadaproject/armada-crossplane/internal/function"
	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

func main() {
	out := flag.String("o", "", "also write the converged render output (YAML) to this file")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: render [-o FILE] [CLAIM.yaml]\n\n"+
			"Renders an ArmadaClaim (default examples/minimal.yaml) through function-armada and Crossplane.\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	path := "examples/minimal.yaml"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	cli.Main("render", func(ctx context.Context) error { return run(ctx, path, *out) })
}

func run(ctx context.Context, path, outFile string) error {
	tools, err := xprender.FindTools()
	if err != nil {
		return err
	}
	f, err := fn.New(logging.NewNopLogger())
	if err != nil {
		return err
	}
	addr, stop, err := xprender.Serve(ctx, f)
	if err != nil {
		return err
	}
	defer stop()
	docs, err := manifest.ReadDocs(path)
	if err != nil {
		return err
	}
	xr, err := xprender.ClaimToXR(docs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	opt := xprender.RenderOptions{
		XR: xr, Composition: "package/xarmada/composition.yaml", XRD: "package/xarmada/definition.yaml", FunctionAddress: addr,
	}
	if xr["kind"] == "Armada" {
		opt.Composition, opt.XRD = "package/xarmada/namespaced-composition.yaml", "package/xarmada/namespaced-definition.yaml"
	}
	steps, err := tools.Converge(ctx, opt, 6)
	if err != nil {
		return err
	}
	meta, _ := xr["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	kind, ns, name := "ArmadaClaim", labels["crossplane.io/claim-namespace"], labels["crossplane.io/claim-name"]
	if xr["kind"] == "Armada" {
		kind, ns, name = "Armada", meta["namespace"], meta["name"]
	}
	fmt.Printf("%s %s/%s (%s) through function-armada and Crossplane %s (core %s)\n",
		kind, ns, name, path, xprender.CLIVersion, xprender.CoreVersion)
	fmt.Printf("First reconcile composes %d objects; converged after %d reconciles in %s, treating Jobs as complete and workloads as available.\n\n",
		len(steps[0].Composed), len(steps), time.Since(start).Round(time.Millisecond))

	final := steps[len(steps)-1]
	printTree(final.Composed)
	all, err := manifest.Split(final.Output)
	if err != nil {
		return err
	}
	status, _ := all[0]["status"].(map[string]any)
	printStatus(status)
	if outFile != "" {
		if err := os.WriteFile(outFile, final.Output, 0o600); err != nil {
			return err
		}
		fmt.Printf("\nFull render: %s\n", outFile)
	}
	return nil
}

// printTree prints composed objects grouped by kind.
func printTree(composed []map[string]any) {
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
	fmt.Printf("XArmada composed %d objects:\n", len(composed))
	for i, k := range kinds {
		branch, indent := "├─", "│  "
		if i == len(kinds)-1 {
			branch, indent = "└─", "   "
		}
		names := byKind[k]
		sort.Strings(names)
		fmt.Printf("%s %s (%d)\n", branch, k, len(names))
		for j, n := range names {
			b := "├─"
			if j == len(names)-1 {
				b = "└─"
			}
			fmt.Printf("%s%s %s\n", indent, b, n)
		}
	}
}

// printStatus prints the XR status the claim would show, without
// Crossplane's bookkeeping fields.
func printStatus(status map[string]any) {
	show := map[string]any{}
	for _, k := range []string{"version", "endpoints", "components", "credentialsSecret"} {
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
	fmt.Printf("\nClaim status:\n  conditions: %s\n  %s", strings.Join(conds, ", "), strings.ReplaceAll(string(b), "\n", "\n  "))
	fmt.Println()
}
