// Package auth is a stub of github.com/nebius/gosdk/auth with only the API
// provider-kubernetes v1.3.1 uses.
package auth

import (
	"context"
	"errors"
)

// BearerToken is an IAM bearer token.
type BearerToken struct {
	Token string
}

// ServiceAccount identifies a service account and its key.
type ServiceAccount struct {
	PublicKeyID      string
	ServiceAccountID string
}

// ServiceAccountReader reads a service account's credentials.
type ServiceAccountReader interface {
	ReadServiceAccount(ctx context.Context) (ServiceAccount, error)
}

type privateKeyParser struct{}

// ReadServiceAccount always fails: Nebius authentication is not available
// in this build.
func (privateKeyParser) ReadServiceAccount(context.Context) (ServiceAccount, error) {
	return ServiceAccount{}, errors.New("nebius auth is not available in this build")
}

// NewPrivateKeyParser returns a ServiceAccountReader for a PEM private key.
func NewPrivateKeyParser(_ []byte, _, _ string) ServiceAccountReader {
	return privateKeyParser{}
}
