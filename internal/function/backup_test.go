package function

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
)

// TestRunFunctionPreUpgradeBackupFromStatus checks the XR's own status
// reaches the render as evidence of an upgrade: with no composed resource
// observed, a status.version older than spec.version, or a status naming
// the pre-upgrade Backup, composes that Backup.
func TestRunFunctionPreUpgradeBackupFromStatus(t *testing.T) {
	const key = "postgres-cnpg-backup-pre-0-22-8"
	cases := map[string]struct {
		reason string
		status map[string]any
		want   bool
	}{
		"NoEvidence": {
			reason: "A new install takes no pre-upgrade backup.",
		},
		"StatusVersionOlder": {
			reason: "The version the status last reported is older than spec.version: an upgrade.",
			status: map[string]any{"version": map[string]any{"desired": "0.22.7", "running": "0.22.7"}},
			want:   true,
		},
		"StatusNamesBackup": {
			reason: "The status names the Backup of this version: it stays composed though unobserved.",
			status: map[string]any{
				"version": map[string]any{"desired": "0.22.8"},
				"backup":  map[string]any{"lastBackup": map[string]any{"name": "armada-postgres-pre-0-22-8", "phase": "running"}},
			},
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := exampleRequest(t, testutil.Example("backups.yaml"))
			xr := req.GetObserved().GetComposite().GetResource().AsMap()
			xr["spec"].(map[string]any)["version"] = "0.22.8"
			if tc.status != nil {
				xr["status"] = tc.status
			}
			s, err := structpb.NewStruct(xr)
			if err != nil {
				t.Fatal(err)
			}
			req.Observed.Composite.Resource = s
			rsp, err := runFunction(t, newFunction(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(rsp.GetResults()) != 0 {
				t.Fatalf("RunFunction(...) results: %v", rsp.GetResults())
			}
			if _, got := rsp.GetDesired().GetResources()[key]; got != tc.want {
				t.Errorf("%s\n%s composed = %t, want %t", tc.reason, key, got, tc.want)
			}
		})
	}
}
