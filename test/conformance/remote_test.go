package conformance

import (
	"regexp"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/armadaproject/armada-crossplane/internal/harness/conformance"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// remoteCase is one run of a remote executor.
type remoteCase struct {
	name string
	// env changes the rendered environment: a variable with an empty
	// value is removed.
	env []podrun.EnvVar
	// auth replaces the scheduler's auth in the executor API, if set.
	auth *conformance.SchedulerAuth
	// want matches the executor's lease outcome in its log: conformance.LeaseOK, or
	// the error of leaseFailed.
	want *regexp.Regexp
	// code is what the executor API must answer every call of the run
	// with; noCalls if the run must make none.
	code codes.Code
}

// noCalls is a remoteCase code for runs that must not get as far as a call.
const noCalls = codes.Code(1000)

// checkRemoteExecutor runs a rendered remote executor against its worker
// cluster and the executor API, as rendered, and proves it connects over
// TLS trusting the private CA through the mounted caSecretRef and
// SSL_CERT_FILE, leases as its own identity with the scheduler's password
// for it, and holds execute_jobs. With negative, it then shows each of
// those is needed: without SSL_CERT_FILE the handshake fails, with a wrong
// password the call is Unauthenticated, and without an execute_jobs grant
// PermissionDenied, each seen in the executor's log and by the API.
func checkRemoteExecutor(t *testing.T, e *conformance.Env, svc *conformance.Services, free func() int, re *conformance.RemoteEnv, rn *conformance.Run, kubeconfig string, negative bool) {
	t.Helper()
	user, _ := rn.Effective("executorApiConnection.basicAuth.username")
	clusterID, _ := rn.Effective("application.clusterId")
	pool, _ := rn.Effective("application.pool")
	if user == "" || clusterID == "" {
		t.Fatalf("%s: the rendered config sets no executorApiConnection.basicAuth.username or application.clusterId", rn.ID())
	}
	if _, ok := rn.Inv.Lookup("SSL_CERT_FILE"); !ok {
		t.Errorf("%s: the rendered container sets no SSL_CERT_FILE, so Armada's client trusts only system roots", rn.ID())
	}
	good := re.API.CurrentAuth()
	if u, ok := good.Users[user]; !ok || u.Password == "" {
		t.Fatalf("%s: the scheduler has no user %s with a password", rn.ID(), user)
	}

	cases := []remoteCase{{name: "Composed", want: conformance.LeaseOK, code: codes.OK}}
	if negative {
		password, _ := rn.Inv.Lookup("ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD")
		denied := good
		denied.ExecuteJobs = slices.DeleteFunc(slices.Clone(good.ExecuteJobs), func(g string) bool {
			return slices.Contains(good.Users[user].Groups, g) || g == conformance.EveryoneGroup
		})
		cases = append(cases,
			remoteCase{
				name: "NoSSLCertFile", env: []podrun.EnvVar{{Name: "SSL_CERT_FILE"}}, code: noCalls,
				want: regexp.MustCompile(`x509: certificate signed by unknown authority`),
			},
			// The scheduler authenticates a stream before reading it, so
			// the executor logs the refusal, or EOF if it arrived before
			// the executor sent its request; the API's record tells.
			remoteCase{
				name: "WrongPassword", env: []podrun.EnvVar{{Name: "ARMADA_EXECUTORAPICONNECTION_BASICAUTH_PASSWORD", Value: password + "-wrong"}}, code: codes.Unauthenticated,
				want: regexp.MustCompile(`code = Unauthenticated|^EOF$`),
			},
			remoteCase{
				name: "NoExecuteJobsGrant", auth: &denied, code: codes.PermissionDenied,
				want: regexp.MustCompile(`code = PermissionDenied`),
			},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.auth != nil {
				re.API.SetAuth(*c.auth)
				defer re.API.SetAuth(good)
			}
			before, hsBefore, proxied := len(re.API.Calls()), len(re.API.Handshakes()), len(re.Proxy.Requested())
			x := conformance.RunExecutor(t, e, svc, free, rn, append([]podrun.EnvVar{
				{Name: "KUBECONFIG", Value: kubeconfig},
				{Name: "HTTPS_PROXY", Value: re.Proxy.URL},
			}, c.env...))
			defer x.Proc.Stop()
			outcome := x.Outcome
			if !c.want.MatchString(outcome) {
				t.Errorf("%s: lease outcome %q, want %q", rn.ID(), outcome, c.want)
			}
			calls, hs := re.API.Calls()[before:], re.API.Handshakes()[hsBefore:]
			requested := re.Proxy.Requested()[proxied:]
			if len(requested) == 0 {
				t.Errorf("%s never dialed the executor API", rn.ID())
			}
			for _, r := range requested {
				if r != "CONNECT "+re.URL {
					t.Errorf("%s dialed %q, not the rendered armadaUrl %s", rn.ID(), r, re.URL)
				}
			}
			t.Logf("%s: lease outcome %q; executor API saw %d TLS handshakes (failed: %v) and calls %+v", rn.ID(), outcome, len(hs), conformance.FailedHandshakes(hs), calls)
			switch {
			case c.code == noCalls:
				if len(calls) > 0 || len(conformance.FailedHandshakes(hs)) == 0 {
					t.Errorf("%s: want failed TLS handshakes and no calls, got handshakes %q and calls %+v", rn.ID(), hs, calls)
				}
			case len(calls) == 0:
				t.Errorf("%s: the executor API answered no calls", rn.ID())
			}
			for _, a := range calls {
				if c.code != noCalls && (a.Code != c.code || a.User != user) {
					t.Errorf("%s: the executor API answered %+v; want code %s for user %s", rn.ID(), a, c.code, user)
				}
			}
			if c.code != codes.OK {
				return
			}
			ok := slices.ContainsFunc(calls, func(a conformance.APICall) bool {
				return a.Method == "LeaseJobRuns" && a.ExecutorID == clusterID && a.Pool == pool
			})
			if !ok {
				t.Errorf("%s: no LeaseJobRuns for executor %s in pool %s", rn.ID(), clusterID, pool)
			}
			conformance.CheckLeasing(t, e, rn, x)
		})
	}
}
