package queue

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
)

// DefaultReleaseAfter is how long after its provider config's deletion
// began a Queue stops waiting for Armada, unless Options.ReleaseAfter
// says otherwise.
const DefaultReleaseAfter = 2 * time.Minute

// reasonReleased is the event a Queue records when it lets go of its
// Armada without Armada confirming the queue's deletion.
const reasonReleased event.Reason = "ReleasedWithArmada"

// A going describes a Queue whose provider config is being deleted (or is
// gone): the Armada behind it is being deleted by design, and the queue's
// data goes with that Armada's database (or stays in it, kept, under
// deletionPolicy Orphan). Such a Queue makes one bounded attempt per
// reconcile to delete its queue, and stops waiting as soon as Armada
// cannot be reached, or once the config has been deleting for the release
// period. A Queue whose config is not being deleted never takes this path:
// an Armada that is merely unreachable is retried for as long as it takes.
type going struct {
	// config names the provider config, as kind/name.
	config string
	// since is when the config's deletion began; zero if it is gone.
	since time.Time
	// after is the release period.
	after time.Duration
	// cause is why Armada could not be reached (a failed connection), or
	// nil when a connection was opened.
	cause error

	kube   client.Client
	record event.Recorder
	// usage is the kind of usage that records cr's use of its config.
	usage client.Object
}

// expired says whether the release period has passed at now.
func (g *going) expired(now time.Time) bool {
	return g.since.IsZero() || now.Sub(g.since) >= g.after
}

// release lets cr go of its Armada after Armada could not be reached
// (cause) or the release period passed. Either way it drops its provider
// config usage, so the config can go. A Queue being deleted is reported
// absent, so crossplane-runtime removes its finalizer; the event names the
// queue left behind. A live Queue (a team's, whose Armada is being deleted
// under it) reports why; it reconnects when a config of that name exists
// again.
func (g *going) release(ctx context.Context, cr *armadav1.Queue, cause error) (managed.ExternalObservation, error) {
	name, _ := Name(cr)
	why := fmt.Sprintf("%s is being deleted", g.config)
	if g.since.IsZero() {
		why = g.config + " no longer exists"
	}
	switch {
	case cause != nil:
		why += fmt.Sprintf(" and Armada cannot be reached (%v)", cause)
	case !g.since.IsZero():
		why += fmt.Sprintf(" and has been for over %s", g.after)
	}
	// The usage goes now rather than with the garbage collector, so the
	// config goes as soon as its last Queue lets go.
	u := g.usage.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a client.Object is one.
	u.SetName(string(cr.GetUID()))
	if _, ok := u.(*armadav1.ProviderConfigUsage); ok {
		u.SetNamespace(cr.GetNamespace())
	}
	if err := g.kube.Delete(ctx, u); err != nil && !kerrors.IsNotFound(err) {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot delete provider config usage")
	}
	if meta.WasDeleted(cr) {
		g.record.Event(cr, event.Warning(reasonReleased, errors.Errorf(
			"%s: queue %s is not deleted in Armada; it goes with that Armada's database, or stays in it under deletionPolicy Orphan", why, name)))
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	return managed.ExternalObservation{}, errors.Errorf("%s: this Queue no longer holds it, and leaves queue %s in Armada as it is; "+
		"it reconnects when %s exists again", why, name, g.config)
}

// unreachable says whether err means Armada did not answer, as opposed to
// an answer such as PermissionDenied, which is waited out for the release
// period.
func unreachable(err error) bool {
	c := armadaclient.Code(err)
	return c == codes.Unavailable || c == codes.DeadlineExceeded || c == codes.Canceled
}

// deletionTime is when obj's deletion began, zero if it has not.
func deletionTime(obj metav1.Object) time.Time {
	if t := obj.GetDeletionTimestamp(); t != nil {
		return t.Time
	}
	return time.Time{}
}
