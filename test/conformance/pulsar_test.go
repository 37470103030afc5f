package conformance

import (
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
)

// runTopicJobs runs every topic-init Job's script against the example's
// broker, through the Service name the render gives in ADMIN_URL, then
// checks from the broker that the topics every component uses exist as
// the claim asks, and, on a broker with token authentication, that a
// producer needs Armada's token.
func runTopicJobs(t *testing.T, e *conformance.Env, svc *conformance.Services, jobs []*conformance.TopicJob, runs []*conformance.Run) {
	t.Helper()
	if len(jobs) == 0 {
		t.Errorf("the render has no Pulsar topic-init Job: nothing creates the topics the components use")
		return
	}
	for _, j := range jobs {
		t.Run(j.Inv.Workload+"/"+j.Inv.Container, func(t *testing.T) {
			conformance.RunTopicJob(t, e, svc, j)
			conformance.CheckTopics(t, svc, j, runs)
			events, _ := j.Inv.Lookup("EVENTS_TOPIC")
			t.Run("Refusals", func(t *testing.T) { conformance.CheckPulsarRefusals(t, svc, events) })
		})
	}
}
