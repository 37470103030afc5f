package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

const (
	// demoQueue is the queue make run adds to a claim that has none, for
	// its demo job; provider-armada creates it from the composed Queue.
	demoQueue = "demo"
	// demoJobSet is the demo job's job set.
	demoJobSet = "demo"
	// demoUser submits the demo job: the example's admin.
	demoUser = "admin"
)

// demoNodes are the KWOK Nodes jobs run on.
var demoNodes = []controlplane.Node{
	{Name: "kwok-node-1", CPU: "16", Memory: "64Gi"},
	{Name: "kwok-node-2", CPU: "16", Memory: "64Gi"},
}

// withDemoQueue adds queue demoQueue, owned by Armada's admin group, to a
// claim that has no queues, so the demo job has one to go to.
func withDemoQueue(docs []map[string]any) {
	for _, d := range docs {
		if d["kind"] != "ArmadaClaim" {
			continue
		}
		if qs, _, _ := unstructured.NestedSlice(d, "spec", "queues"); len(qs) > 0 {
			return
		}
		_ = unstructured.SetNestedSlice(d, []any{map[string]any{
			"name": demoQueue, "priorityFactor": "1", "groupOwners": []any{"armada-admins"},
		}}, "spec", "queues")
		fmt.Printf("The claim has no queues: adding queue %q (owned by group armada-admins) for the demo job.\n", demoQueue)
	}
}

// demoExecutorUpdateFrequency is how often the demo's scheduler reloads
// the executors its submit check judges jobs against, instead of Armada's
// 60 s: a job submitted before the first reload that sees the executor's
// Nodes is refused, so the demo waits for that reload.
const demoExecutorUpdateFrequency = "10s"

// withQuickSubmitCheck sets the scheduler's
// scheduling.executorUpdateFrequency (through the claim's config override,
// spec.components.scheduler.config) to demoExecutorUpdateFrequency,
// unless the claim sets it.
func withQuickSubmitCheck(docs []map[string]any) {
	path := []string{"spec", "components", "scheduler", "config", "scheduling", "executorUpdateFrequency"}
	for _, d := range docs {
		if d["kind"] != "ArmadaClaim" {
			continue
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(d, path...); found {
			return
		}
		_ = unstructured.SetNestedField(d, demoExecutorUpdateFrequency, path...)
		fmt.Printf("Setting %s to %s for the demo: the scheduler's submit check then sees the executor within seconds, not Armada's default minute.\n",
			strings.Join(path, "."), demoExecutorUpdateFrequency)
	}
}

// loginGroups are the groups the local OpenID Provider's user is in: the
// demo queue's owners.
var loginGroups = []string{"armada-admins"}

// withLogin adds spec.auth.oidc for a local OpenID Provider
// (jobflow.LoginAuth) to a claim that signs users in with basic auth
// only, so a person can sign in to its Lookout in a browser (Armada sends
// no basic-auth challenge a browser would answer); the demo starts the
// provider. It says whether it added it.
func withLogin(docs []map[string]any) bool {
	for _, d := range docs {
		if d["kind"] != "ArmadaClaim" {
			continue
		}
		if _, found, _ := unstructured.NestedMap(d, "spec", "auth", "oidc"); found {
			return false
		}
		_ = unstructured.SetNestedMap(d, jobflow.LoginAuth(), "spec", "auth", "oidc")
		fmt.Printf("Adding spec.auth.oidc to the claim: a local OpenID Provider (%s) signs people in to Lookout's UI; basic auth stays for armadactl.\n",
			jobflow.LoginIssuer)
		return true
	}
	return false
}

// demoOptions are what runDemo needs.
type demoOptions struct {
	cp    *controlplane.ControlPlane
	claim *unstructured.Unstructured
	// binsCmd builds the binaries the demo runs (make run-bins), if set.
	binsCmd string
	// exitAfter returns once the demo job has succeeded.
	exitAfter bool
	applied   time.Time
	// login: the claim signs people in through the local OpenID Provider
	// withLogin added, which the demo starts.
	login bool
	// node runs the composed pods as containers on a real node (package
	// node) instead of Armada's binaries as processes, jobs on KWOK.
	node bool
}

// runDemo brings the composed Armada up for real and runs one job
// through it: Armada's binaries run as composed (package podrun) against
// private PostgreSQL, Redis and Pulsar reached at the claim's addresses,
// KWOK Nodes take the job's pod, armadactl submits and watches it, and
// Lookout is asked for it. Everything it starts stops when it returns.
func runDemo(ctx context.Context, o demoOptions) error {
	if o.binsCmd != "" {
		fmt.Printf("\nBuilding what the job flow runs (%s; cached after the first run)...\n", o.binsCmd)
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", o.binsCmd) //nolint:gosec // The Makefile's own build command.
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return errors.Wrapf(err, "cannot build the job flow's binaries (%s)", o.binsCmd)
		}
	}
	fmt.Println("Starting kube-scheduler and KWOK...")
	if err := o.cp.StartJobFlow(ctx); err != nil {
		return err
	}
	s, err := jobflow.NewSession(ctx, func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) })
	if err != nil {
		return err
	}
	defer s.Close()
	err = s.Run(func() { demo(s, o) }) //nolint:contextcheck // demo takes ctx from s.Context().
	if ctx.Err() != nil {
		fmt.Println("\nInterrupted: stopping every process and removing the temporary directories...")
		return nil
	}
	return err
}

