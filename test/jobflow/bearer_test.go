package jobflow

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/internal/harness/browser"
)

// TestBearerOnEveryCall proves the check TestLookoutUIOIDC makes of the
// page's requests: it refuses a call to an API without a bearer token and
// an API the page never called, and leaves CORS preflights and other
// origins alone.
func TestBearerOnEveryCall(t *testing.T) {
	apis := map[string]string{"Lookout's API": "https://lookout/api/", "binoculars": "https://binoculars/"}
	cases := map[string]struct {
		reason string
		reqs   []browser.Request
		want   string
	}{
		"EveryCallBearer": {
			reason: "Each API called, each call with a bearer token; preflights and the provider's pages are not calls to an API.",
			reqs: []browser.Request{
				{Method: "GET", URL: "https://login/auth"},
				{Method: "OPTIONS", URL: "https://binoculars/v1/binoculars/log"},
				{Method: "POST", URL: "https://binoculars/v1/binoculars/log", Auth: "Bearer"},
				{Method: "POST", URL: "https://lookout/api/v1/jobs", Auth: "Bearer"},
			},
		},
		"OneWithout": {
			reason: "A call with basic credentials is refused.",
			reqs: []browser.Request{
				{Method: "POST", URL: "https://binoculars/v1/binoculars/log", Auth: "Bearer"},
				{Method: "POST", URL: "https://lookout/api/v1/jobs", Auth: "Basic"},
			},
			want: `POST https://lookout/api/v1/jobs went to Lookout's API with no bearer token (Authorization: "Basic")`,
		},
		"NeverCalled": {
			reason: "An API the page never called is refused: nothing was shown to carry the token.",
			reqs:   []browser.Request{{Method: "POST", URL: "https://lookout/api/v1/jobs", Auth: "Bearer"}},
			want:   "the page made no call to binoculars (https://binoculars/)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, bearerOnEveryCall(tc.reqs, apis)); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestHTTP11Only proves the check both Lookout UI tests make of the
// page's requests to Lookout: one answered over HTTP/2 is refused (the
// query left out), as is a page Lookout never answered; other origins and
// requests with no response are left alone.
func TestHTTP11Only(t *testing.T) {
	const origin = "https://lookout:8080"
	cases := map[string]struct {
		reason string
		reqs   []browser.Request
		want   string
	}{
		"AllHTTP11": {
			reason: "Every answer from Lookout over HTTP/1.1; the provider's h2 and a request with no answer are not Lookout's answers.",
			reqs: []browser.Request{
				{Method: "GET", URL: "https://login/auth", Protocol: "h2"},
				{Method: "GET", URL: origin + "/", Protocol: "http/1.1"},
				{Method: "POST", URL: origin + "/api/v1/jobs", Protocol: "http/1.1"},
				{Method: "POST", URL: origin + "/api/v1/jobGroups"},
			},
		},
		"H2": {
			reason: "An answer over HTTP/2 is refused: Lookout's own HTTP/2 server closes idle connections.",
			reqs: []browser.Request{
				{Method: "GET", URL: origin + "/", Protocol: "http/1.1"},
				{Method: "GET", URL: origin + "/lookout-ui-config.js?v=1", Protocol: "h2"},
			},
			want: "GET " + origin + "/lookout-ui-config.js came over h2, want http/1.1 (Lookout's TLS sidecar)",
		},
		"NoAnswer": {
			reason: "A page Lookout never answered proves nothing.",
			reqs:   []browser.Request{{Method: "GET", URL: origin + "/"}},
			want:   "the page got no answer from Lookout at " + origin,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, http11Only(tc.reqs, origin)); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
