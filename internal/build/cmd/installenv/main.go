// Command installenv starts what docs/guides/install.md needs to run
// as pasted, locally and without Docker or internet (`make install-env`):
// an OCI registry on 127.0.0.1, the packages configuration-armada depends
// on that are not ours (provider-kubernetes) mirrored into it under their
// real paths (xpkg.Mirrors), and a local control plane with Crossplane but
// nothing of ours installed. It prints the KUBECONFIG and REGISTRY to
// export and runs until Ctrl-C.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/build/cli"
	"github.com/armadaproject/armada-crossplane/internal/build/xpkg"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

func main() {
	cli.Main("installenv", run)
}

func run(ctx context.Context) error {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "installenv: "+format+"\n", args...) }
	dir, err := os.MkdirTemp("", "armada-installenv-")
	if err != nil {
		return errors.Wrap(err, "cannot create work directory")
	}
	defer func() { _ = os.RemoveAll(dir) }()

	// An in-memory registry. Crossplane and the CLI talk plain HTTP to a
	// loopback registry.
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return errors.Wrap(err, "cannot listen for the registry")
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	host := l.Addr().String()

	bin, err := xprender.FindCLI()
	if err != nil {
		return err
	}
	binDir, err := testutil.ToolDir("")
	if err != nil {
		return err
	}
	ms, err := xpkg.MirrorsNeeded(xpkg.DefaultRegistry)
	if err != nil {
		return err
	}
	for _, m := range ms {
		file, err := xpkg.BuildMirror(ctx, m, xpkg.MirrorOptions{CLI: bin, BinDir: binDir, OutDir: dir})
		if err != nil {
			return err
		}
		_, repo, _ := strings.Cut(m.Repo, "/")
		ref := host + "/" + repo + ":" + m.Version
		if err := xpkg.Push(ctx, bin, dir, xpkg.Built{Name: m.Repo, Files: map[string]string{"": file}}, ref); err != nil {
			return err
		}
		logf("mirrored %s:%s to %s", m.Repo, m.Version, ref)
	}

	cp, err := controlplane.Start(ctx, controlplane.Options{SkipProviderKubernetes: true, SkipFunction: true, SkipPackage: true, Logf: logf})
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	if err := helmDefaults(ctx, cp.Client()); err != nil {
		return err
	}
	fmt.Printf("export KUBECONFIG=%s REGISTRY=%s\n", cp.Kubeconfig(), host)
	logf("ready: paste the export line above into another shell and follow docs/guides/install.md; Ctrl-C stops everything")
	<-ctx.Done()
	return nil
}

// helmDefaults creates what Crossplane's Helm chart creates on a real
// cluster and the control plane does not (controlplane.ChartDefaults).
func helmDefaults(ctx context.Context, kube client.Client) error {
	for _, o := range controlplane.ChartDefaults() {
		if err := kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("armada-installenv"), client.ForceOwnership); err != nil {
			return errors.Wrapf(err, "cannot apply %s %s", o.GetKind(), o.GetName())
		}
	}
	return nil
}
