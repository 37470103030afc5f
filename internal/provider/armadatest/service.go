package armadatest

import (
	"context"

	"github.com/armadaproject/armada/pkg/api"
	"github.com/armadaproject/armada/pkg/client/queue"
	"github.com/gogo/protobuf/types"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// queueService implements Armada's QueueService over a Server's queues.
// Methods it does not embed answer Unimplemented. As in Armada v0.22.7,
// whose Postgres queue repository upserts, CreateQueue and UpdateQueue both
// create or replace the queue: neither returns AlreadyExists or NotFound.
type queueService struct {
	api.UnimplementedQueueServiceServer

	s *Server
}

// canonical validates q and returns it as Armada stores and reports it,
// using Armada's own queue model.
func canonical(q *api.Queue) (*api.Queue, error) {
	if q.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "queue name must not be empty")
	}
	m, err := queue.NewQueue(q)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "error validating queue: %s", err)
	}
	return cloneQueue(m.ToAPI()), nil
}

func (q *queueService) CreateQueue(ctx context.Context, req *api.Queue) (*types.Empty, error) {
	p := principalFrom(ctx)
	if err := q.s.authorize(p, CreateQueue); err != nil {
		return nil, err
	}
	req = cloneQueue(req)
	if len(req.GetUserOwners()) == 0 {
		req.UserOwners = []string{p.name}
	}
	return q.store(req)
}

func (q *queueService) UpdateQueue(ctx context.Context, req *api.Queue) (*types.Empty, error) {
	if err := q.s.authorize(principalFrom(ctx), CreateQueue); err != nil {
		return nil, err
	}
	return q.store(req)
}

// store validates a queue as Armada does and upserts it, as Armada's
// Postgres queue repository does for both CreateQueue and UpdateQueue.
func (q *queueService) store(req *api.Queue) (*types.Empty, error) {
	c, err := canonical(req)
	if err != nil {
		return nil, err
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	q.s.queues[c.GetName()] = c
	return &types.Empty{}, nil
}

func (q *queueService) DeleteQueue(ctx context.Context, req *api.QueueDeleteRequest) (*types.Empty, error) {
	if err := q.s.authorize(principalFrom(ctx), DeleteQueue); err != nil {
		return nil, err
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	// Armada's DeleteQueue succeeds whether or not the queue exists.
	delete(q.s.queues, req.GetName())
	return &types.Empty{}, nil
}

func (q *queueService) GetQueue(_ context.Context, req *api.QueueGetRequest) (*api.Queue, error) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	c, ok := q.s.queues[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "error: could not find queue %q", req.GetName())
	}
	return cloneQueue(c), nil
}
