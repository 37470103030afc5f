package conformance

import (
	"net"
	"strconv"
	"testing"
)

// serveFarEnds makes the example's Postgres and Redis far ends reach the
// private servers through their names, for every process alike.
func serveFarEnds(t *testing.T, svc *services, f farEnds) {
	t.Helper()
	for _, a := range f.Postgres {
		relayName(t, svc.Names, a, net.JoinHostPort(svc.PG.Host, strconv.Itoa(svc.PG.Port)))
	}
	for _, a := range f.Redis {
		relayName(t, svc.Names, a, svc.Redis.Addr())
	}
	svc.PulsarAt = f.Pulsar
}

// resolveNames gives a long-running component with a pulsar.URL its own
// Pulsar broker listener at the example's Pulsar far end, and writes rn's
// hosts file.
func resolveNames(t *testing.T, svc *services, rn *run) {
	t.Helper()
	own := map[string]string{}
	if raw, _ := rn.Effective("pulsar.URL"); raw != "" && !rn.Job && svc.PulsarAt != "" {
		host, port, err := net.SplitHostPort(svc.PulsarAt)
		if err != nil {
			t.Fatalf("the example's Pulsar far end %q is not host:port", svc.PulsarAt)
		}
		if rn.Pulsar == nil {
			rn.Pulsar = startPulsarBroker(t, net.JoinHostPort(svc.Names.Address(), port))
		}
		ip, _, _ := net.SplitHostPort(rn.Pulsar.Addr)
		own[host] = ip
	}
	hosts, err := svc.Names.HostsFile(rn.Root, own)
	if err != nil {
		t.Fatal(err)
	}
	rn.HostsFile = hosts
}
