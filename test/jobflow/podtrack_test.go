package jobflow

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A podTracker records every job pod it sees in some clusters, polling
// each second: the pods (by UID) each Armada job had. A job whose pod was
// created again (a run restarted from nothing by a restarted executor)
// shows two, though Armada counts one run.
type podTracker struct {
	mu   sync.Mutex
	pods map[string]map[string]bool // job ID → pod UIDs
	stop func()
	done chan struct{}
}

// trackJobPods starts a podTracker over the job pods of jobSet in the
// clusters cs reach, until stopped.
func trackJobPods(ctx context.Context, jobSet string, cs ...client.Client) *podTracker {
	ctx, cancel := context.WithCancel(ctx)
	p := &podTracker{pods: map[string]map[string]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			for _, c := range cs {
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.HasLabels{"armada_job_id"}); err != nil {
					continue
				}
				p.mu.Lock()
				for _, pod := range pods.Items {
					if pod.Annotations["armada_jobset_id"] != jobSet {
						continue
					}
					id := pod.Labels["armada_job_id"]
					if p.pods[id] == nil {
						p.pods[id] = map[string]bool{}
					}
					p.pods[id][string(pod.UID)] = true
				}
				p.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return p
}

// Stop stops tracking and returns each job's number of pods seen.
func (p *podTracker) Stop() map[string]int {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	n := map[string]int{}
	for id, uids := range p.pods {
		n[id] = len(uids)
	}
	return n
}
