// Command function-armada serves the Armada composition function.
package main

import (
	"time"

	"github.com/alecthomas/kong"

	"github.com/crossplane/function-sdk-go"

	fn "github.com/armadaproject/armada-crossplane/internal/function"
)

// CLI of function-armada.
type CLI struct {
	Debug bool `help:"Emit debug logs in addition to info logs." short:"d"`

	Network            string `default:"tcp"   help:"Network on which to listen for gRPC connections."`
	Address            string `default:":9443" help:"Address at which to listen for gRPC connections."`
	TLSCertsDir        string `env:"TLS_SERVER_CERTS_DIR"                                            help:"Directory containing server certs (tls.key, tls.crt) and the CA used to verify client certificates (ca.crt)"`
	Insecure           bool   `help:"Run without mTLS credentials. If you supply this flag --tls-server-certs-dir will be ignored."`
	MaxRecvMessageSize int    `default:"4"     help:"Maximum size of received messages in MB."`
	PasswordKeyFile    string `env:"PASSWORD_KEY_FILE"                                               help:"File holding the secret key (at least 32 bytes) generated passwords and the CA are derived from. Without it each process uses a random key; passwords already stored are always reused."`
	MetricsAddress     string `default:":8080" help:"Address at which to serve Prometheus metrics."`
	// CertClockOffset moves the clock of generated certificates only, so
	// that a test can bring them to their renewal point on a running
	// control plane (test/e2e TestCertRenewal). Hidden: never for
	// production.
	CertClockOffset time.Duration `help:"Test only: shift the clock that picks generated certificates' validity window and renewal by this duration." hidden:""`
}

// Run serves the function.
func (c *CLI) Run() error {
	log, err := function.NewLogger(c.Debug)
	if err != nil {
		return err
	}
	log.Info("Garbage collection target set", "gcPercent", fn.SetGCPercent())
	var opts []fn.Option
	if c.PasswordKeyFile != "" {
		key, err := fn.ReadPasswordKey(c.PasswordKeyFile)
		if err != nil {
			return err
		}
		opts = append(opts, fn.WithPasswordKey(key))
	}
	if off := c.CertClockOffset; off != 0 {
		log.Info("Certificate clock shifted (test only)", "offset", off.String())
		opts = append(opts, fn.WithCertClock(func() time.Time { return time.Now().Add(off) }))
	}
	f, err := fn.New(log, opts...)
	if err != nil {
		return err
	}
	return function.Serve(f,
		function.Listen(c.Network, c.Address),
		function.MTLSCertificates(c.TLSCertsDir),
		function.Insecure(c.Insecure),
		function.MaxRecvMessageSize(c.MaxRecvMessageSize*1024*1024),
		function.WithMetricsServer(c.MetricsAddress))
}

func main() {
	ctx := kong.Parse(&CLI{}, kong.Description("Crossplane composition function that composes a complete Armada."))
	ctx.FatalIfErrorf(ctx.Run())
}
