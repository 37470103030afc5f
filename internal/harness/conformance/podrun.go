package conformance

import (
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// renderSources are a render's Secrets and ConfigMaps, and the values of
// the Secrets filled outside the render: the user's Secrets, and what a
// worker cluster or provider-kubernetes writes into a rendered one.
type renderSources struct {
	render   *Render
	supplied map[SecretRef]string
}

func (s renderSources) ConfigMap(name string) (map[string][]byte, bool, error) {
	return s.render.ConfigMap(name)
}

func (s renderSources) Secret(name string) (map[string][]byte, bool, error) {
	data, found, err := s.render.Secret(name)
	if err != nil {
		return nil, false, err
	}
	if !found {
		data = map[string][]byte{}
	}
	for ref, v := range s.supplied {
		if _, rendered := data[ref.Key]; ref.Name == name && !rendered {
			data[ref.Key] = []byte(v)
		}
	}
	return data, found || len(data) > 0, nil
}

// startProcess starts a process (podrun.Start) that is killed when the
// test ends.
func startProcess(t *testing.T, bin, dir string, args, env []string, logPath string) (*podrun.Process, error) {
	t.Helper()
	p, err := podrun.Start(bin, dir, args, env, logPath)
	if err != nil {
		return nil, err
	}
	t.Cleanup(p.Stop)
	return p, nil
}

// newNames returns the example's Names, whose relays stop when the test
// ends.
func newNames(t *testing.T) *podrun.Names {
	t.Helper()
	n := podrun.NewNames()
	t.Cleanup(n.Close)
	return n
}

// RelayName makes addr reach target through n, failing the test if it
// cannot.
func RelayName(t *testing.T, n *podrun.Names, addr, target string) {
	t.Helper()
	if err := n.Relay(addr, target); err != nil {
		t.Fatal(err)
	}
}

// armadaConfig is what one Armada process loads (podrun.Config).
type armadaConfig = podrun.Config

var (
	loadArmadaConfig = podrun.LoadConfig
	lookup           = podrun.Lookup
	envName          = podrun.EnvName
	portKeys         = podrun.PortKeys
	portOverrides    = podrun.PortOverrides
)
