package queue

import (
	"context"
	"net"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
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
}

// NewConnector returns a Connector that reads configs and Secrets through
// kube and records usages as ProviderConfigUsages or
// ClusterProviderConfigUsages.
func NewConnector(kube client.Client) *Connector {
	return &Connector{
		kube: kube,
		usage: map[string]resource.ModernTracker{
			v1alpha1.ProviderConfigKind:        resource.NewProviderConfigUsageTracker(kube, &v1alpha1.ProviderConfigUsage{}),
			v1alpha1.ClusterProviderConfigKind: resource.NewProviderConfigUsageTracker(kube, &v1alpha1.ClusterProviderConfigUsage{}),
		},
		tokens: &armadaclient.TokenSources{},
		dial:   armadaclient.Dial,
	}
}

var _ managed.TypedExternalConnector[*v1alpha1.Queue] = &Connector{}

// Connect returns an External holding a new connection to the Armada cr's
// provider config names.
func (c *Connector) Connect(ctx context.Context, cr *v1alpha1.Queue) (managed.TypedExternalClient[*v1alpha1.Queue], error) {
	ref := cr.GetProviderConfigReference()
	if ref == nil {
		return nil, errors.New("spec.providerConfigRef is not set")
	}
	t, ok := c.usage[ref.Kind]
	if !ok {
		return nil, errors.Errorf("spec.providerConfigRef.kind %q is neither %s nor %s", ref.Kind, v1alpha1.ProviderConfigKind, v1alpha1.ClusterProviderConfigKind)
	}
	if err := t.Track(ctx, cr); err != nil {
		return nil, errors.Wrap(err, "cannot track provider config usage")
	}
	cfg := armadaclient.Config{Tokens: c.tokens, Dialer: c.dialer}
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := c.kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: ref.Name}, pc); err != nil {
			return nil, errors.Wrapf(err, "cannot get ProviderConfig %s/%s", cr.GetNamespace(), ref.Name)
		}
		cfg.Spec, cfg.Namespace = pc.Spec, pc.GetNamespace()
	default:
		cpc := &v1alpha1.ClusterProviderConfig{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
			return nil, errors.Wrapf(err, "cannot get ClusterProviderConfig %s", ref.Name)
		}
		cfg.Spec = cpc.Spec
	}
	conn, err := c.dial(ctx, c.kube, cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot connect to Armada")
	}
	return NewExternal(conn), nil
}

// newConnector is NewConnector with a dialer.
func newConnector(kube client.Client, dialer func(context.Context, string) (net.Conn, error)) *Connector {
	c := NewConnector(kube)
	c.dialer = dialer
	return c
}
