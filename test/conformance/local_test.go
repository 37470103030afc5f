package conformance

import (
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// Lease outcomes a refused executor logs: the scheduler authenticates a
// stream before reading it, so the executor logs the refusal, or EOF if
// it arrived before the executor sent its request.
var (
	unauthenticated = regexp.MustCompile(`code = Unauthenticated|^EOF$`)
	unknownCA       = regexp.MustCompile(`x509: certificate signed by unknown authority`)
)

// homeMu is held while an example's in-cluster executors run against the
// API server every example shares (conformance.Env.Home): examples run at
// once compose objects of the same names there, which one would replace
// under the other's executors.
var homeMu sync.Mutex

// checkLocalExecutors proves the link from each in-cluster executor to
// the scheduler from both ends, with Armada's own code at both: the
// scheduler runs as rendered (see conformance.StartScheduler, with the real Pulsar) on its
// database, and the rendered Services' names for its gRPC port resolve, in
// each process's own hosts file (names), to a relay to it. The executor
// runs as rendered against a real kube-apiserver as its ServiceAccount,
// bound to the platform's fixed ClusterRole by the composed binding.
//
// The first executor also shows what each part is needed for: with a
// wrong password the scheduler refuses it (Unauthenticated) and records
// no executor; without SSL_CERT_FILE, when TLS is on, it refuses the
// scheduler's certificate (once per release: see checkLocalExecutor). Then, as composed, it leases, and the
// scheduler stores it in its executors table under the rendered
// clusterId: the proof from the far end.
func checkLocalExecutors(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, r *conformance.Render, runs []*conformance.Run, workloadOf map[*conformance.Run]podrun.Workload) int {
	t.Helper()
	var scheduler *conformance.Run
	var executors []*conformance.Run
	for _, rn := range runs {
		switch {
		case rn.Job || rn.Cluster != "":
		case rn.Inv.Component == "scheduler" && scheduler == nil:
			scheduler = rn
		case rn.Inv.Component == "executor":
			executors = append(executors, rn)
		}
	}
	if len(executors) == 0 {
		return 0
	}
	if scheduler == nil {
		t.Errorf("the render runs %d executors in this cluster but no scheduler for them to dial", len(executors))
		return 0
	}
	t.Run("executor to scheduler", func(t *testing.T) {
		homeMu.Lock()
		defer homeMu.Unlock()
		cp, err := e.Home.Get(conformance.ThisCluster)
		if err != nil {
			t.Fatal(err)
		}
		schp, grpcPort := conformance.StartScheduler(t, e, svc, free, scheduler)
		defer schp.Stop()
		v, _ := scheduler.Effective("grpc.port")
		port, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: grpc.port is %q, not a port", scheduler.ID(), v)
		}
		authorities := r.ServiceAuthorities(workloadOf[scheduler], port)
		if len(authorities) == 0 {
			t.Fatalf("%s: no rendered Service selects the scheduler's pods and forwards to its grpc.port %d", scheduler.ID(), port)
		}
		for _, a := range authorities {
			conformance.RelayName(t, svc.Names, a, net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)))
		}
		manifests, err := conformance.LocalManifests(r)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := scheduler.Effective("postgres.connection.dbname")
		for i, rn := range executors {
			t.Run(rn.ID(), func(t *testing.T) {
				kubeconfig := conformance.ServiceAccountKubeconfig(t, cp, manifests, workloadOf[rn], rn.Root)
				checkLocalExecutor(t, e, svc, free, rn, localLink{kubeconfig: kubeconfig, db: db, authorities: authorities}, i == 0)
			})
		}
	})
	return len(executors)
}

// localLink is what an in-cluster executor's check needs beside the
// render.
type localLink struct {
	// kubeconfig authenticates as the executor's ServiceAccount.
	kubeconfig string
	// db is the scheduler's database.
	db string
	// authorities are the scheduler's Service addresses.
	authorities []string
}

func checkLocalExecutor(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, rn *conformance.Run, l localLink, negative bool) {
	t.Helper()
	clusterID, _ := rn.Effective("application.clusterId")
	url, _ := rn.Effective("executorApiConnection.armadaUrl")
	if clusterID == "" {
		t.Fatalf("%s: the rendered config sets no application.clusterId", rn.ID())
	}
	if !slices.Contains(l.authorities, url) {
		t.Errorf("%s dials %q, which is none of the scheduler's Service addresses %v", rn.ID(), url, l.authorities)
	}
	stored := func() int {
		out, err := svc.PG.Exec(l.db, "SELECT count(*) FROM executors WHERE executor_id = "+testenv.QuoteLiteral(clusterID))
		if err != nil {
			t.Fatalf("cannot read the scheduler's executors table in database %s: %v", l.db, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("cannot parse %q as a count", out)
		}
		return n
	}
	type localCase struct {
		name string
		env  []podrun.EnvVar
		want *regexp.Regexp
	}
	var cases []localCase
	if negative {
		password, _ := rn.Inv.Lookup("ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD")
		cases = append(cases, localCase{
			name: "WrongPassword", want: unauthenticated,
			env: []podrun.EnvVar{{Name: "ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD", Value: password + "-wrong"}},
		})
	}
	// The executor gives up on a handshake it refuses only after its lease
	// request timeout (30 s), so this one is shown once per release.
	if _, ok := rn.Inv.Lookup("SSL_CERT_FILE"); ok && negative && e.ShowRefusedCA() {
		cases = append(cases, localCase{name: "NoSSLCertFile", env: []podrun.EnvVar{{Name: "SSL_CERT_FILE"}}, want: unknownCA})
	}
	cases = append(cases, localCase{name: "Composed", want: conformance.LeaseOK})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := conformance.RunExecutor(t, e, svc, free, rn, append([]podrun.EnvVar{{Name: "KUBECONFIG", Value: l.kubeconfig}}, c.env...))
			defer x.Proc.Stop()
			t.Logf("%s dialing %s: lease outcome %q", rn.ID(), url, x.Outcome)
			if !c.want.MatchString(x.Outcome) {
				t.Errorf("%s: lease outcome %q, want %q", rn.ID(), x.Outcome, c.want)
			}
			n := stored()
			switch {
			case c.want != conformance.LeaseOK && n != 0:
				t.Errorf("%s: the scheduler stored executor %s although the lease failed", rn.ID(), clusterID)
			case c.want == conformance.LeaseOK && n != 1:
				t.Errorf("%s: the scheduler's executors table has %d rows for %s after the executor leased; want 1", rn.ID(), n, clusterID)
			}
			if c.want == conformance.LeaseOK {
				conformance.CheckLeasing(t, e, rn, x)
			}
		})
	}
}
