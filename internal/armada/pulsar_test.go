package armada

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakePulsar is a stand-in for Pulsar's admin REST API (fault injection
// for the topic-init script's logic; the conformance and job-flow suites
// run the script against a real broker). It keeps tenants, namespaces and
// topics (with their partition counts), answers 409 for what exists as
// Pulsar does, and fails on demand.
type fakePulsar struct {
	mu    sync.Mutex
	state map[string]string
	calls []string
	auth  map[string]bool // the Authorization headers seen
	fail  string          // a path answered 401
}

func (f *fakePulsar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/admin/v2/")
	f.calls = append(f.calls, r.Method+" "+path)
	f.auth[r.Header.Get("Authorization")] = true
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "unsupported media type", http.StatusUnsupportedMediaType)
		return
	}
	if f.fail != "" && path == f.fail {
		http.Error(w, `{"reason":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	key, partitioned := strings.CutSuffix(path, "/partitions")
	switch {
	case r.Method == http.MethodGet && path == "clusters":
		_, _ = io.WriteString(w, `["standalone"]`)
	case r.Method == http.MethodGet && partitioned:
		n, ok := f.state[key]
		if !ok {
			n = "0"
		}
		_, _ = fmt.Fprintf(w, `{"partitions":%s,"deleted":false}`, n)
	case r.Method == http.MethodPut:
		if _, ok := f.state[key]; ok {
			http.Error(w, `{"reason":"This topic already exists"}`, http.StatusConflict)
			return
		}
		// A topic keeps its partition count, a tenant its body.
		v := "0"
		if partitioned || strings.HasPrefix(path, "tenants/") {
			v = string(body)
		}
		f.state[key] = v
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && partitioned:
		f.state[key] = string(body)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "unexpected", http.StatusMethodNotAllowed)
	}
}

// TestTopicsScript runs the topic-init Job's script twice and more against
// a stand-in for Pulsar's admin API: it creates what is missing, accepts
// what exists, grows but never shrinks the events topic, sends the token
// it is given, and fails naming what it could not do.
func TestTopicsScript(t *testing.T) {
	fake := &fakePulsar{state: map[string]string{}, auth: map[string]bool{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	in, errs := New(claimed(spec()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("a-secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lc net.ListenConfig
	closed, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	_ = closed.Close()

	// The stand-in's state: tenant (its body), namespace, topics (partition counts).
	want := func(events int) map[string]string {
		return map[string]string{
			"tenants/armada":                         `{"allowedClusters":["standalone"]}`,
			"namespaces/armada/armada":               "0",
			"persistent/armada/armada/events":        strconv.Itoa(events),
			"persistent/armada/armada/control-plane": "0",
		}
	}
	cases := []struct {
		name, partitions, fail, url, token string
		wantErr                            bool
		wantOut                            string
		want                               map[string]string
	}{
		{name: "Creates", partitions: "2", wantOut: "created topic persistent://armada/armada/events", want: want(2)},
		{name: "Idempotent", partitions: "2", wantOut: "persistent://armada/armada/events already exists", want: want(2)},
		{name: "GrowsPartitions", partitions: "4", wantOut: "grew persistent://armada/armada/events from 2 to 4 partitions", want: want(4)},
		{name: "NeverShrinks", partitions: "3", wantOut: "keeps its 4 partitions", want: want(4)},
		{name: "SendsTheToken", partitions: "4", token: token, wantOut: "Pulsar topics ready", want: want(4)},
		{
			name: "FailsLoudly", partitions: "4", fail: "namespaces/armada/armada", wantErr: true,
			wantOut: `cannot create namespace armada/armada: HTTP 401: {"reason":"Unauthorized"}`,
		},
		{name: "NoAnswer", partitions: "4", url: closedURL, wantErr: true, wantOut: "cannot list Pulsar clusters: no answer from " + closedURL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.mu.Lock()
			fake.fail, fake.auth = tc.fail, map[string]bool{}
			fake.mu.Unlock()
			cmd := exec.CommandContext(t.Context(), "bash", "-c", topicsScript)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			for _, e := range in.topicsEnv() {
				switch e.Name {
				case "PARTITIONS":
					e.Value = tc.partitions
				case "ADMIN_URL":
					e.Value = srv.URL
					if tc.url != "" {
						e.Value = tc.url
					}
				}
				cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
			}
			if tc.token != "" {
				cmd.Env = append(cmd.Env, "TOKEN_FILE="+tc.token)
			}
			out, err := cmd.CombinedOutput()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t; output:\n%s", err, tc.wantErr, out)
			}
			if !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("output does not contain %q:\n%s", tc.wantOut, out)
			}
			if strings.Contains(string(out), "a-secret-token") {
				t.Errorf("the script printed the token:\n%s", out)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, fake.state); diff != "" {
					t.Errorf("Pulsar state -want +got:\n%s", diff)
				}
			}
			wantAuth := []string{""}
			if tc.token != "" {
				wantAuth = []string{"Bearer a-secret-token"}
			}
			if tc.url == "" {
				if diff := cmp.Diff(wantAuth, slices.Sorted(maps.Keys(fake.auth))); diff != "" {
					t.Errorf("Authorization headers -want +got:\n%s", diff)
				}
			}
		})
	}
}
