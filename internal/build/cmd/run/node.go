package main

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/node"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// nodeReadyTimeout bounds the wait for the claim to be Ready on the real
// node: images pulled, migrations and Pulsar's topics, then every
// component Ready by the kubelet's probes.
const nodeReadyTimeout = 10 * time.Minute

// startOnNode runs every composed pod as a container on a real node
// (containerd, runc, the CNI bridge, a kubelet, kube-proxy, CoreDNS and
// kube-router enforcing the composed NetworkPolicies), from images built
// here as Armada's Dockerfiles lay them out, against private far ends
// reached at the claim's Service names, and waits until the claim is
// Ready by the kubelet's own probes. Jobs run there too, as containers.
func startOnNode(s *jobflow.Session, o demoOptions, cl jobflow.Claim, version string) demoRun {
	ctx := s.Context()
	cs, err := kubernetes.NewForConfig(o.cp.RESTConfig())
	if err != nil {
		s.Fatal(err)
	}
	fmt.Printf("\nBuilding the images the claim names (Armada %s's eight components, ghostunnel, Pulsar's)...\n", version)
	t := time.Now()
	images, err := node.ComposedImages(ctx, version, testenv.ToolBin(s, podrun.Ghostunnel, armada.TLSProxyVersion))
	if err != nil {
		s.Fatal(err)
	}
	fmt.Printf("  %d images in %s.\n", len(images), time.Since(t).Round(100*time.Millisecond))
	fmt.Println("Starting a real node: containerd, the kubelet, kube-proxy, CoreDNS and kube-router (NetworkPolicies enforced)...")
	no := node.Options{Config: o.cp.RESTConfig(), Images: images, Logf: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }}
	if o.login {
		// The components fetch the OpenID Provider's keys at its issuer's
		// name, which the cluster's DNS resolves to the node's host.
		no.HostNames = []string{jobflow.LoginHost}
	}
	n, err := node.Start(ctx, no)
	if err != nil {
		s.Fatal(err)
	}
	s.Cleanup(func() {
		if err := n.Stop(); err != nil {
			fmt.Println("  cannot stop the node:", err)
		}
	})
	bo := backendOptions(s, o.cp.Client(), o.claim)
	fmt.Printf("Starting PostgreSQL, Redis and Pulsar %s for the node's pods, at the claim's %s, %s and %s (Services to the node's bridge address %s)...\n",
		armada.PulsarVersion, bo.PostgresAddr, bo.RedisAddr, bo.PulsarAddr, n.HostAddress())
	be := jobflow.StartNodeBackends(s, n, cs, bo)
	fmt.Printf("  PostgreSQL at 127.0.0.1:%d, Redis at %s (both relayed from %s), Pulsar at %s (admin %s)\n",
		be.Postgres.Port, be.Redis.Addr(), n.HostAddress(), be.Pulsar.ServiceURL(), be.Pulsar.AdminURL())
	var idp *testenv.OIDC
	if o.login {
		idp = startLogin(s, o.cp.Client(), be, cl)
		_, port, err := net.SplitHostPort(jobflow.LoginAddr)
		if err != nil {
			s.Fatal(err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			s.Fatal(err)
		}
		if err := n.Relay(ctx, p, idp.Addr); err != nil {
			s.Fatal(err)
		}
		fmt.Printf("  The node's pods reach it at %s, which the cluster's DNS resolves to %s.\n", jobflow.LoginAddr, n.HostAddress())
	}

	d := jobflow.WaitFor(s, nodeReadyTimeout, "claim Ready (every component Ready by the kubelet's probes)", func() (bool, string) {
		st, r, m := cl.Condition("Ready")
		return st == statusTrue, fmt.Sprintf("Ready=%s %s: %s%s%s", st, r, firstLine(m), runnerSep, jobflow.PodsState(s, cs, cl.Namespace))
	}, newProgress())
	fmt.Printf("ArmadaClaim %s/%s is Ready (%s after the node started); node: %s.\n", cl.Namespace, cl.Name, d.Round(time.Second), n.Memory())
	jobflow.RelayServices(s, be.Names, cs, cl.Namespace)
	return demoRun{
		be: be, idp: idp,
		schedulerLogs: jobflow.NodeContainerLogs(s, n, cl.Namespace, cl.Name+"-scheduler-0", "scheduler"),
		job: func(ns string) map[string]any {
			return jobflow.NodeJobSpec(node.JobImage, ns, "-sleep=5s")
		},
	}
}
