// Package gosdk is a stub of github.com/nebius/gosdk with only the API
// provider-kubernetes v1.3.1 uses. Every constructor fails: Nebius
// authentication is not available in this build.
package gosdk

import (
	"context"
	"errors"

	"github.com/nebius/gosdk/auth"
)

// errUnavailable is returned by every function of this stub.
var errUnavailable = errors.New("nebius auth is not available in this build")

// SDK is a Nebius SDK client. The stub never returns one.
type SDK struct{}

// Option configures an SDK.
type Option interface{ option() }

// Credentials are the credentials an SDK authenticates with.
type Credentials interface{ credentials() }

type credentialsOption struct{}

func (credentialsOption) option() {}

type serviceAccountCredentials struct{}

func (serviceAccountCredentials) credentials() {}

// New always fails: Nebius authentication is not available in this build.
func New(_ context.Context, _ ...Option) (*SDK, error) {
	return nil, errUnavailable
}

// WithCredentials returns an Option that sets the SDK's credentials.
func WithCredentials(_ Credentials) Option { return credentialsOption{} }

// ServiceAccountReader returns Credentials read from a service account.
func ServiceAccountReader(_ auth.ServiceAccountReader) Credentials {
	return serviceAccountCredentials{}
}

// BearerToken always fails: Nebius authentication is not available in this
// build.
func (*SDK) BearerToken(_ context.Context) (auth.BearerToken, error) {
	return auth.BearerToken{}, errUnavailable
}
