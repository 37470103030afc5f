package conformance

import (
	"net"
	"strconv"
	"testing"
)

// serveFarEnds makes the example's Postgres, Redis and Pulsar far ends
// reach the private servers and the real broker through their names, for
// every process alike. Pulsar's lookups then send clients to the broker's
// advertised address, 127.0.0.1, as a real broker's send them to its pod.
func serveFarEnds(t *testing.T, svc *Services, f farEnds) {
	t.Helper()
	for _, a := range f.Postgres {
		RelayName(t, svc.Names, a, net.JoinHostPort(svc.PG.Host, strconv.Itoa(svc.PG.Port)))
	}
	for _, a := range f.Redis {
		RelayName(t, svc.Names, a, svc.Redis.Addr())
	}
	svc.PulsarAt = f.Pulsar
	if f.Pulsar != "" && svc.Pulsar != nil {
		RelayName(t, svc.Names, f.Pulsar, brokerAddr(svc.Pulsar))
	}
}

// resolveNames writes rn's hosts file.
func resolveNames(t *testing.T, svc *Services, rn *Run) {
	t.Helper()
	hosts, err := svc.Names.HostsFile(rn.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	rn.HostsFile = hosts
}
