package conformance

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// A link is a setting that several components must agree on, because one
// writes what another reads. Each member is a binary and the key it holds
// the setting under.
type link struct {
	Name    string
	Members map[string]string
}

// links are the settings Armada components must share; see the "Match
// these across components" pitfall in the Armada reference. Pulsar and
// Redis never run here, so agreement is checked on the effective config.
var links = []link{
	{Name: "Pulsar URL", Members: map[string]string{
		"server": "pulsar.URL", "scheduler": "pulsar.URL", "scheduleringester": "pulsar.URL",
		"lookoutingester": "pulsar.URL", "eventingester": "pulsar.URL",
	}},
	{Name: "Pulsar job set events topic", Members: map[string]string{
		"server": "pulsar.jobsetEventsTopic", "scheduler": "pulsar.jobsetEventsTopic", "scheduleringester": "pulsar.jobsetEventsTopic",
		"lookoutingester": "pulsar.jobsetEventsTopic", "eventingester": "pulsar.jobsetEventsTopic",
	}},
	{Name: "Pulsar control plane topic", Members: map[string]string{
		"server": "pulsar.controlPlaneEventsTopic", "scheduleringester": "pulsar.controlPlaneEventsTopic",
	}},
	{Name: "Redis addresses", Members: map[string]string{"server": "eventsApiRedis.addrs", "eventingester": "redis.addrs"}},
	{Name: "Redis database", Members: map[string]string{"server": "eventsApiRedis.db", "eventingester": "redis.db"}},
}

// wiringErrors describes every setting the long-running components of an
// example disagree on.
func wiringErrors(runs []*Run) []string {
	var errs []string
	for _, l := range links {
		seen := map[string][]string{}
		for _, rn := range runs {
			key, ok := l.Members[rn.Inv.Component]
			if rn.Job || !ok {
				continue
			}
			v, _ := rn.Effective(key)
			seen[v] = append(seen[v], rn.ID()+" "+key)
		}
		if len(seen) <= 1 {
			continue
		}
		got := make([]string, 0, len(seen))
		for v, who := range seen {
			got = append(got, fmt.Sprintf("%q from %s", v, strings.Join(who, ", ")))
		}
		sort.Strings(got)
		errs = append(errs, fmt.Sprintf("components disagree on the %s: %s", l.Name, strings.Join(got, "; ")))
	}
	return errs
}

// CheckWiring fails the test if the long-running components of an example
// disagree on a setting they share.
func CheckWiring(t *testing.T, runs []*Run) {
	t.Helper()
	for _, e := range wiringErrors(runs) {
		t.Error(e)
	}
}
