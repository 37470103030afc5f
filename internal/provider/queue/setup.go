package queue

import (
	"context"
	"net"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// Options configure the Queue controller (and, as provider.Options, every
// provider-armada controller).
type Options struct {
	// Controller are crossplane-runtime's controller options: logger,
	// poll interval, rate limits, metrics.
	Controller controller.Options
	// CreationGracePeriod is how long after creating a queue a NotFound
	// is taken for a slow read rather than a deleted queue; zero means
	// crossplane-runtime's default, 30s.
	CreationGracePeriod time.Duration
	// Dialer, if set, opens connections to Armada instead of dialling the
	// provider configs' endpoints; tests use it to reach a local Armada.
	Dialer func(context.Context, string) (net.Conn, error)
	// ReleaseAfter is how long after its provider config's deletion began
	// a Queue stops waiting for Armada; zero means DefaultReleaseAfter.
	ReleaseAfter time.Duration
}

// Setup adds the Queue controller to mgr. Management policies are always
// honoured: they are how a v2 managed resource says to orphan (omit
// Delete) or only observe its queue.
func Setup(mgr ctrl.Manager, so Options) error {
	o := so.Controller
	name := managed.ControllerName(armadav1.QueueKind)
	// crossplane-runtime v2.4.0's recorder takes the old events API; see crossplane/crossplane#7152.
	recorder := mgr.GetEventRecorderFor(name) //nolint:staticcheck // See above.
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[*armadav1.Queue](newConnector(mgr.GetClient(), so, event.NewAPIRecorder(recorder))),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithPollInterval(o.PollInterval),
		managed.WithRecorder(event.NewAPIRecorder(recorder)),
		managed.WithManagementPolicies(),
	}
	if so.CreationGracePeriod > 0 {
		opts = append(opts, managed.WithCreationGracePeriod(so.CreationGracePeriod))
	}
	if o.ChangeLogOptions != nil {
		opts = append(opts, managed.WithChangeLogger(o.ChangeLogOptions.ChangeLogger))
	}
	if o.MetricOptions != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
		if o.MetricOptions.MRStateMetrics != nil {
			mo := o.MetricOptions
			r := statemetrics.NewMRStateRecorder(mgr.GetClient(), o.Logger, mo.MRStateMetrics, &armadav1.QueueList{}, mo.PollStateMetricInterval)
			if err := mgr.Add(r); err != nil {
				return errors.Wrap(err, "cannot register Queue state metrics recorder")
			}
		}
	}
	r := managed.NewReconciler(mgr, resource.ManagedKind(armadav1.QueueGroupVersionKind), opts...)
	return errors.Wrap(ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		WithEventFilter(resource.DesiredStateChanged()).
		For(&armadav1.Queue{}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter)), "cannot set up Queue controller")
}
