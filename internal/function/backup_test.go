package function

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

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

// TestRunFunctionRestoreDrill checks the restore drill's CronJob, as
// Crossplane observes it, reaches the claim: status.backup.restoreDrill
// and the RestoreDrill condition, with the age counted by the function's
// clock; and the PrometheusRule holds its alerts.
func TestRunFunctionRestoreDrill(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	type want struct {
		Drill  map[string]any
		Status fnv1.Status
		Reason string
	}
	cases := map[string]struct {
		reason  string
		cronJob map[string]any
		want    want
	}{
		"NotObserved": {
			reason: "Before Crossplane has observed the CronJob, no drill has run; the XR is a day old.",
			want: want{
				Drill:  map[string]any{"cronJob": "armada-restore-drill", "outcome": "NotRunYet", "age": "24h"},
				Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: "RestoreDrillNotRunYet",
			},
		},
		"Succeeded": {
			reason:  "The newest run succeeded this morning.",
			cronJob: map[string]any{"lastScheduleTime": "2026-12-06T04:00:00Z", "lastSuccessfulTime": "2026-12-06T04:11:00Z"},
			want: want{
				Drill: map[string]any{
					"cronJob": "armada-restore-drill", "outcome": "Succeeded", "age": "7h",
					"lastRun": "2026-12-06T04:00:00Z", "lastVerifiedRestore": "2026-12-06T04:11:00Z",
				},
				Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: "RestoreVerified",
			},
		},
		"Failed": {
			reason:  "The newest run ended without success; the last success is last week's.",
			cronJob: map[string]any{"lastScheduleTime": "2026-12-06T04:00:00Z", "lastSuccessfulTime": "2026-11-29T04:12:00Z"},
			want: want{
				Drill: map[string]any{
					"cronJob": "armada-restore-drill", "outcome": "Failed", "age": "175h",
					"lastRun": "2026-12-06T04:00:00Z", "lastVerifiedRestore": "2026-11-29T04:12:00Z",
				},
				Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: "RestoreDrillFailed",
			},
		},
		"Overdue": {
			reason:  "No run has succeeded for longer than maxAge (192h), and none is running.",
			cronJob: map[string]any{"lastScheduleTime": "2026-11-22T04:00:00Z", "lastSuccessfulTime": "2026-11-22T04:12:00Z"},
			want: want{
				Drill: map[string]any{
					"cronJob": "armada-restore-drill", "outcome": "Succeeded", "age": "343h", "overdue": true,
					"lastRun": "2026-11-22T04:00:00Z", "lastVerifiedRestore": "2026-11-22T04:12:00Z",
				},
				Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: "RestoreDrillOverdue",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := exampleRequest(t, testutil.Example("backups.yaml"))
			xr := req.GetObserved().GetComposite().GetResource().AsMap()
			xr["metadata"].(map[string]any)["creationTimestamp"] = now.Add(-24 * time.Hour).Format(time.RFC3339)
			xr["metadata"].(map[string]any)["uid"] = "7d0a1f5e-0000-4000-8000-000000000001"
			s, err := structpb.NewStruct(xr)
			if err != nil {
				t.Fatal(err)
			}
			req.Observed.Composite.Resource = s
			if tc.cronJob != nil {
				req.Observed.Resources = map[string]*fnv1.Resource{"restore-drill-cronjob": {Resource: mustStruct(t, map[string]any{
					"apiVersion": "batch/v1", "kind": "CronJob",
					"metadata": map[string]any{"name": "armada-restore-drill", "namespace": "armada", "labels": map[string]any{
						"crossplane.io/composite": "armada",
					}, "ownerReferences": []any{map[string]any{
						"apiVersion": "platform.armadaproject.io/v1alpha1", "kind": "XArmada", "name": "armada",
						"uid": "7d0a1f5e-0000-4000-8000-000000000001", "controller": true,
					}}},
					"status": tc.cronJob,
				})}}
			}
			f, err := New(logging.NewNopLogger(), WithPasswordKey([]byte("test")), WithCertClock(func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			rsp, err := runFunction(t, f, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(rsp.GetResults()) != 0 {
				t.Fatalf("RunFunction(...) results: %v", rsp.GetResults())
			}
			status := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
			drill, _ := status["backup"].(map[string]any)["restoreDrill"].(map[string]any)
			c := conditionOf(rsp, "RestoreDrill")
			got := want{Drill: drill, Status: c.GetStatus(), Reason: c.GetReason()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nstatus.backup.restoreDrill and the RestoreDrill condition: -want, +got:\n%s\nmessage: %s", tc.reason, diff, c.GetMessage())
			}
			if _, ok := rsp.GetDesired().GetResources()["restore-drill-cronjob"]; !ok {
				t.Errorf("the drill's CronJob is not composed")
			}
		})
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
