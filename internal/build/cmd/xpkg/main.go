// Command xpkg builds this repository's Crossplane packages without Docker
// (`make xpkg` calls it): runtime images for linux/amd64 and linux/arm64
// from internal/build/image, then one .xpkg per architecture (and one for the
// Configuration) with the pinned `crossplane xpkg build`. With -push it
// pushes each package's files together, as one index, to the registry.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
)

func main() {
	o := xpkg.Options{}
	flag.StringVar(&o.OutDir, "out", "_output/xpkg", "directory for the packages, image tarballs and "+xpkg.ResultFile)
	flag.StringVar(&o.Version, "version", "", "package version (default: derived from git describe, see internal/build/xpkg.SemVer)")
	flag.StringVar(&o.Registry, "registry", xpkg.DefaultRegistry, "registry and organisation the packages are published under")
	flag.StringVar(&o.CLI, "cli", os.Getenv("CROSSPLANE_CLI"), "the pinned Crossplane CLI (Makefile CROSSPLANE_CLI)")
	flag.StringVar(&o.CABundle, "ca-bundle", "", "CA bundle for images that need one (default Debian's /etc/ssl/certs/ca-certificates.crt)")
	arch := flag.String("arch", "amd64,arm64", "comma-separated architectures of the runtime images")
	push := flag.Bool("push", false, "push every built package to REGISTRY/NAME:VERSION")
	pushTo := flag.String("push-to", "", "with -push, push to PUSH_TO/NAME:VERSION instead; the packages still name "+
		"their dependencies under -registry (for a mirror or local registry that ImageConfigs point at)")
	flag.Parse()
	o.Architectures = strings.Split(*arch, ",")
	o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "xpkg: "+format+"\n", args...) }
	to := ""
	if *push {
		to = o.Registry
		if *pushTo != "" {
			to = *pushTo
		}
	}
	cli.Main("xpkg", func(ctx context.Context) error { return run(ctx, o, to) })
}

// run builds the packages and, if pushTo is not empty, pushes each to
// PUSH_TO/NAME:VERSION.
func run(ctx context.Context, o xpkg.Options, pushTo string) error {
	root, err := os.Getwd()
	if err != nil {
		return errors.Wrap(err, "cannot get working directory")
	}
	o.RepoRoot = root
	if o.Version == "" {
		if o.Version, err = xpkg.GitVersion(ctx, root); err != nil {
			return err
		}
	}
	if o.Created, err = created(); err != nil {
		return err
	}
	if o.OutDir, err = filepath.Abs(o.OutDir); err != nil {
		return errors.Wrap(err, "cannot resolve output directory")
	}
	if err := os.MkdirAll(o.OutDir, 0o750); err != nil {
		return errors.Wrap(err, "cannot create output directory")
	}
	start := time.Now()
	res, err := xpkg.Build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("version %s, built in %.0fs into %s\n", res.Version, time.Since(start).Seconds(), o.OutDir)
	for _, b := range res.Packages {
		archs := make([]string, 0, len(b.Files))
		for a := range b.Files {
			archs = append(archs, a)
		}
		sort.Strings(archs)
		for _, a := range archs {
			fmt.Printf("  %-22s %-6s %s  %s\n", b.Name, a, b.Digests[a], filepath.Base(b.Files[a]))
		}
		if pushTo != "" {
			ref := pushTo + "/" + b.Name + ":" + res.Version
			if err := xpkg.Push(ctx, o.CLI, root, b, ref); err != nil {
				return err
			}
			fmt.Printf("  pushed %s\n", ref)
		}
	}
	for name, why := range res.Skipped {
		fmt.Printf("  %-22s skipped: %s\n", name, why)
	}
	return nil
}

// created returns the images' creation time: SOURCE_DATE_EPOCH if set,
// otherwise the Unix epoch.
func created() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, errors.Wrapf(err, "cannot parse SOURCE_DATE_EPOCH %q", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
