// Package provider wires provider-armada's controllers: Queue, and the
// ProviderConfig and ClusterProviderConfig usage accounting.
package provider

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/internal/provider/config"
	"github.com/armadaproject/armada-crossplane/internal/provider/queue"
)

// Options configure the provider's controllers. They are the Queue
// controller's options, declared once there; the ProviderConfig usage
// controllers take only Options.Controller.
type Options = queue.Options

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
	return queue.Setup(mgr, o)
}
