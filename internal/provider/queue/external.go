package queue

import (
	"context"
	"strings"
	"time"

	"github.com/armadaproject/armada/pkg/api"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
)

// External observes, creates, updates and deletes one Armada queue over a
// connection opened by Connect.
type External struct {
	conn *armadaclient.Conn
	// going is set when the Queue's provider config is being deleted or
	// gone; conn is nil when it could not be opened.
	going *going
	// now is the clock going's release period is measured on.
	now func() time.Time
}

// NewExternal returns an External that uses conn, and closes it on
// Disconnect.
func NewExternal(conn *armadaclient.Conn) *External { return &External{conn: conn} }

var _ managed.TypedExternalClient[*armadav1.Queue] = &External{}

// call runs fn with a deadline of the connection's timeout.
func (e *External) call(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, e.conn.Timeout)
	defer cancel()
	return armadaclient.Describe(fn(ctx))
}

// Get returns the named queue as Armada holds it.
func (e *External) Get(ctx context.Context, name string) (*api.Queue, error) {
	var q *api.Queue
	err := e.call(ctx, func(ctx context.Context) error {
		var err error
		q, err = e.conn.Queues.GetQueue(ctx, &api.QueueGetRequest{Name: name})
		return err
	})
	return q, err
}

// Observe reports whether the queue exists and matches the spec, records
// what Armada holds in status.atProvider and late-initialises userOwners.
// A queue Armada does not have is absent; any other error, such as Armada
// being unavailable, is returned, so the reconciler never concludes the
// queue is gone when it merely cannot see it.
func (e *External) Observe(ctx context.Context, cr *armadav1.Queue) (managed.ExternalObservation, error) {
	name, err := target(cr)
	if err != nil && meta.WasDeleted(cr) {
		// A queue with a name Armada cannot hold was never created, so
		// there is nothing to delete.
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	// A Queue that created its queue before it recorded the name (an
	// older provider) records the name it has now, once.
	recorded := false
	if !meta.GetExternalCreateSucceeded(cr).IsZero() && Created(cr) == "" {
		meta.AddAnnotations(cr, map[string]string{AnnotationCreated: name})
		recorded = true
	}
	if g := e.going; g != nil && (g.cause != nil || g.expired(e.now())) {
		return g.release(ctx, cr, g.cause)
	}
	got, err := e.Get(ctx, name)
	if armadaclient.IsNotFound(err) {
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil && e.going != nil && unreachable(err) {
		return e.going.release(ctx, cr, errors.Wrap(err, "cannot get queue"))
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot get queue")
	}
	if !createdOrImported(cr) {
		if meta.WasDeleted(cr) {
			// Never this Queue's: deleting the Queue leaves it.
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		return managed.ExternalObservation{}, errors.Errorf("queue %s already exists in Armada and this Queue did not create it: "+
			"it is not adopted (nor ever deleted); choose another name, or set the annotation %s to take it over", name, AnnotationAdopt)
	}
	cr.Status.AtProvider = Observation(got)
	cr.SetConditions(xpv2.Available())
	li := LateInitialize(&cr.Spec.ForProvider, got)
	want, err := ToAPI(name, cr.Spec.ForProvider)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot compare queue")
	}
	diff := Diff(want, got)
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        len(diff) == 0,
		ResourceLateInitialized: li || recorded,
		Diff:                    strings.Join(diff, ", "),
	}, nil
}

// Create creates the queue.
func (e *External) Create(ctx context.Context, cr *armadav1.Queue) (managed.ExternalCreation, error) {
	cr.SetConditions(xpv2.Creating())
	q, err := e.desired(cr)
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, "cannot create queue")
	}
	err = e.call(ctx, func(ctx context.Context) error {
		_, err := e.conn.Queues.CreateQueue(ctx, q)
		return err
	})
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, "cannot create queue")
	}
	// crossplane-runtime persists the annotations once Create succeeds.
	meta.AddAnnotations(cr, map[string]string{AnnotationCreated: q.GetName()})
	return managed.ExternalCreation{}, nil
}

// Update makes Armada's queue match the spec.
func (e *External) Update(ctx context.Context, cr *armadav1.Queue) (managed.ExternalUpdate, error) {
	q, err := e.desired(cr)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, "cannot update queue")
	}
	err = e.call(ctx, func(ctx context.Context) error {
		_, err := e.conn.Queues.UpdateQueue(ctx, q)
		return err
	})
	return managed.ExternalUpdate{}, errors.Wrap(err, "cannot update queue")
}

// Delete deletes the queue. A queue that is already gone is deleted.
func (e *External) Delete(ctx context.Context, cr *armadav1.Queue) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	name, err := target(cr)
	if err != nil {
		return managed.ExternalDelete{}, errors.Wrap(err, "cannot delete queue")
	}
	err = e.call(ctx, func(ctx context.Context) error {
		_, err := e.conn.Queues.DeleteQueue(ctx, &api.QueueDeleteRequest{Name: name})
		return err
	})
	if armadaclient.IsNotFound(err) {
		return managed.ExternalDelete{}, nil
	}
	return managed.ExternalDelete{}, errors.Wrap(err, "cannot delete queue")
}

// Disconnect closes the connection, if one was opened.
func (e *External) Disconnect(context.Context) error {
	if e.conn == nil {
		return nil
	}
	return e.conn.Close()
}

// desired returns the queue cr asks for.
func (e *External) desired(cr *armadav1.Queue) (*api.Queue, error) {
	name, err := target(cr)
	if err != nil {
		return nil, err
	}
	return ToAPI(name, cr.Spec.ForProvider)
}

// AnnotationAdopt on a Queue lets it take over a queue Armada already has,
// which it did not create: whoever may edit the Queue may manage that
// queue. Without it, or an Observe-only Queue, such a queue is refused.
const AnnotationAdopt = "armadaproject.io/adopt"

// createdOrImported says whether the queue Armada holds under cr's name is
// cr's to manage: cr created it (crossplane-runtime records when), cr only
// observes it, or it was explicitly adopted. Otherwise it is someone
// else's queue that only shares the name, and the provider neither
// changes nor deletes it.
func createdOrImported(cr *armadav1.Queue) bool {
	if !meta.GetExternalCreateSucceeded(cr).IsZero() || cr.GetAnnotations()[AnnotationAdopt] == "true" {
		return true
	}
	policies := cr.GetManagementPolicies()
	if len(policies) == 0 {
		return false // the default: every action
	}
	for _, p := range policies {
		if p == xpv2.ManagementActionCreate || p == xpv2.ManagementActionAll {
			return false
		}
	}
	return true
}