// demo is runDemo's work, failing s on error.
func demo(s *jobflow.Session, o demoOptions) {
	ctx, c := s.Context(), o.cp.Client()
	version, _, _ := unstructured.NestedString(o.claim.Object, "spec", "version")
	if version == "" {
		version = armada.DefaultVersion
	}
	rel, ctl, err := jobflow.FindRelease(ctx, version)
	if err != nil {
		s.Fatal(err)
	}
	cl := jobflow.Claim{T: s, Client: c, Namespace: o.claim.GetNamespace(), Name: o.claim.GetName()}
	var r demoRun
	if o.node {
		r = startOnNode(s, o, cl, version)
	} else {
		r = startOnKWOK(s, o, cl, version, rel)
	}
	be := r.be
	seen := jobflow.WaitExecutor(s, be.Postgres, cl.ExecutorClusterID(), newProgress())

	if err := jobflow.RunProvider(ctx, o.cp.RESTConfig(), be.Names, func(err error) { fmt.Println("  ", err) }); err != nil {
		s.Fatal(err)
	}
	queue := firstQueue(o.claim)
	jobflow.WaitFor(s, 3*time.Minute, "queue "+queue+" created by provider-armada", func() (bool, string) {
		st, r, m := cl.Condition("QueuesReady")
		return st == statusTrue, fmt.Sprintf("QueuesReady=%s %s: %s", st, r, firstLine(m))
	}, func(msg string) { fmt.Println("  waiting:", msg) })
	fmt.Printf("provider-armada created queue %s.\n", queue)
	// The scheduler logs each reload of the executors its submit check
	// judges jobs against: submit after the first one that saw ours, not a
	// whole period (one minute) after the executor first reported.
	jobflow.WaitSubmitCheckLogged(s, r.schedulerLogs, 1, seen, newProgress())
	if p := jobflow.LoggedSubmitCheckPeriod(r.schedulerLogs); p != "" {
		fmt.Printf("The scheduler's submit check reloads its executors every %s (its log).\n", p)
	}

	a := cl.Armadactl(ctl, be.Names)
	password := cl.Credential(demoUser)
	fmt.Printf("\nSubmitting one job to queue %s, job set %s, as %s (armadactl %s)...\n", queue, demoJobSet, demoUser, version)
	submitted := time.Now()
	if out, err := a.Submit(ctx, demoUser, password, queue, demoJobSet, r.job(firstJobNamespace(o.claim))); err != nil {
		s.Fatalf("%s: %v\n%s", a.Command("submit", "demo.yaml"), err, out)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	evs, out, err := a.Watch(wctx, demoUser, password, queue, demoJobSet, func(e jobflow.Event) {
		fmt.Printf("  %6.1fs  %-10s %s\n", time.Since(submitted).Seconds(), e.Type, e.JobID())
	})
	if err != nil {
		s.Fatalf("%s: %v\n%s", a.Command("watch", queue, demoJobSet, "--raw", "--exit-if-inactive"), err, out)
	}
	if got := jobflow.Types(evs); len(got) == 0 || got[len(got)-1] != "Succeeded" {
		s.Fatalf("the demo job did not succeed: its events were %v:\n%s", got, jobflow.RawEvents(evs))
	}
	lookout := cl.Lookout(be.Names)
	jobs := jobflow.WaitLookout(s, lookout, password, demoJobSet, "SUCCEEDED")
	fmt.Printf("The demo job succeeded: submit → Succeeded in %s; apply → demo job Succeeded in %s. Lookout shows job %s SUCCEEDED.\n",
		time.Since(submitted).Round(100*time.Millisecond), time.Since(o.applied).Round(time.Second), jobs[0].JobID)
	carryOn(s, o, a, lookout, cl.ExecutorClusterID(), queue, password, r.idp)
	if o.exitAfter {
		return
	}
	fmt.Println("Running until interrupted (Ctrl-C stops every process and removes the temporary directories).")
	<-ctx.Done()
}

// A demoRun is the composed Armada running, on KWOK Nodes or a real node:
// its far ends, the scheduler's log files (for the submit check's
// reloads), the demo job in a namespace, and the OpenID Provider people
// sign in to Lookout through, if started.
type demoRun struct {
	be            *jobflow.Backends
	schedulerLogs func() []string
	job           func(namespace string) map[string]any
	idp           *testenv.OIDC
}

// startOnKWOK runs every composed workload as Armada's own binaries
// (package podrun plays kubelet) against private far ends, with KWOK
// Nodes for jobs, and waits until the claim is Ready.
func startOnKWOK(s *jobflow.Session, o demoOptions, cl jobflow.Claim, version string, rel podrun.Release) demoRun {
	ctx, c := s.Context(), o.cp.Client()
	be := backends(s, c, o.claim)
	fmt.Printf("\nStarting %d KWOK Nodes for jobs; kube-scheduler binds the executor's pods to them...\n", len(demoNodes))
	fmt.Println("  (KWOK's pods run no containers: as root, make run runs every pod as a container on a real node instead; make run-node.)")
	if err := o.cp.AddNodes(ctx, demoNodes...); err != nil {
		s.Fatal(err)
	}
	var idp *testenv.OIDC
	if o.login {
		idp = startLogin(s, c, be, cl)
	}
	fmt.Printf("Running every composed workload as Armada %s's own binaries (package podrun plays kubelet)...\n", version)
	runner := jobflow.StartRunner(s, be, jobflow.RunnerOptions{
		Client: c, Namespace: o.claim.GetNamespace(), APIServer: o.cp.RESTConfig(),
		Releases: map[string]podrun.Release{version: rel},
	})
	d := jobflow.WaitFor(s, 10*time.Minute, "claim Ready (every component running and ready by its own probe)", func() (bool, string) {
		st, r, m := cl.Condition("Ready")
		return st == statusTrue, fmt.Sprintf("Ready=%s %s: %s%s%s", st, r, firstLine(m), runnerSep, jobflow.RunnerState(runner))
	}, newProgress())
	fmt.Printf("ArmadaClaim %s/%s is Ready (%s after the runner started).\n", cl.Namespace, cl.Name, d.Round(time.Second))
	return demoRun{
		be: be, idp: idp,
		schedulerLogs: jobflow.SchedulerLogs(runner, o.claim.GetName()),
		job:           func(ns string) map[string]any { return jobflow.JobSpec(ns, nil) },
	}
}

// runnerSep parts a wait's message from the runner's state, which only
// a failure prints.
const runnerSep = "\n  runner: "

// newProgress prints each new message of a wait, less the runner's state.
func newProgress() func(string) {
	last := ""
	return func(msg string) {
		msg, _, _ = strings.Cut(msg, runnerSep)
		if msg != last {
			fmt.Println("  waiting:", msg)
			last = msg
		}
	}
}

// carryOn prints how to go on by hand: an armadactl script, the job file,
// Lookout's address, how to open it in a browser, and the kubeconfig.
func carryOn(s *jobflow.Session, o demoOptions, a *jobflow.Armadactl, lookout jobflow.Lookout, clusterID, queue, password string, idp *testenv.OIDC) {
	lookoutURL, lookup := lookout.URL, lookout.Names.Lookup
	script := filepath.Join(s.TempDir(), "armadactl")
	if err := a.Script(s.Context(), script, demoUser, password); err != nil {
		s.Fatal(err)
	}
	// From this machine the name resolves to the far end's loopback
	// address; with TLS, curl must still send the name (its certificate
	// is for the Service names) and trust the composed CA.
	reach := lookoutURL
	if u, err := url.Parse(lookoutURL); err == nil {
		if ip, ok := lookup(u.Hostname()); ok {
			reach = fmt.Sprintf("--resolve %s:%s:%s %s", u.Hostname(), u.Port(), ip, lookoutURL)
			if u.Scheme == "https" {
				reach = "--cacert " + a.CA + " " + reach
			}
		}
	}
	fmt.Printf(`
Carry on by hand while this runs:
  export KUBECONFIG=%s
  %s submit %s        # armadactl as %s, dialling %s with the composed CA
  %s watch %s %s --raw
  Lookout: %s (password in Secret %s/%s-credentials); its API from this machine:
    curl -u %s:<password> -H 'Content-Type: application/json' -d '{"take":10}' %s/api/v1/jobs
`, o.cp.Kubeconfig(), script, filepath.Join(a.Dir, demoJobSet+".yaml"), demoUser, a.Server,
		script, queue, demoJobSet, lookoutURL, o.claim.GetNamespace(), o.claim.GetName(), demoUser, reach)
	printBrowser(s, lookout, clusterID, idp)
}

// startLogin starts the local OpenID Provider for the claim's Lookout,
// reached at the issuer's name through be's relays, and puts its CA in
// the Secret spec.auth.oidc.caSecretRef names, before the components
// that fetch its keys start.
func startLogin(s *jobflow.Session, c client.Client, be *jobflow.Backends, cl jobflow.Claim) *testenv.OIDC {
	lookoutURL := strings.TrimSuffix(cl.Endpoint("lookout"), "/")
	idp := jobflow.StartLogin(s, lookoutURL, loginGroups)
	if err := be.Names.Relay(jobflow.LoginAddr, idp.Addr); err != nil {
		s.Fatal(err)
	}
	ca := &corev1.Secret{}
	ca.SetName(jobflow.LoginCASecret)
	ca.SetNamespace(cl.Namespace)
	ca.Data = map[string][]byte{jobflow.LoginCAKey: idp.CA}
	if err := c.Create(s.Context(), ca); err != nil && !kerrors.IsAlreadyExists(err) {
		s.Fatal(errors.Wrap(err, "cannot create the OpenID Provider's CA Secret"))
	}
	fmt.Printf("Started a local OpenID Provider at %s (zitadel/oidc's example provider) for Lookout at %s.\n", jobflow.LoginIssuer, lookoutURL)
	return idp
}

// printBrowser prints how to open Lookout's UI in a browser on this
// machine: Chromium told where the composed names (and the OpenID
// Provider, idp, if make run started it) are and which certificates to
// trust (those the claim's CA signed, and the provider's, verified here),
// as TestLookoutUI starts it, and whom to sign in as. Without a provider
// the page cannot sign in: Armada answers a request without credentials
// with no WWW-Authenticate challenge, so the browser never asks for a
// password, and the page's calls to the server and binoculars go to other
// origins.
func printBrowser(s *jobflow.Session, lookout jobflow.Lookout, clusterID string, idp *testenv.OIDC) {
	bo, notes, err := jobflow.LookoutBrowser(s.Context(), lookout, clusterID)
	if err == nil && idp != nil {
		err = jobflow.TrustLogin(s.Context(), &bo, lookout.Names, idp)
	}
	if err != nil {
		fmt.Printf("  Lookout's UI: cannot tell how a browser reaches it: %v\n", err)
		return
	}
	for _, n := range notes {
		fmt.Println("  note:", n)
	}
	fmt.Printf(`  Lookout's UI in a browser on this machine (its names resolve only in this process's relays;
  the flags map them and trust the certificates the claim's CA signed, as TestLookoutUI does):
    %s
`, browser.CommandLine(bo, lookout.URL))
	if idp == nil {
		fmt.Println(`  This claim signs users in with basic auth, which Lookout's UI cannot do by itself in a browser (no
  password prompt: Armada sends no WWW-Authenticate challenge): the page loads, its API calls are refused.
  A claim with spec.auth.oidc signs in through its OpenID Provider (docs/guides/lookout.md).`)
		return
	}
	pw := filepath.Join(s.TempDir(), "login-password")
	if err := os.WriteFile(pw, []byte(idp.Password+"\n"), 0o600); err != nil {
		s.Fatal(errors.Wrap(err, "cannot write the login password"))
	}
	fmt.Println("  The page sends you to the local OpenID Provider's login page; its tokens name group " +
		strings.Join(loginGroups, ", ") + ", the demo queue's owners.")
	fmt.Printf("  Sign in as %s, password in %s (make run's own provider and user).\n", idp.Username, pw)
}

// backends starts PostgreSQL, Redis and Pulsar at the addresses the claim
// names, with the PostgreSQL user and the passwords its Secrets hold.
func backends(s *jobflow.Session, c client.Client, claim *unstructured.Unstructured) *jobflow.Backends {
	o := backendOptions(s, c, claim)
	fmt.Printf("\nStarting PostgreSQL, Redis and Pulsar %s, reached at the claim's %s, %s and %s...\n",
		armada.PulsarVersion, o.PostgresAddr, o.RedisAddr, o.PulsarAddr)
	be := jobflow.StartBackends(s, o)
	fmt.Printf("  PostgreSQL at 127.0.0.1:%d, Redis at %s, Pulsar at %s (admin %s)\n",
		be.Postgres.Port, be.Redis.Addr(), be.Pulsar.ServiceURL(), be.Pulsar.AdminURL())
	return be
}

// backendOptions are the far ends the claim names: their addresses, the
// PostgreSQL user and the passwords its Secrets hold.
func backendOptions(s *jobflow.Session, c client.Client, claim *unstructured.Unstructured) jobflow.BackendOptions {
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(claim.Object, append([]string{"spec"}, path...)...)
		return v
	}
	addrs, _, _ := unstructured.NestedStringSlice(claim.Object, "spec", "redis", "addrs")
	if len(addrs) == 0 {
		s.Fatal("the claim's spec.redis.addrs is empty")
	}
	o := jobflow.BackendOptions{
		PostgresAddr:     net.JoinHostPort(str("postgres", "host"), portOr(str("postgres", "port"), "5432")),
		RedisAddr:        addrs[0],
		PulsarAddr:       hostPort(s, str("pulsar", "url"), "6650"),
		PulsarAdminAddr:  hostPort(s, str("pulsar", "adminURL"), "8080"),
		PostgresUser:     str("postgres", "user"),
		PostgresPassword: secretValue(s, c, claim, "postgres"),
	}
	if _, found, _ := unstructured.NestedMap(claim.Object, "spec", "redis", "passwordSecretRef"); found {
		o.RedisPassword = secretValue(s, c, claim, "redis")
	}
	return o
}

