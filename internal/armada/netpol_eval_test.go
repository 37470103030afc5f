package armada

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// This file is a model of Kubernetes NetworkPolicy semantics
// (networking.k8s.io/v1), written for the tests: it is not a CNI, and it
// decides only what the API's documented semantics decide.
//
//   - A pod is isolated for a direction when any policy in its namespace
//     selects it with that policy type. policyTypes left empty means
//     Ingress, plus Egress when the policy has egress rules.
//   - An isolated pod allows a connection in that direction when some
//     rule of some policy selecting it matches both the peer and the
//     port; a non-isolated pod allows everything.
//   - A connection is allowed when the source's egress and the
//     destination's ingress both allow it. Endpoints outside the cluster
//     (the API server's address, external services) have no policies.
//   - Peers: podSelector alone selects pods in the policy's namespace;
//     namespaceSelector alone every pod in the selected namespaces; both
//     the selected pods in the selected namespaces; ipBlock an address
//     range minus its exceptions. An empty peer list matches everything.
//   - Ports: no ports matches every port; a port entry matches its
//     protocol (TCP when unset) and its port (every port when unset, up
//     to endPort when set).
//
// What no CNI lets a policy decide (the kubelet's probes from the node,
// hostNetwork pods) is outside the model.

// A netEndpoint is a pod or an address outside the cluster.
type netEndpoint struct {
	// Name identifies it in test output.
	Name string
	// Namespace is empty for an address outside the cluster.
	Namespace string
	Labels    map[string]string
	IP        netip.Addr
	// NamedPorts are a pod's container ports by name.
	NamedPorts map[string]int32
}

// netModel is a cluster's namespaces and NetworkPolicies.
type netModel struct {
	// Namespaces are the namespaces' labels by name.
	Namespaces map[string]map[string]string
	Policies   []*networkingv1.NetworkPolicy
	// selectors caches converted label selectors.
	selectors map[*metav1.LabelSelector]labels.Selector
}

func (m *netModel) selector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	if sel, ok := m.selectors[s]; ok {
		return sel
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatalf("invalid label selector %v: %v", s, err)
	}
	if m.selectors == nil {
		m.selectors = map[*metav1.LabelSelector]labels.Selector{}
	}
	m.selectors[s] = sel
	return sel
}

