package jobflow

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/jobflow"
	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

const (
	// lookoutURL is Lookout's URL as the claim composes it (no ingress,
	// TLS on): the redirect URI the provider registers is its /oidc.
	lookoutURL = "https://" + claimName + "-lookout." + ns + ".svc:8080"
)

// jsLoginPage is the provider's login page's host and whether it shows
// the form.
const jsLoginPage = `location.host + (document.querySelector("#username") && document.querySelector("#password") ? " form" : "")`

// TestLookoutUIOIDC signs in to the composed Lookout with a claim's
// spec.auth.oidc, in Debian's Chromium, headless, as a person does: the
// page redirects to a real OpenID Provider (zitadel/oidc's example
// provider, tools/oidc, with its own CA given as
// spec.auth.oidc.caSecretRef), the user types a name and password into
// its login page, and back in Lookout, with no other credential, the
// page shows a job Succeeded in the jobs table, a running job's log pane
// loaded through binoculars, and cancels that job from the table. Every
// call the page makes to Lookout's API, the server's REST API and
// binoculars carries the access token, and nothing fails but what
// TestLookoutUI expects by design.
func TestLookoutUIOIDC(t *testing.T) {
	t.Parallel() // Beside TestJobFlow and TestMakeRun: see there.
	ctx := t.Context()
	root, err := testutil.ToolDir("ARMADA_BIN_ROOT")
	if err != nil {
		t.Fatal(err)
	}
	if testutil.LookoutUIDir(root, armada.DefaultVersion) == "" {
		t.Fatalf("Lookout's UI of Armada %s is not built in %s: run make lookoutui", armada.DefaultVersion, root)
	}
	idp := jobflow.StartLogin(t, lookoutURL, []string{"armada-admins"})
	f := compose(t, composeOptions{
		nodes:   []controlplane.Node{{Name: "kwok-node-1", CPU: "16", Memory: "64Gi"}},
		relays:  map[string]string{jobflow.LoginAddr: idp.Addr},
		objects: []*unstructured.Unstructured{secret(ns, jobflow.LoginCASecret, jobflow.LoginCAKey, string(idp.CA))},
		spec: map[string]any{"auth": map[string]any{
			"basicUsers": []any{map[string]any{"name": "admin", "groups": []any{"armada-admins"}}},
			"oidc":       jobflow.LoginAuth(),
		}},
	})
	if got := strings.TrimSuffix(f.lookout.URL, "/"); got != lookoutURL {
		t.Fatalf("status.endpoints.lookout = %s, but the provider registered the redirect URI %s/oidc", got, lookoutURL)
	}
	pw := f.adminPassword
	done, err := f.a.Submit(ctx, "admin", pw, queue, "oidc-succeeds", jobflow.JobSpec(jobsNamespace, nil))
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, done)
	}
	succeeded := jobflow.WaitLookout(t, f.lookout, pw, "oidc-succeeds", "SUCCEEDED")[0].JobID
	long, err := f.a.Submit(ctx, "admin", pw, queue, "oidc-cancelled", jobflow.JobSpec(jobsNamespace, map[string]string{"kwok.armadaproject.io/run-for": "30m"}))
	if err != nil {
		t.Fatalf("%s: %v\n%s", f.a.Command("submit", "job.yaml"), err, long)
	}
	running := jobflow.WaitLookout(t, f.lookout, pw, "oidc-cancelled", "RUNNING")[0].JobID

	b, origin := openLookout(t, f, lookoutBrowser{oidc: idp})
	p := &page{t: t, b: b}
	var checked bool
	t.Cleanup(func() {
		if pr := b.Problems(); t.Failed() && !checked && len(pr) > 0 {
			t.Logf("what went wrong in the page:\n%s", strings.Join(pr, "\n"))
		}
		if t.Failed() {
			t.Logf("the OpenID Provider's log (tail):\n%s", testutil.Tail(idp.Log(), 30))
		}
	})

	// Lookout sends the browser to the provider's login page; the user
	// signs in there and is sent back.
	if err := b.Navigate(ctx, origin+"/"); err != nil {
		t.Fatal(err)
	}
	p.signIn(idp.Username, idp.Password)

	// Signed in: the jobs table, its details, a log and a cancel, as
	// with basic auth, with the access token alone.
	p.poll("the header names the Armada", jsTitle, has("Armada "+ns+"/"+claimName))
	p.poll("the jobs table shows job "+succeeded+" Succeeded", fmt.Sprintf(jsRow, succeeded), has(queue, "oidc-succeeds", "Succeeded"))
	p.open(origin + "/?sb=" + running)
	p.poll("job "+running+"'s details", jsSidebar, has("Queue", queue))
	p.click("the Logs tab", fmt.Sprintf(jsTab, "LOGS"))
	p.poll("job "+running+"'s log pane shows the API server's answer through binoculars", jsSidebar, has("Container work", "no preferred addresses found"))
	p.click("job "+running+"'s checkbox", fmt.Sprintf(jsSelectRow, running))
	p.click("Cancel selected", fmt.Sprintf(jsButton, "CANCEL SELECTED"))
	p.poll("the cancel dialog", jsDialog, has("Cancel 1 job", running))
	p.click("Cancel 1 job", fmt.Sprintf(jsButton, "CANCEL 1 JOB"))
	jobflow.WaitLookout(t, f.lookout, pw, "oidc-cancelled", "CANCELLED")
	p.open(origin + "/")
	p.poll("the jobs table shows job "+running+" Cancelled", fmt.Sprintf(jsRow, running), has("oidc-cancelled", "Cancelled"))

	// Every call to an Armada API carried the access token.
	cfg, err := jobflow.GetLookoutUIConfig(ctx, f.lookout)
	if err != nil {
		t.Fatal(err)
	}
	apis := map[string]string{
		"Lookout's API":         origin + "/api/",
		"the server's REST API": strings.TrimSuffix(cfg.ArmadaAPIBaseURL, "/") + "/",
		"binoculars":            strings.ReplaceAll(cfg.BinocularsBaseURLPattern, "{CLUSTER_ID}", executorCluster) + "/",
	}
	if msg := bearerOnEveryCall(b.Requests(), apis); msg != "" {
		t.Error(msg)
	}
	if msg := http11Only(b.Requests(), origin); msg != "" {
		t.Error(msg)
	}

	checked = true
	if u := unexpectedProblems(b.Problems()); len(u) > 0 {
		t.Errorf("the page logged errors or had requests fail:\n%s", strings.Join(u, "\n"))
	}
}

