package armada

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeAdmin is a pulsar-admin stand-in keeping Pulsar's state in files: it
// answers like pulsar-admin (409 for what exists) and can fail on demand.
// It is fault injection for the topic-init script's logic; the Job's real
// pulsar-admin is Pulsar's own.
const fakeAdmin = `#!/bin/bash
set -u
state=$FAKE_STATE
echo "$*" >> "$state/calls"
[[ "$1" == --admin-url ]] || { echo "no --admin-url" >&2; exit 2; }
shift 2
while [[ "$1" == --* ]]; do shift 2; done
if [[ -n "${FAKE_FAIL:-}" && "$*" == *"$FAKE_FAIL"* ]]; then echo "HTTP 401 Unauthorized" >&2; exit 1; fi
key=$(echo "$3" | tr '/:' '__')
case "$1 $2" in
"clusters list") echo standalone ;;
"tenants create"|"namespaces create"|"topics create")
  [[ -e "$state/$key" ]] && { echo "409 Conflict: already exists" >&2; exit 1; }
  echo 0 > "$state/$key" ;;
"topics create-partitioned-topic")
  [[ -e "$state/$key" ]] && { echo "This topic already exists" >&2; exit 1; }
  echo "$5" > "$state/$key" ;;
"topics get-partitioned-topic-metadata") printf '{\n  "partitions" : %s\n}\n' "$(cat "$state/$key")" ;;
"topics update-partitioned-topic") echo "$5" > "$state/$key" ;;
*) echo "unexpected: $*" >&2; exit 3 ;;
esac
`

// TestTopicsScript runs the topic-init Job's script twice and more against
// a fake pulsar-admin: it creates what is missing, accepts what exists,
// grows but never shrinks the events topic, and fails naming what it could
// not create.
func TestTopicsScript(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pulsar-admin")
	if err := os.WriteFile(bin, []byte(fakeAdmin), 0o700); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	in, errs := New(claimed(spec()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	runScript := func(partitions, fail string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "bash", "-c", topicsScript)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PULSAR_ADMIN=" + bin, "FAKE_STATE=" + state, "FAKE_FAIL=" + fail}
		for _, e := range in.topicsEnv() {
			if e.Name == "PARTITIONS" {
				e.Value = partitions
			}
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	files := func() []string {
		entries, _ := os.ReadDir(state)
		var out []string
		for _, e := range entries {
			if e.Name() != "calls" {
				b, _ := os.ReadFile(filepath.Join(state, e.Name()))
				out = append(out, e.Name()+"="+strings.TrimSpace(string(b)))
			}
		}
		return out
	}
	// The fake's files: tenant, namespace, topics (partition counts).
	want := []string{"armada=0", "armada_armada=0", "persistent___armada_armada_control-plane=0", "persistent___armada_armada_events=2"}

	cases := []struct {
		name, partitions, fail string
		wantErr                bool
		wantOut                string
		want                   []string
	}{
		{name: "Creates", partitions: "2", wantOut: "created topic persistent://armada/armada/events", want: want},
		{name: "Idempotent", partitions: "2", wantOut: "persistent://armada/armada/events already exists", want: want},
		{
			name: "GrowsPartitions", partitions: "4", wantOut: "grew persistent://armada/armada/events from 2 to 4 partitions",
			want: []string{"armada=0", "armada_armada=0", "persistent___armada_armada_control-plane=0", "persistent___armada_armada_events=4"},
		},
		{
			name: "NeverShrinks", partitions: "3", wantOut: "keeps its 4 partitions",
			want: []string{"armada=0", "armada_armada=0", "persistent___armada_armada_control-plane=0", "persistent___armada_armada_events=4"},
		},
		{name: "FailsLoudly", partitions: "4", fail: "namespaces create", wantErr: true, wantOut: "cannot create namespace armada/armada: HTTP 401 Unauthorized"},
	}
	for _, tc := range cases {
		out, err := runScript(tc.partitions, tc.fail)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: err = %v, want error %t; output:\n%s", tc.name, err, tc.wantErr, out)
		}
		if !strings.Contains(out, tc.wantOut) {
			t.Errorf("%s: output does not contain %q:\n%s", tc.name, tc.wantOut, out)
		}
		if tc.want != nil {
			if diff := cmp.Diff(tc.want, files()); diff != "" {
				t.Errorf("%s: Pulsar state -want +got:\n%s", tc.name, diff)
			}
		}
	}
}
