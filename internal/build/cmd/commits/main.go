// Command commits fails if a commit a change adds has a subject over 72
// characters (internal/build/commits): on a branch, the commits since its
// merge base with main; on main, those since commits.Base. `make
// reviewable` and .ci/run run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
	"github.com/armadaproject/armada-crossplane/internal/build/commits"
)

func main() {
	base := flag.String("base", commits.Base, "on main, check the commits after this one")
	flag.Parse()
	cli.Main("commits", func(ctx context.Context) error {
		rng, long, err := commits.Check(ctx, ".", *base)
		if err != nil {
			return err
		}
		for _, l := range long {
			fmt.Fprintln(os.Stderr, l)
		}
		if len(long) > 0 {
			return errors.Errorf("%d commit subjects in %s are over %d characters: shorten them (git rebase -i, reword) and put the detail in the body",
				len(long), rng, commits.MaxSubject)
		}
		fmt.Printf("commit subjects in %s: at most %d characters\n", rng, commits.MaxSubject)
		return nil
	})
}
