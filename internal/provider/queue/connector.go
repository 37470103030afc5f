package queue

import (
	"context"
	"fmt"
	"net"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
)

// A Connector tracks a Queue's use of its provider config, resolves the
// config and opens one connection to Armada for the reconcile.
type Connector struct {
	kube client.Client
	// usage trackers by provider config kind.
	usage map[string]resource.ModernTracker
	// tokens are shared across reconciles, so OIDC tokens are reused.
	tokens *armadaclient.TokenSources
	dial   func(context.Context, client.Reader, armadaclient.Config) (*armadaclient.Conn, error)
	// dialer, if set, opens connections instead of dialling endpoints.
	dialer func(context.Context, string) (net.Conn, error)
	// record records the events of Queues released with their Armada.
	record event.Recorder
	// releaseAfter is how long a Queue waits for Armada once its provider
	// config is being deleted.
	releaseAfter time.Duration
	// now is the clock.
	now func() time.Time
}

// NewConnector returns a Connector that reads configs and Secrets through
// kube and records usages as ProviderConfigUsages or
// ClusterProviderConfigUsages.
func NewConnector(kube client.Client) *Connector {
	return &Connector{
		kube: kube,
		usage: map[string]resource.ModernTracker{
			armadav1.ProviderConfigKind:        resource.NewProviderConfigUsageTracker(kube, &armadav1.ProviderConfigUsage{}),
			armadav1.ClusterProviderConfigKind: resource.NewProviderConfigUsageTracker(kube, &armadav1.ClusterProviderConfigUsage{}),
		},
		tokens:       &armadaclient.TokenSources{},
		dial:         armadaclient.Dial,
		record:       event.NewNopRecorder(),
		releaseAfter: DefaultReleaseAfter,
		now:          time.Now,
	}
}

var _ managed.TypedExternalConnector[*armadav1.Queue] = &Connector{}

// Connect returns an External holding a new connection to the Armada cr's
// provider config names. A config being deleted is not tracked again (its
// Armada is going), and the External it returns knows so: see going.
func (c *Connector) Connect(ctx context.Context, cr *armadav1.Queue) (managed.TypedExternalClient[*armadav1.Queue], error) {
	ref := cr.GetProviderConfigReference()
	if ref == nil {
		return nil, errors.New("spec.providerConfigRef is not set")
	}
	t, ok := c.usage[ref.Kind]
	if !ok {
		return nil, errors.Errorf("spec.providerConfigRef.kind %q is neither %s nor %s", ref.Kind, armadav1.ProviderConfigKind, armadav1.ClusterProviderConfigKind)
	}
	cfg := armadaclient.Config{Tokens: c.tokens, Dialer: c.dialer}
	g := &going{config: ref.Kind + " " + ref.Name, after: c.releaseAfter, kube: c.kube, record: c.record}
	var pc client.Object
	switch ref.Kind {
	case armadav1.ProviderConfigKind:
		p := &armadav1.ProviderConfig{}
		pc, g.usage = p, &armadav1.ProviderConfigUsage{}
		g.config = fmt.Sprintf("%s %s/%s", ref.Kind, cr.GetNamespace(), ref.Name)
		err := c.kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: ref.Name}, p)
		if kerrors.IsNotFound(err) && meta.WasDeleted(cr) {
			// No config, so no Armada to reach: nothing holds the queue.
			return &External{going: g, now: c.now}, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "cannot get ProviderConfig %s/%s", cr.GetNamespace(), ref.Name)
		}
		cfg.Spec, cfg.Namespace = p.Spec, p.GetNamespace()
	default:
		p := &armadav1.ClusterProviderConfig{}
		pc, g.usage = p, &armadav1.ClusterProviderConfigUsage{}
		err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, p)
		if kerrors.IsNotFound(err) && meta.WasDeleted(cr) {
			return &External{going: g, now: c.now}, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "cannot get ClusterProviderConfig %s", ref.Name)
		}
		cfg.Spec = p.Spec
	}
	g.since = deletionTime(pc)
	if g.since.IsZero() {
		g = nil
		if err := t.Track(ctx, cr); err != nil {
			return nil, errors.Wrap(err, "cannot track provider config usage")
		}
	}
	conn, err := c.dial(ctx, c.kube, cfg)
	if err != nil && g != nil {
		// Its Secret, say, went with the Armada.
		g.cause = errors.Wrap(err, "cannot connect to Armada")
		return &External{going: g, now: c.now}, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "cannot connect to Armada")
	}
	e := NewExternal(conn)
	e.going, e.now = g, c.now
	return e, nil
}

// newConnector is NewConnector with the options of Setup.
func newConnector(kube client.Client, o Options, record event.Recorder) *Connector {
	c := NewConnector(kube)
	c.dialer, c.record = o.Dialer, record
	if o.ReleaseAfter > 0 {
		c.releaseAfter = o.ReleaseAfter
	}
	return c
}
