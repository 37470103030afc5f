package conformance

import (
	"crypto/tls"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/armadaproject/armada/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// armadaAPI stands in for the Armada server's gRPC API, which the
// scheduler calls (armadaApi) to load its queue cache. The server cannot
// serve it here: it opens its gRPC port only once Pulsar is up.
//
// Both ends of the link come from the render, independently: the address
// from the server's side (the rendered Services that select the server's
// pods and forward to the grpcPort its config sets), the credentials the
// server accepts from its rendered auth.basicAuth.users. The scheduler
// dials its rendered armadaApi.armadaUrl by name through a CONNECT proxy
// that tunnels only those Service addresses, so a wrong host or port in
// the scheduler's config is refused as an unresolvable name would be, and
// a wrong user or password is Unauthenticated. When the server's config
// serves TLS, the stand-in serves the server's rendered certificate, so
// the scheduler must verify it for the name it dials with the CA its
// rendered SSL_CERT_FILE names.
type armadaAPI struct {
	api.UnimplementedSubmitServer

	// Addr is where the stand-in listens.
	Addr string
	// Authorities are the server's in-cluster addresses, host:port.
	Authorities []string
	// TLS is set when the server's rendered config serves TLS: the
	// stand-in then serves the server's rendered certificate and key.
	TLS bool

	auth SchedulerAuth

	mu    sync.Mutex
	calls []APICall
}

// startArmadaAPI serves the stand-in for an example's server, or returns
// nil if the example runs no server here.
func startArmadaAPI(t *testing.T, r *Render, runs []*Run, workloadOf map[*Run]podrun.Workload) *armadaAPI {
	t.Helper()
	var server *Run
	for _, rn := range runs {
		if rn.Inv.Component == "server" && !rn.Job && rn.Cluster == "" {
			server = rn
		}
	}
	if server == nil {
		return nil
	}
	v, _ := server.Effective("grpcPort")
	port, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: the server's grpcPort is %q, not a port", server.ID(), v)
	}
	authorities := r.ServiceAuthorities(workloadOf[server], port)
	if len(authorities) == 0 {
		t.Fatalf("%s: no rendered Service selects the server's pods and forwards to its grpcPort %d", server.ID(), port)
	}
	auth, err := schedulerAuthOf(server)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &armadaAPI{Addr: lis.Addr().String(), Authorities: authorities, auth: auth}
	var opts []grpc.ServerOption
	if cert, ok := serverCert(t, server); ok {
		a.TLS = true
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	}
	srv := grpc.NewServer(opts...)
	api.RegisterSubmitServer(srv, a)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return a
}

// serverCert loads the certificate and key the server's rendered config
// serves gRPC with (grpc.tls), from the files of its rendered volumes; ok
// is false if it serves plaintext.
func serverCert(t *testing.T, server *Run) (tls.Certificate, bool) {
	t.Helper()
	if on, _ := server.Effective("grpc.tls.enabled"); on != "true" {
		return tls.Certificate{}, false
	}
	certPath, _ := server.Effective("grpc.tls.certPath")
	keyPath, _ := server.Effective("grpc.tls.keyPath")
	rw := podrun.NewRewriter(server.Inv.Mounts)
	cert, err := tls.LoadX509KeyPair(rw.Rewrite(certPath), rw.Rewrite(keyPath))
	if err != nil {
		t.Fatalf("%s: cannot load the rendered grpc.tls certificate %s and key %s from its volumes: %v", server.ID(), certPath, keyPath, err)
	}
	return cert, true
}

