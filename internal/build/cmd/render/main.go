// Command render shows what function-armada composes for an example: it
// serves the function locally, renders each claim or namespaced XR in the
// file with the real Crossplane CLI and core, feeds the result back as a
// healthy cluster would report it until it converges, and prints a tree
// of every composed object and the claim's status. The platform's
// ArmadaTenancyPolicies, and any other resource the function requires
// (a team queue's Armada), come from -required-resources files, as with
// `crossplane composition render --required-resources`. `make render`
// calls it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
)

func main() {
	opt := options{root: "."}
	flag.StringVar(&opt.out, "o", "", "also write the converged render output (YAML) to this file")
	flag.Func("required-resources", "a YAML file of the resources the function may require: the platform's ArmadaTenancyPolicies, "+
		"a team queue's Armada (claims are passed as their XRs); repeat the flag or separate files with commas",
		func(v string) error {
			opt.required = append(opt.required, strings.Split(v, ",")...)
			return nil
		})
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: render [-o FILE] [-required-resources FILE]... [EXAMPLE.yaml]\n\n"+
			"Renders each ArmadaClaim, ArmadaQueueClaim, Armada and ArmadaQueue in EXAMPLE.yaml (default\n"+
			"examples/minimal.yaml) through function-armada and Crossplane. For example:\n\n"+
			"  go run ./internal/build/cmd/render -required-resources examples/tenancy-policy.yaml examples/multi-cluster.yaml\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	opt.example = "examples/minimal.yaml"
	if flag.NArg() > 0 {
		opt.example = flag.Arg(0)
	}
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	cli.Main("render", func(ctx context.Context) error { return run(ctx, os.Stdout, opt) })
}

// options are the command's inputs.
type options struct {
	// example is the file whose claims and XRs are rendered.
	example string
	// required are the -required-resources files.
	required []string
	// out, if set, is where the converged outputs are written.
	out string
	// root is the repository root, where package/ is.
	root string
}

// hints add how to pass what a refusal is missing to the render errors
// that mention it.
var hints = []struct{ refusal, hint string }{
	{
		"not allowed by the built-in tenancy policy",
		"no ArmadaTenancyPolicy applies to the namespace, so the built-in policy refused it: pass the platform's policies " +
			"with -required-resources FILE (make render REQUIRED=FILE); examples/tenancy-policy.yaml holds the examples'",
	},
	{
		"spec.armada.name: Not found",
		"the team queue's Armada is required: pass the file that holds its claim or XR " +
			"with -required-resources FILE (make render REQUIRED=FILE,...), e.g. examples/production.yaml for examples/team-queue.yaml",
	},
}

// hinted is err, with the hints for the refusals it mentions.
func hinted(err error) error {
	if err == nil {
		return nil
	}
	var add []string
	for _, h := range hints {
		if strings.Contains(err.Error(), h.refusal) {
			add = append(add, h.hint)
		}
	}
	if len(add) == 0 {
		return err
	}
	return errors.Errorf("%w\n\n%s", err, strings.Join(add, "\n"))
}

// run renders every claim and XR of opt.example and prints them to w.
func run(ctx context.Context, w io.Writer, opt options) error {
	return hinted(render(ctx, w, opt))
}
