package jobflow

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// uiWait bounds each wait for the page to show something.
const uiWait = 45 * time.Second

// The page's elements, found as a person finds them: by their text.
const (
	// jsRow is the text of the jobs table's row of the job %q.
	jsRow = `(() => { const r = Array.from(document.querySelectorAll("tbody tr")).find(r => r.innerText.includes(%q)); return r ? r.innerText.replace(/\s+/g, " ") : "" })()`
	// jsSelectRow ticks the checkbox of the job %q's row.
	jsSelectRow = `(() => { const r = Array.from(document.querySelectorAll("tbody tr")).find(r => r.innerText.includes(%q)); if (!r) return "no row"; r.querySelector("input[type=checkbox]").click(); return "ok" })()`
	// jsTab opens the job sidebar's tab %q.
	jsTab = `(() => { const e = Array.from(document.querySelectorAll("[role=tab]")).find(e => e.innerText.trim().toUpperCase() === %q); if (!e) return "no tab"; e.click(); return "ok" })()`
	// jsButton clicks the button %q.
	jsButton = `(() => { const e = Array.from(document.querySelectorAll("button")).find(e => e.innerText.trim().toUpperCase() === %q && !e.disabled); if (!e) return "no button"; e.click(); return "ok" })()`
	// jsSidebar is the text of the sidebar's open tab (after its tabs).
	jsSidebar = `(() => { const t = document.body.innerText; const i = t.indexOf("COMMANDS"); return i < 0 ? "" : t.slice(i + 8).replace(/\s+/g, " ") })()`
	// jsDialog is the open dialog's text.
	jsDialog = `(() => { const d = document.querySelector("[role=dialog]"); return d ? d.innerText.replace(/\s+/g, " ") : "" })()`
	// jsTitle is the page's title bar: the text before its JOBS link.
	jsTitle = `(() => { const t = document.body.innerText; const i = t.indexOf("JOBS"); return i < 0 ? "" : t.slice(0, i).replace(/\s+/g, " ") })()`
)