// GetQueues authenticates the caller as the server would and streams one
// queue and the end marker. The server checks no permission on it
// (internal/server/queue/queue_service.go, GetQueues).
func (a *armadaAPI) GetQueues(_ *api.StreamingQueueGetRequest, stream api.Submit_GetQueuesServer) error {
	p, err := a.auth.authenticate(stream.Context())
	a.mu.Lock()
	a.calls = append(a.calls, APICall{Method: "GetQueues", User: p.Name, Code: status.Code(err), Err: errString(err)})
	a.mu.Unlock()
	if err != nil {
		return err
	}
	queue := &api.StreamingQueueMessage_Queue{Queue: &api.Queue{Name: "conformance", PriorityFactor: 1}}
	if err := stream.Send(&api.StreamingQueueMessage{Event: queue}); err != nil {
		return err
	}
	return stream.Send(&api.StreamingQueueMessage{Event: &api.StreamingQueueMessage_End{End: &api.EndMarker{}}})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Calls returns the calls answered so far.
func (a *armadaAPI) Calls() []APICall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// Route tunnels the server's addresses to the stand-in for a scheduler.
func (a *armadaAPI) Route(rn *Run, routes map[string]string) {
	if a == nil || rn.Inv.Component != "scheduler" {
		return
	}
	for _, au := range a.Authorities {
		routes[au] = a.Addr
	}
}

// checkArmadaAPI fails unless a scheduler loaded its queues from the
// stand-in as the user its rendered armadaApi names.
func checkArmadaAPI(o *outcome, a *armadaAPI, rn *Run) {
	if a == nil || rn.Inv.Component != "scheduler" {
		return
	}
	user, _ := rn.Effective("armadaApi.basicAuth.username")
	calls := a.Calls()
	if !slices.ContainsFunc(calls, func(c APICall) bool { return c.Code == codes.OK && c.User == user }) {
		o.errorf("did not load its queues from the server at %q as %q (the server's API answered %+v)", a.Authorities, user, calls)
		return
	}
	how := "plaintext"
	if a.TLS {
		how = "TLS with the server's rendered certificate"
	}
	o.Notes = append(o.Notes, "loaded its queue cache from the server's API at "+a.Authorities[0]+" ("+how+") as "+user)
}

// routedEnv gives a component its own CONNECT proxy, through HTTPS_PROXY,
// for the far ends the test serves by name: the OIDC provider and, for a
// scheduler, the server's API. Armada's HTTP and gRPC clients honour
// HTTPS_PROXY; every other name stays unreachable, as it is here without
// the proxy. It returns no proxy for a component with neither.
func routedEnv(t *testing.T, svc *Services, rn *Run) ([]podrun.EnvVar, *connectProxy) {
	t.Helper()
	routes := map[string]string{}
	svc.OIDC.Route(rn, routes)
	svc.ArmadaAPI.Route(rn, routes)
	if len(routes) == 0 {
		return nil, nil
	}
	proxy := startConnectProxy(t, routes)
	return append([]podrun.EnvVar{{Name: "HTTPS_PROXY", Value: proxy.URL}}, svc.OIDC.Env(rn)...), proxy
}

// ServiceAuthorities returns the in-cluster addresses (name.namespace.svc
// and its cluster.local form, with the Service port) of every rendered
// Service in w's cluster and namespace that selects w's pods and forwards
// to containerPort, by number or by the name of w's container port.
func (r *Render) ServiceAuthorities(w podrun.Workload, containerPort int) []string {
	var out []string
	for _, u := range r.Objects {
		if u.GetKind() != "Service" || u.GetNamespace() != w.Namespace || r.workerCluster(u) != w.Cluster {
			continue
		}
		s := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil || len(s.Spec.Selector) == 0 {
			continue
		}
		if !selects(s.Spec.Selector, w.Labels) {
			continue
		}
		for _, p := range s.Spec.Ports {
			if forwardsTo(p, w.Pod, containerPort) {
				host := s.Name + "." + s.Namespace + ".svc"
				port := strconv.Itoa(int(p.Port))
				out = append(out, net.JoinHostPort(host, port), net.JoinHostPort(host+".cluster.local", port))
			}
		}
	}
	return out
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// forwardsTo reports whether a Service port forwards to containerPort of
// a pod: by number, by the name of a container port, or (no targetPort)
// by the Service port's own number.
func forwardsTo(p corev1.ServicePort, pod corev1.PodSpec, containerPort int) bool {
	switch {
	case p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "":
		for _, c := range pod.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.StrVal && int(cp.ContainerPort) == containerPort {
					return true
				}
			}
		}
		return false
	case p.TargetPort.IntVal != 0:
		return int(p.TargetPort.IntVal) == containerPort
	default:
		return int(p.Port) == containerPort
	}
}