// policyTypes are a policy's effective types.
func policyTypes(p *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(p.Spec.PolicyTypes) == 0 {
		return true, len(p.Spec.Egress) > 0
	}
	for _, pt := range p.Spec.PolicyTypes {
		switch pt {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// selecting are the policies that select a pod for a direction.
func (m *netModel) selecting(t *testing.T, e netEndpoint, egress bool) []*networkingv1.NetworkPolicy {
	t.Helper()
	if e.Namespace == "" {
		return nil
	}
	var out []*networkingv1.NetworkPolicy
	for _, p := range m.Policies {
		if p.Namespace != e.Namespace || !m.selector(t, &p.Spec.PodSelector).Matches(labels.Set(e.Labels)) {
			continue
		}
		in, eg := policyTypes(p)
		if (egress && eg) || (!egress && in) {
			out = append(out, p)
		}
	}
	return out
}

// peerMatches says whether a peer of a policy in namespace ns matches e.
func (m *netModel) peerMatches(t *testing.T, ns string, peer networkingv1.NetworkPolicyPeer, e netEndpoint) bool {
	t.Helper()
	if b := peer.IPBlock; b != nil {
		cidr, err := netip.ParsePrefix(b.CIDR)
		if err != nil {
			t.Fatalf("invalid ipBlock %q: %v", b.CIDR, err)
		}
		if !cidr.Contains(e.IP) {
			return false
		}
		for _, x := range b.Except {
			ex, err := netip.ParsePrefix(x)
			if err != nil {
				t.Fatalf("invalid ipBlock except %q: %v", x, err)
			}
			if ex.Contains(e.IP) {
				return false
			}
		}
		return true
	}
	if e.Namespace == "" {
		return false
	}
	if peer.NamespaceSelector == nil {
		if e.Namespace != ns {
			return false
		}
	} else if !m.selector(t, peer.NamespaceSelector).Matches(labels.Set(m.Namespaces[e.Namespace])) {
		return false
	}
	return peer.PodSelector == nil || m.selector(t, peer.PodSelector).Matches(labels.Set(e.Labels))
}

// portMatches says whether a rule's ports admit a port on dst.
func portMatches(t *testing.T, ports []networkingv1.NetworkPolicyPort, dst netEndpoint, port int32, proto corev1.Protocol) bool {
	t.Helper()
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		n := p.Port.IntVal
		if p.Port.StrVal != "" {
			named, ok := dst.NamedPorts[p.Port.StrVal]
			if !ok {
				continue
			}
			n = named
		}
		if port == n || (p.EndPort != nil && port >= n && port <= *p.EndPort) {
			return true
		}
	}
	return false
}

// allowed says whether src may open a connection to port/proto on dst.
func (m *netModel) allowed(t *testing.T, src, dst netEndpoint, port int32, proto corev1.Protocol) bool {
	t.Helper()
	if ps := m.selecting(t, src, true); len(ps) > 0 && !m.anyRule(t, ps, true, src, dst, port, proto) {
		return false
	}
	if ps := m.selecting(t, dst, false); len(ps) > 0 && !m.anyRule(t, ps, false, src, dst, port, proto) {
		return false
	}
	return true
}

// anyRule says whether a rule of the policies admits the connection; peer
// is dst for egress and src for ingress.
func (m *netModel) anyRule(t *testing.T, ps []*networkingv1.NetworkPolicy, egress bool, src, dst netEndpoint, port int32, proto corev1.Protocol) bool {
	t.Helper()
	for _, p := range ps {
		if egress {
			for _, r := range p.Spec.Egress {
				if portMatches(t, r.Ports, dst, port, proto) && m.peersMatch(t, p.Namespace, r.To, dst) {
					return true
				}
			}
			continue
		}
		for _, r := range p.Spec.Ingress {
			if portMatches(t, r.Ports, dst, port, proto) && m.peersMatch(t, p.Namespace, r.From, src) {
				return true
			}
		}
	}
	return false
}

func (m *netModel) peersMatch(t *testing.T, ns string, peers []networkingv1.NetworkPolicyPeer, e netEndpoint) bool {
	t.Helper()
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if m.peerMatches(t, ns, peer, e) {
			return true
		}
	}
	return false
}

// TestNetModel checks the model itself on the semantics' corner cases.
func TestNetModel(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }
	a := netEndpoint{Name: "a", Namespace: "ns", Labels: map[string]string{"app": "a"}, IP: netip.MustParseAddr("10.0.0.1")}
	b := netEndpoint{Name: "b", Namespace: "ns", Labels: map[string]string{"app": "b"}, IP: netip.MustParseAddr("10.0.0.2"), NamedPorts: map[string]int32{"web": 8080}}
	c := netEndpoint{Name: "c", Namespace: "other", Labels: map[string]string{"app": "a"}, IP: netip.MustParseAddr("10.0.1.1")}
	ext := netEndpoint{Name: "ext", IP: netip.MustParseAddr("203.0.113.5")}
	nsLabels := map[string]map[string]string{"ns": {"kubernetes.io/metadata.name": "ns"}, "other": {"kubernetes.io/metadata.name": "other", "team": "x"}}
	pol := func(sel map[string]string, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
		p := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Ingress: in, Egress: eg}}
		p.Namespace = "ns"
		return p
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	cases := map[string]struct {
		policies []*networkingv1.NetworkPolicy
		src, dst netEndpoint
		port     int32
		proto    corev1.Protocol
		want     bool
	}{
		"NoPolicyAllows":        {src: a, dst: b, port: 80, proto: tcp, want: true},
		"DenyAllIngress":        {policies: []*networkingv1.NetworkPolicy{pol(nil, nil, nil, nil)}, src: a, dst: b, port: 80, proto: tcp},
		"ImplicitTypesNoEgress": {policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, nil, nil, nil)}, src: b, dst: ext, port: 80, proto: tcp, want: true},
		"ImplicitEgressType": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "a"}, nil, nil, []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}}}}}})},
			src:      a, dst: ext, port: 80, proto: tcp,
		},
		"EgressToPodSelector": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "a"}, both, nil, []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}}}}}})},
			src:      a, dst: b, port: 80, proto: tcp, want: true,
		},
		"PodSelectorIsOwnNamespaceOnly": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}}}, nil)},
			src:      c, dst: b, port: 80, proto: tcp,
		},
		"NamespaceAndPodSelector": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			}}}}, nil)},
			src: c, dst: b, port: 80, proto: tcp, want: true,
		},
		"NamespaceSelectorMiss": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}},
			}}}}, nil)},
			src: c, dst: b, port: 80, proto: tcp,
		},
		"PortAndProtocol": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: port(53)}}}}, nil)},
			src:      a, dst: b, port: 53, proto: tcp,
		},
		"DefaultProtocolTCP": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: port(53)}}}}, nil)},
			src:      a, dst: b, port: 53, proto: tcp, want: true,
		},
		"NamedPort": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("web"))}}}}, nil)},
			src:      a, dst: b, port: 8080, proto: tcp, want: true,
		},
		"EndPort": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: port(1000), EndPort: ptrInt32(2000)}}}}, nil)},
			src:      a, dst: b, port: 1500, proto: tcp, want: true,
		},
		"IPBlockExcept": {
			policies: []*networkingv1.NetworkPolicy{pol(map[string]string{"app": "a"}, both, nil, []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24", Except: []string{"203.0.113.0/29"}}}}}})},
			src:      a, dst: ext, port: 80, proto: tcp,
		},
		"EgressAndIngressBothNeeded": {
			policies: []*networkingv1.NetworkPolicy{
				pol(map[string]string{"app": "a"}, both, nil, []networkingv1.NetworkPolicyEgressRule{{}}),
				pol(map[string]string{"app": "b"}, both, nil, nil),
			},
			src: a, dst: b, port: 80, proto: tcp,
		},
		"PoliciesAreAdditive": {
			policies: []*networkingv1.NetworkPolicy{
				pol(nil, both, nil, nil),
				pol(map[string]string{"app": "b"}, both, []networkingv1.NetworkPolicyIngressRule{{}}, nil),
				pol(map[string]string{"app": "a"}, both, nil, []networkingv1.NetworkPolicyEgressRule{{}}),
			},
			src: a, dst: b, port: 80, proto: tcp, want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := &netModel{Namespaces: nsLabels, Policies: tc.policies}
			if got := m.allowed(t, tc.src, tc.dst, tc.port, tc.proto); got != tc.want {
				t.Errorf("allowed(%s -> %s:%d/%s) = %t, want %t", tc.src.Name, tc.dst.Name, tc.port, tc.proto, got, tc.want)
			}
		})
	}
}

// String is an endpoint's name in test output.
func (e netEndpoint) String() string {
	if e.Namespace == "" {
		return e.Name
	}
	return fmt.Sprintf("%s/%s", e.Namespace, e.Name)
}
