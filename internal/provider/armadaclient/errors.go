package armadaclient

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Describe turns a gRPC error from Armada into one a user can act on, such
// as "permission denied: user x lacks permission create_queue". The result
// still carries the gRPC status, so status.Code and IsNotFound work on it
// (and on errors that wrap it). Other errors are returned unchanged.
func Describe(err error) error {
	s, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	var what string
	switch s.Code() {
	case codes.PermissionDenied:
		what = "permission denied"
	case codes.Unauthenticated:
		what = "unauthenticated (check the provider config's credentials)"
	case codes.InvalidArgument:
		what = "rejected by Armada as invalid"
	case codes.Unavailable:
		what = "Armada is unavailable"
	case codes.DeadlineExceeded:
		what = "timed out waiting for Armada"
	case codes.NotFound:
		what = "not found"
	case codes.AlreadyExists:
		what = "already exists"
	default:
		what = s.Code().String()
	}
	return &rpcError{status: s, what: what}
}

// IsNotFound reports whether err is, or wraps, a gRPC NotFound.
func IsNotFound(err error) bool { return Code(err) == codes.NotFound }

// Code returns the gRPC code err carries or wraps; codes.Unknown if none,
// codes.OK for nil.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.Unknown
}

// An rpcError is a described gRPC error.
type rpcError struct {
	status *status.Status
	what   string
}

func (e *rpcError) Error() string { return e.what + ": " + e.status.Message() }

// GRPCStatus lets status.FromError and status.Code see the original status.
func (e *rpcError) GRPCStatus() *status.Status { return e.status }