// secretValue reads the Secret spec.<of>.passwordSecretRef names.
func secretValue(s *jobflow.Session, c client.Client, claim *unstructured.Unstructured, of string) string {
	ref, _, _ := unstructured.NestedStringMap(claim.Object, "spec", of, "passwordSecretRef")
	sec := &corev1.Secret{}
	if err := c.Get(s.Context(), client.ObjectKey{Namespace: claim.GetNamespace(), Name: ref["name"]}, sec); err != nil {
		s.Fatalf("cannot read spec.%s.passwordSecretRef's Secret %q: %v", of, ref["name"], err)
	}
	return string(sec.Data[ref["key"]])
}

// hostPort is a URL's host:port, with port def if it names none.
func hostPort(s *jobflow.Session, raw, def string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		s.Fatalf("cannot parse the claim's address %q: %v", raw, err)
	}
	return net.JoinHostPort(u.Hostname(), portOr(u.Port(), def))
}

func portOr(p, def string) string {
	if p == "" {
		return def
	}
	return p
}

// firstQueue is the claim's first queue's name.
func firstQueue(claim *unstructured.Unstructured) string {
	qs, _, _ := unstructured.NestedSlice(claim.Object, "spec", "queues")
	if len(qs) == 0 {
		return demoQueue
	}
	m, _ := qs[0].(map[string]any)
	name, _ := m["name"].(string)
	return name
}

// firstJobNamespace is the first namespace the jobs of the claim's queues
// run in: spec.jobNamespaces[0], else the default <namespace>-jobs. Never
// the claim's own namespace: the Armada's admission policy refuses a job
// there.
func firstJobNamespace(claim *unstructured.Unstructured) string {
	if ns, _, _ := unstructured.NestedStringSlice(claim.Object, "spec", "jobNamespaces"); len(ns) > 0 {
		return ns[0]
	}
	return claim.GetNamespace() + "-jobs"
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
