// Package armadaclient connects provider-armada to an Armada server as a
// ProviderConfig or ClusterProviderConfig describes: one gRPC connection
// with TLS (or explicit plaintext) and per-call credentials read from
// Secrets. It uses Armada's own generated Go API.
package armadaclient

import (
	"context"
	"net"
	"time"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/gogo/protobuf/types"
	"google.golang.org/grpc"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// DefaultTimeout bounds each call to Armada unless the config sets
// timeoutSeconds.
const DefaultTimeout = 10 * time.Second

// QueueClient is the part of Armada's QueueService the provider uses.
// api.QueueServiceClient satisfies it.
type QueueClient interface {
	CreateQueue(ctx context.Context, in *api.Queue, opts ...grpc.CallOption) (*types.Empty, error)
	UpdateQueue(ctx context.Context, in *api.Queue, opts ...grpc.CallOption) (*types.Empty, error)
	DeleteQueue(ctx context.Context, in *api.QueueDeleteRequest, opts ...grpc.CallOption) (*types.Empty, error)
	GetQueue(ctx context.Context, in *api.QueueGetRequest, opts ...grpc.CallOption) (*api.Queue, error)
}

// Config is a resolved provider config.
type Config struct {
	// Spec is the ProviderConfig's or ClusterProviderConfig's spec.
	Spec armadav1.ProviderConfigSpec
	// Namespace is a namespaced ProviderConfig's namespace: its Secret
	// references may only name that namespace. Empty for a
	// ClusterProviderConfig, whose references must name one.
	Namespace string
	// Tokens, if set, shares OIDC tokens between connections made with
	// the same client credentials, so each reconcile does not fetch a new
	// one. Nil fetches a token per connection.
	Tokens *TokenSources
	// Dialer, if set, opens the connection instead of dialling the
	// endpoint's address: tests point an in-cluster Service address at a
	// local server with it.
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
}

// A Conn is one connection to Armada. Close it when done.
type Conn struct {
	// Queues calls Armada's QueueService.
	Queues QueueClient
	// Timeout bounds each call.
	Timeout time.Duration

	cc *grpc.ClientConn
}

// Dial reads the Secrets c references through kube and opens a
// connection to Armada. grpc connects lazily, so an unreachable server
// shows up as Unavailable on the first call, not here.
func Dial(ctx context.Context, kube client.Reader, c Config) (*Conn, error) {
	tc, err := transportCredentials(ctx, kube, c)
	if err != nil {
		return nil, err
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(tc)}
	if c.Dialer != nil {
		opts = append(opts, grpc.WithContextDialer(c.Dialer))
	}
	rc, err := perRPCCredentials(ctx, kube, c)
	if err != nil {
		return nil, err
	}
	if rc != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(rc))
	}
	target := c.Spec.Endpoint
	if c.Dialer != nil {
		// The dialer resolves the address itself.
		target = "passthrough:///" + target
	}
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot create gRPC client for %s", c.Spec.Endpoint)
	}
	return &Conn{Queues: api.NewQueueServiceClient(cc), Timeout: c.timeout(), cc: cc}, nil
}

// timeout bounds each call to Armada and each OIDC token fetch: the
// config's timeoutSeconds, or DefaultTimeout.
func (c Config) timeout() time.Duration {
	if t := c.Spec.TimeoutSeconds; t != nil && *t > 0 {
		return time.Duration(*t) * time.Second
	}
	return DefaultTimeout
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c == nil || c.cc == nil {
		return nil
	}
	return errors.Wrap(c.cc.Close(), "cannot close connection to Armada")
}
