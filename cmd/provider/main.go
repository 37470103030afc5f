// Command provider runs provider-armada: the Crossplane provider that
// manages Armada queues (armada.m.armadaproject.io Queue) through
// Armada's gRPC API.
package main

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/alecthomas/kong"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider"
)

// cli is the command line.
type cli struct {
	Debug            bool          `help:"Log at debug level, including controller-runtime's logs."                             short:"d"`
	Sync             time.Duration `default:"1h"                                                                                help:"How often every resource is re-read from the API server and checked for drift." short:"s"`
	Poll             time.Duration `default:"1m"                                                                                help:"How often each Queue is checked against Armada for drift."`
	PollStateMetric  time.Duration `default:"5s"                                                                                help:"How often the managed-resource state metrics are recorded."`
	MaxReconcileRate int           `default:"10"                                                                                help:"Most reconciles per second, across all resources; also the number of concurrent reconciles."`
	LeaderElection   bool          `env:"LEADER_ELECTION"                                                                       help:"Use leader election, so only one replica reconciles."                           short:"l"`
	MetricsBindAddr  string        `name:"metrics-bind-address" default:":8080"                                                                             help:"Address the Prometheus metrics endpoint listens on ('0' disables it)."`
	HealthBindAddr   string        `name:"health-probe-bind-address" default:":8081"                                                                             help:"Address the /healthz and /readyz probes listen on."`
	ReleaseAfter     time.Duration `default:"2m"                                                                                help:"How long after a ProviderConfig's deletion began its Queues stop waiting for its Armada to delete their queues."`
	Kubeconfig       string        `env:"KUBECONFIG"                                                                            help:"Kubeconfig of the control plane; empty means in-cluster config."               type:"path"`

	// wrap, if set, wraps the transport of every call to the API server;
	// tests record those calls with it.
	wrap func(http.RoundTripper) http.RoundTripper
}

func main() {
	var c cli
	kctx := kong.Parse(&c, kong.Name("provider-armada"), kong.Description("Crossplane provider for Armada queues."))
	kctx.FatalIfErrorf(c.run(ctrl.SetupSignalHandler()))
}

// run starts the manager and blocks until ctx is done.
func (c *cli) run(ctx context.Context) error {
	zl := zap.New(zap.UseDevMode(c.Debug))
	log := logging.NewLogrLogger(zl.WithName("provider-armada"))
	if c.Debug {
		ctrl.SetLogger(zl)
	} else {
		// controller-runtime is very verbose; without this it warns that
		// no logger is set.
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return errors.Wrap(err, "cannot get API server config")
	}
	if c.wrap != nil {
		cfg.Wrap(c.wrap)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return errors.Wrap(err, "cannot add Kubernetes APIs to scheme")
	}
	if err := armadav1.AddToScheme(scheme); err != nil {
		return errors.Wrap(err, "cannot add provider-armada APIs to scheme")
	}
	lease, renew := 60*time.Second, 50*time.Second
	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(cfg, c.MaxReconcileRate), ctrl.Options{
		Scheme:                     scheme,
		Cache:                      cache.Options{SyncPeriod: &c.Sync},
		Client:                     provider.ClientOptions(),
		LeaderElection:             c.LeaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-armada",
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaseDuration:              &lease,
		RenewDeadline:              &renew,
		Metrics:                    metricsserver.Options{BindAddress: c.MetricsBindAddr},
		HealthProbeBindAddress:     c.HealthBindAddr,
	})
	if err != nil {
		return errors.Wrap(err, "cannot create controller manager")
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return errors.Wrap(err, "cannot add health check")
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return errors.Wrap(err, "cannot add readiness check")
	}

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	metrics.Registry.MustRegister(mrMetrics, stateMetrics)

	o := controller.Options{
		Logger:                  log,
		MaxConcurrentReconciles: c.MaxReconcileRate,
		PollInterval:            c.Poll,
		GlobalRateLimiter:       ratelimiter.NewGlobal(c.MaxReconcileRate),
		Features:                &feature.Flags{},
		MetricOptions: &controller.MetricOptions{
			PollStateMetricInterval: c.PollStateMetric,
			MRMetrics:               mrMetrics,
			MRStateMetrics:          stateMetrics,
		},
	}
	if err := provider.Setup(mgr, provider.Options{Controller: o, ReleaseAfter: c.ReleaseAfter}); err != nil {
		return errors.Wrap(err, "cannot set up controllers")
	}
	log.Info("starting provider-armada", "sync", c.Sync, "poll", c.Poll, "maxReconcileRate", c.MaxReconcileRate, "releaseAfter", c.ReleaseAfter)
	return errors.Wrap(mgr.Start(ctx), "cannot run controller manager")
}
