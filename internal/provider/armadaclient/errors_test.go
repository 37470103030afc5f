package armadaclient_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/provider/armadaclient"
)

func TestDescribe(t *testing.T) {
	type want struct {
		msg      string
		code     codes.Code
		notFound bool
	}
	cases := map[string]struct {
		reason string
		err    error
		want   want
	}{
		"PermissionDenied": {
			reason: "A denial names itself and keeps Armada's message.",
			err:    status.Error(codes.PermissionDenied, "error creating queue q: user x lacks create_queue"),
			want:   want{msg: "cannot create queue: permission denied: error creating queue q: user x lacks create_queue", code: codes.PermissionDenied},
		},
		"InvalidArgument": {
			reason: "Armada's validation errors say Armada rejected the queue.",
			err:    status.Error(codes.InvalidArgument, "priority factor cannot be lower than 1.0"),
			want:   want{msg: "cannot create queue: rejected by Armada as invalid: priority factor cannot be lower than 1.0", code: codes.InvalidArgument},
		},
		"Unauthenticated": {
			reason: "Bad credentials point at the provider config.",
			err:    status.Error(codes.Unauthenticated, "no"),
			want:   want{msg: "cannot create queue: unauthenticated (check the provider config's credentials): no", code: codes.Unauthenticated},
		},
		"Unavailable": {
			reason: "Unavailable is not NotFound.",
			err:    status.Error(codes.Unavailable, "connection refused"),
			want:   want{msg: "cannot create queue: Armada is unavailable: connection refused", code: codes.Unavailable},
		},
		"NotFound": {
			reason: "NotFound survives wrapping.",
			err:    status.Error(codes.NotFound, "could not find queue"),
			want:   want{msg: "cannot create queue: not found: could not find queue", code: codes.NotFound, notFound: true},
		},
		"NotGRPC": {
			reason: "Other errors pass through.",
			err:    errors.New("boom"),
			want:   want{msg: "cannot create queue: boom", code: codes.Unknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := errors.Wrap(armadaclient.Describe(tc.err), "cannot create queue")
			got := want{msg: err.Error(), code: armadaclient.Code(err), notFound: armadaclient.IsNotFound(err)}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("%s\nDescribe(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}
