package armadatest_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/armadaproject/armada-crossplane/internal/provider/armadatest"
)

// call is one call a test case makes, as a user.
type call struct {
	user, password string
	do             func(ctx context.Context, c api.QueueServiceClient) error
}

func create(q *api.Queue) func(context.Context, api.QueueServiceClient) error {
	return func(ctx context.Context, c api.QueueServiceClient) error {
		_, err := c.CreateQueue(ctx, q)
		return err
	}
}

func TestServer(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		deny   string
		calls  []call
		// codes are the status codes of the calls, in order.
		codes []codes.Code
	}{
		"CreateTwice": {
			reason: "Armada v0.22.7's CreateQueue upserts.",
			calls: []call{
				{user: "admin", password: "pw", do: create(&api.Queue{Name: "q", PriorityFactor: 1})},
				{user: "admin", password: "pw", do: create(&api.Queue{Name: "q", PriorityFactor: 2})},
			},
			codes: []codes.Code{codes.OK, codes.OK},
		},
		"PriorityFactorBelowOne": {
			reason: "Armada's queue model rejects a factor below 1.",
			calls:  []call{{user: "admin", password: "pw", do: create(&api.Queue{Name: "q", PriorityFactor: 0.5})}},
			codes:  []codes.Code{codes.InvalidArgument},
		},
		"NoCreatePermission": {
			reason: "Only the admins group holds create_queue.",
			calls:  []call{{user: "viewer", password: "pw", do: create(&api.Queue{Name: "q", PriorityFactor: 1})}},
			codes:  []codes.Code{codes.PermissionDenied},
		},
		"WrongPassword": {
			reason: "Basic auth checks the password.",
			calls:  []call{{user: "admin", password: "nope", do: create(&api.Queue{Name: "q", PriorityFactor: 1})}},
			codes:  []codes.Code{codes.Unauthenticated},
		},
		"Denied": {
			reason: "Deny makes every call of a user fail, even one it may make.",
			deny:   "admin",
			calls:  []call{{user: "admin", password: "pw", do: create(&api.Queue{Name: "q", PriorityFactor: 1})}},
			codes:  []codes.Code{codes.PermissionDenied},
		},
		"UpdateAbsent": {
			reason: "Armada v0.22.7's UpdateQueue upserts too.",
			calls: []call{{user: "admin", password: "pw", do: func(ctx context.Context, c api.QueueServiceClient) error {
				_, err := c.UpdateQueue(ctx, &api.Queue{Name: "q", PriorityFactor: 1})
				return err
			}}},
			codes: []codes.Code{codes.OK},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := armadatest.Start(ctx, armadatest.Options{
				Users: map[string]armadatest.User{"admin": {Password: "pw", Groups: []string{"admins"}}, "viewer": {Password: "pw"}},
				PermissionGroups: map[armadatest.Permission][]string{
					armadatest.CreateQueue: {"admins"}, armadatest.DeleteQueue: {"admins"},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.deny != "" {
				s.Deny(tc.deny, true)
			}
			cc, err := grpc.NewClient(s.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cc.Close() }()
			got := make([]codes.Code, 0, len(tc.calls))
			for _, c := range tc.calls {
				auth := "basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.password))
				cctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "authorization", auth), 5*time.Second)
				got = append(got, status.Code(c.do(cctx, api.NewQueueServiceClient(cc))))
				cancel()
			}
			if d := cmp.Diff(tc.codes, got); d != "" {
				t.Errorf("%s\ncodes: -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func TestStopStart(t *testing.T) {
	ctx := context.Background()
	s, err := armadatest.Start(ctx, armadatest.Options{Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetQueue(&api.Queue{Name: "q", PriorityFactor: 1})
	cc, err := grpc.NewClient(s.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	get := func() codes.Code {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := api.NewQueueServiceClient(cc).GetQueue(cctx, &api.QueueGetRequest{Name: "q"})
		return status.Code(err)
	}
	s.Stop()
	stopped := get()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The client reconnects with backoff; give it a moment.
	var started codes.Code
	for range 50 {
		if started = get(); started == codes.OK {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := cmp.Diff([]codes.Code{codes.Unavailable, codes.OK}, []codes.Code{stopped, started}); d != "" {
		t.Errorf("GetQueue while stopped, then after Start: -want, +got:\n%s", d)
	}
	if d := cmp.Diff([]string{"q"}, s.QueueNames()); d != "" {
		t.Errorf("queues kept across Stop and Start: -want, +got:\n%s", d)
	}
}
