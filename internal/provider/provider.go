// Package provider wires provider-armada's controllers: Queue, and the
// ProviderConfig and ClusterProviderConfig usage accounting.
package provider

import (
	"context"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"

	"github.com/armadaproject/armada-crossplane/internal/provider/config"
	"github.com/armadaproject/armada-crossplane/internal/provider/queue"
)

// Options configure the provider's controllers.
type Options struct {
	// Controller are crossplane-runtime's controller options: logger,
	// poll interval, rate limits, metrics.
	Controller controller.Options

	// CreationGracePeriod is how long after creating a queue a NotFound
	// from Armada is taken for a slow read rather than a deleted queue.
	// Zero means crossplane-runtime's default, 30s.
	CreationGracePeriod time.Duration

	// Dialer, if set, opens connections to Armada instead of dialling the
	// provider configs' endpoints; tests use it to reach a local Armada.
	Dialer func(context.Context, string) (net.Conn, error)

	// ReleaseAfter is how long after its provider config's deletion began
	// a Queue stops waiting for Armada to delete its queue. Zero means
	// queue.DefaultReleaseAfter.
	ReleaseAfter time.Duration
}

// ClientOptions are the options of the manager's client. Secrets are read
// uncached, straight from the API server: a cached read would start an
// informer that lists and watches every Secret in the cluster and holds
// them all in the provider's memory, when it needs only the few its
// provider configs name, once per connection.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}

// Setup adds every provider-armada controller to mgr.
func Setup(mgr ctrl.Manager, o Options) error {
	if err := config.Setup(mgr, o.Controller); err != nil {
		return err
	}
	return queue.Setup(mgr, queue.Options{Controller: o.Controller, CreationGracePeriod: o.CreationGracePeriod, Dialer: o.Dialer, ReleaseAfter: o.ReleaseAfter})
}