// TestLookoutUI opens the composed Lookout in Debian's Chromium, headless,
// as a user of the claim would: the page at status.endpoints.lookout,
// every name resolving as the cluster's DNS resolves it, TLS trusted for
// the certificates the claim's CA signed, and admin's basic-auth
// credentials on every request (Armada answers a request without them
// with no WWW-Authenticate challenge, so a browser never prompts; the
// header stands for the authenticating proxy or browser extension a
// basic-auth Lookout needs). It sees a job Succeeded in the jobs table,
// its details and run on the executor's cluster, the kubectl commands
// naming that cluster and the job's namespace, a running job's log pane
// loaded through binoculars, and a running job cancelled from the table,
// and no console error and no failed request, but for two that Armada
// answers by design: binoculars' log call fails because KWOK's Nodes run
// no kubelet, and Lookout answers 400 for a run with no error.
//
// With LOOKOUT_SCREENSHOTS set to a directory, it writes the jobs table
// and a job's details there (make docs-screenshots).
func TestLookoutUI(t *testing.T) {
	t.Parallel() // Beside TestJobFlow and TestMakeRun: see there.
	ctx := t.Context()
	root, err := testutil.ToolDir("ARMADA_BIN_ROOT")
	if err != nil {
		t.Fatal(err)
	}
	if testutil.LookoutUIDir(root, armada.DefaultVersion) == "" {
		t.Fatalf("Lookout's UI of Armada %s is not built in %s: run make lookoutui", armada.DefaultVersion, root)
	}
	f := compose(t, composeOptions{nodes: []controlplane.Node{{Name: "kwok-node-1", CPU: "16", Memory: "64Gi"}}})
	pw := f.adminPassword

	done, err := f.a.Submit(ctx, "admin", pw, queue, "ui-succeeds", jobflow.JobSpec(jobsNamespace, nil))
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, done)
	}
	succeeded := jobflow.WaitLookout(t, f.lookout, pw, "ui-succeeds", "SUCCEEDED")[0].JobID
	long, err := f.a.Submit(ctx, "admin", pw, queue, "ui-cancelled", jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "30m"}))
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, long)
	}
	running := jobflow.WaitLookout(t, f.lookout, pw, "ui-cancelled", "RUNNING")[0].JobID

	// A browser alone cannot sign in with basic auth: Armada answers the
	// page's calls without credentials with no WWW-Authenticate
	// challenge, so the browser never asks for a password, and the page
	// shows no job.
	nb, origin := openLookout(t, f, lookoutBrowser{})
	if err := nb.Navigate(ctx, origin+"/"); err != nil {
		t.Fatal(err)
	}
	refused := waitProblem(t, nb, regexp.MustCompile(`^[45][0-9][0-9] `+regexp.QuoteMeta(origin)+`/api/v1/jobs`))
	if strings.Contains(refused, "challenge") {
		t.Errorf("Lookout's API challenges a browser without credentials (%s): a browser could sign in with basic auth", refused)
	}
	var row string
	if err := nb.Eval(ctx, fmt.Sprintf(jsRow, succeeded), &row); err != nil || row != "" {
		t.Errorf("a browser without credentials: job %s's row = %q (%v), want none", succeeded, row, err)
	}
	t.Logf("a browser without credentials: %s", refused)
	nb.Close()

	b, _ := openLookout(t, f, lookoutBrowser{basicPassword: pw})
	var checked bool
	t.Cleanup(func() {
		if p := b.Problems(); t.Failed() && !checked && len(p) > 0 {
			t.Logf("what went wrong in the page:\n%s", strings.Join(p, "\n"))
		}
	})
	shots := os.Getenv("LOOKOUT_SCREENSHOTS")
	shoot := func(name string) {
		if shots == "" {
			return
		}
		if err := b.Screenshot(ctx, filepath.Join(shots, name)); err != nil {
			t.Error(err)
		}
	}
	pg := &page{t: t, b: b}
	poll, click := pg.poll, pg.click

	// The jobs table: the job Succeeded, under the Armada's name.
	pg.open(origin + "/")
	poll("the header names the Armada", jsTitle, has("Armada "+ns+"/"+claimName))
	poll("the jobs table shows job "+succeeded+" Succeeded", fmt.Sprintf(jsRow, succeeded), has(queue, "ui-succeeds", "Succeeded"))
	poll("the jobs table shows job "+running+" Running", fmt.Sprintf(jsRow, running), has("ui-cancelled", "Running"))
	shoot("lookout-jobs.png")

	// Its details and its run, on the executor's cluster and a KWOK Node.
	pg.open(origin + "/?sb=" + succeeded)
	poll("job "+succeeded+"'s details", jsSidebar, has("Queue", queue, "Namespace", jobsNamespace))
	click("the Result tab", fmt.Sprintf(jsTab, "RESULT"))
	poll("job "+succeeded+"'s run", jsSidebar, has("State Succeeded", "Exit code 0", "Cluster "+executorCluster, "Node kwok-node-1"))
	shoot("lookout-job-run.png")
	click("the Commands tab", fmt.Sprintf(jsTab, "COMMANDS"))
	poll("the kubectl commands name the executor's cluster and the job's namespace", jsSidebar,
		has(fmt.Sprintf("kubectl --context %s -n %s logs armada-%s-0", executorCluster, jobsNamespace, succeeded)))

	// A running job's log, through binoculars: the browser reaches it
	// (TLS, CORS, credentials) and binoculars the API server, which
	// cannot reach a kubelet on a KWOK Node; a real node's log would
	// show here.
	pg.open(origin + "/?sb=" + running)
	poll("job "+running+"'s details", jsSidebar, has("Queue", queue))
	click("the Logs tab", fmt.Sprintf(jsTab, "LOGS"))
	poll("job "+running+"'s log pane shows the API server's answer through binoculars", jsSidebar, has("Container work", "no preferred addresses found"))
	shoot("lookout-job-logs.png")

	// Cancelled from the table: the browser calls the server's REST API.
	click("job "+running+"'s checkbox", fmt.Sprintf(jsSelectRow, running))
	click("Cancel selected", fmt.Sprintf(jsButton, "CANCEL SELECTED"))
	poll("the cancel dialog", jsDialog, has("Cancel 1 job", running))
	click("Cancel 1 job", fmt.Sprintf(jsButton, "CANCEL 1 JOB"))
	jobflow.WaitLookout(t, f.lookout, pw, "ui-cancelled", "CANCELLED")
	pg.open(origin + "/")
	poll("the jobs table shows job "+running+" Cancelled", fmt.Sprintf(jsRow, running), has("ui-cancelled", "Cancelled"))

	if msg := http11Only(b.Requests(), origin); msg != "" {
		t.Error(msg)
	}

	checked = true
	if unexpected := unexpectedProblems(b.Problems()); len(unexpected) > 0 {
		t.Errorf("the page logged errors or had requests fail:\n%s", strings.Join(unexpected, "\n"))
	}
	// The screenshots name the release whose UI they show, for make
	// docs-check; only a passing run's.
	if shots != "" && !t.Failed() {
		marker := filepath.Join(shots, jobflow.ScreenshotsReleaseFile)
		if err := os.WriteFile(marker, []byte(jobflow.ScreenshotsRelease(armada.DefaultVersion)), 0o600); err != nil {
			t.Error(err)
		}
	}
}

