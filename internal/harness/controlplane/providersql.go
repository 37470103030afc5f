package controlplane

import (
	"context"
	"net/http"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ProcProviderSQL names provider-sql's process; see Options.RunProviderSQL.
const ProcProviderSQL = "provider-sql"

// ProviderSQLVersion is the provider-sql the control plane runs; the
// tools/provider-sql wrapper module and internal/harness/thirdparty pin the same
// version, so its CRDs are the ones the backing services' CRDs include.
const ProviderSQLVersion = "v0.16.0"

// providerSQLController is the controller of provider-sql's namespaced
// PostgreSQL Database, the kind function-armada composes. Its metrics
// appear once the controller has started.
const providerSQLController = "managed/database.postgresql.sql.m.crossplane.io"

// providerSQLBinary is the tool binary provider-sql runs from.
func (o *Options) providerSQLBinary() binary {
	return binary{
		name: "provider-sql " + ProviderSQLVersion, path: &o.ProviderSQL, file: "provider-sql-" + ProviderSQLVersion,
		target: "provider-sql", script: "tools/provider-sql/build.sh",
	}
}

// startProviderSQL starts provider-sql with the control plane's admin
// kubeconfig. Unlike provider-kubernetes it needs no ProviderConfig from
// the control plane: function-armada composes one per Armada from the
// user's admin connection Secret. provider-sql serves no health probe, so
// it is ready once its metrics name the Database controller as started.
func (c *ControlPlane) startProviderSQL(ctx context.Context) error {
	if c.opts.SkipBackingServiceCRDs {
		return errors.New("cannot run provider-sql without its CRDs: unset Options.SkipBackingServiceCRDs or Options.RunProviderSQL")
	}
	p, err := freePorts(ctx, 1)
	if err != nil {
		return err
	}
	args := []string{"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(p[0])}
	if c.opts.ProviderPollInterval > 0 {
		args = append(args, "--poll="+c.opts.ProviderPollInterval.String())
	}
	if c.opts.Debug {
		args = append(args, "--debug")
	}
	proc := c.newProcess(ProcProviderSQL, c.opts.ProviderSQL, args, []string{"KUBECONFIG=" + c.kubeconfig})
	if err := proc.start(); err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(p[0]) + "/metrics"
	return proc.waitReady(ctx, stepTimeout, "provider-sql's "+providerSQLController+" controller", func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, url, `controller="`+providerSQLController+`"`)
	})
}