// bearerOnEveryCall says what is wrong with the calls the page made to
// each API (its name to its URL prefix): none made, or one without a
// bearer token; "" if nothing. CORS preflights carry no credentials by
// design and are left out.
func bearerOnEveryCall(reqs []browser.Request, apis map[string]string) string {
	var msgs []string
	for name, prefix := range apis {
		n := 0
		for _, r := range reqs {
			if r.Method == http.MethodOptions || !strings.HasPrefix(r.URL, prefix) {
				continue
			}
			n++
			if r.Auth != "Bearer" {
				msgs = append(msgs, fmt.Sprintf("%s %s went to %s with no bearer token (Authorization: %q)", r.Method, r.URL, name, r.Auth))
			}
		}
		if n == 0 {
			msgs = append(msgs, fmt.Sprintf("the page made no call to %s (%s)", name, prefix))
		}
	}
	return strings.Join(msgs, "\n")
}

// unexpectedProblems are the page's problems but those Armada has by
// design here (expectedProblem).
func unexpectedProblems(problems []string) []string {
	var out []string
	for _, p := range problems {
		if !expectedProblem.MatchString(p) {
			out = append(out, p)
		}
	}
	return out
}

// A page is a browser's tab under test: each wait fails the test with
// what the page showed.
type page struct {
	t *testing.T
	b *browser.Browser
}

// poll waits until js, a string-valued expression, satisfies ok.
func (p *page) poll(what, js string, ok func(string) bool) string {
	p.t.Helper()
	v, err := p.b.Poll(context.WithoutCancel(p.t.Context()), uiWait, js, ok)
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open loads addr and waits until the page shows its header.
func (p *page) open(addr string) {
	p.t.Helper()
	if err := p.b.Navigate(context.WithoutCancel(p.t.Context()), addr); err != nil {
		p.t.Fatal(err)
	}
	p.poll(addr+": the page shows its header", jsTitle, has("Armada "))
}

// http11Only says which of the page's requests to Lookout (origin) came
// back over another protocol than HTTP/1.1; "" if none did and at least
// one came. Lookout is served through its TLS sidecar, which offers no
// HTTP/2: Lookout's own HTTP/2 server closes every idle connection
// (keep-alive 0), and a browser then loses requests it has sent on it.
func http11Only(reqs []browser.Request, origin string) string {
	var msgs []string
	n := 0
	for _, r := range reqs {
		if !strings.HasPrefix(r.URL, origin+"/") || r.Protocol == "" {
			continue
		}
		n++
		if r.Protocol != "http/1.1" {
			u, _, _ := strings.Cut(r.URL, "?")
			msgs = append(msgs, fmt.Sprintf("%s %s came over %s, want http/1.1 (Lookout's TLS sidecar)", r.Method, u, r.Protocol))
		}
	}
	if n == 0 {
		return "the page got no answer from Lookout at " + origin
	}
	return strings.Join(msgs, "\n")
}

// signIn waits until Lookout has sent the page to the OpenID Provider's
// login page, and signs in there as user.
func (p *page) signIn(user, password string) {
	p.t.Helper()
	p.poll("Lookout redirects to the provider's login page", jsLoginPage, has(jobflow.LoginHost, "form"))
	if err := p.b.Run(context.WithoutCancel(p.t.Context()),
		chromedp.SendKeys("#username", user, chromedp.ByQuery),
		chromedp.SendKeys("#password", password, chromedp.ByQuery),
		chromedp.Click(`button[type="submit"]`, chromedp.ByQuery),
	); err != nil {
		p.t.Fatalf("cannot sign in on the provider's login page: %v", err)
	}
}

// click waits until js, a click expression of lookoutui_test.go, answers
// "ok".
func (p *page) click(what, js string) {
	p.t.Helper()
	p.poll(what, js, func(s string) bool { return s == "ok" })
}

// has accepts a string holding every part.
func has(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, part := range parts {
			if !strings.Contains(s, part) {
				return false
			}
		}
		return true
	}
}