// expectedProblem matches what fails by Armada's design here: binoculars'
// log call (the API server has no kubelet to ask on a KWOK Node: 500
// "no preferred addresses found") and Lookout's answer to the questions
// the UI asks of every run (400 "no error found for run").
var expectedProblem = regexp.MustCompile(`^(browser log: Failed to load resource: the server responded with a status of )?(500|400)\b.*` +
	`https://[^ ]*(/v1/binoculars/log|/api/v1/jobRun(Error|DebugMessage|SchedulerTerminationReason))$`)

// waitProblem waits until the page has a problem re matches, and returns
// it.
func waitProblem(t *testing.T, b *browser.Browser, re *regexp.Regexp) string {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(uiWait)
	for time.Now().Before(deadline) {
		for _, p := range b.Problems() {
			if re.MatchString(p) {
				return p
			}
			seen = append(seen, p)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no problem matching %s in the page after %s; it had:\n%s", re, uiWait, strings.Join(seen, "\n"))
	return ""
}

// lookoutBrowser says how the browser signs in.
type lookoutBrowser struct {
	// basicPassword, if set, is admin's password, sent with every
	// request.
	basicPassword string
	// oidc, if set, is the OpenID Provider at jobflow.LoginIssuer: its name
	// resolves to its relay, and its certificate is trusted.
	oidc *testenv.OIDC
}

// openLookout starts Chromium for the claim's Lookout: each name the page
// reaches (Lookout, the server's REST API, binoculars, as Lookout's UI
// config names them, and the OIDC provider) resolves to where the composed
// Service (or the provider's relay) is, each server's certificate is
// trusted once verified against the claim's CA (the provider's against
// its own), and with basic auth admin's credentials go with every
// request. It returns the browser and Lookout's origin.
func openLookout(t *testing.T, f *flow, o lookoutBrowser) (*browser.Browser, string) {
	t.Helper()
	ctx := t.Context()
	bo, notes, err := jobflow.LookoutBrowser(ctx, f.lookout, executorCluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		t.Log(n)
	}
	if o.oidc != nil {
		if err := jobflow.TrustLogin(ctx, &bo, f.be.Names, o.oidc); err != nil {
			t.Fatal(err)
		}
	}
	bo.Dir, bo.Logf = t.TempDir(), t.Logf
	if o.basicPassword != "" {
		bo.Headers = map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+o.basicPassword))}
	}
	b, err := browser.Start(context.WithoutCancel(ctx), bo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, strings.TrimSuffix(f.lookout.URL, "/")
}
