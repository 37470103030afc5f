package simulate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestHealthyStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := "2026-01-02T03:04:05Z"
	cases := map[string]struct {
		reason string
		obj    map[string]any
		want   map[string]any
		ok     bool
	}{
		"Deployment": {
			reason: "A workload reports every desired replica ready and updated.",
			obj:    map[string]any{"kind": "Deployment", "metadata": map[string]any{"generation": int64(3)}, "spec": map[string]any{"replicas": int64(2)}},
			want:   map[string]any{"observedGeneration": int64(3), "replicas": int64(2), "readyReplicas": int64(2), "updatedReplicas": int64(2), "availableReplicas": int64(2)},
			ok:     true,
		},
		"StatefulSetDefaultReplicas": {
			reason: "Unset replicas mean one.",
			obj:    map[string]any{"kind": "StatefulSet", "spec": map[string]any{}},
			want:   map[string]any{"observedGeneration": int64(0), "replicas": int64(1), "readyReplicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)},
			ok:     true,
		},
		"Job": {
			reason: "A Job completes with the conditions the API server requires.",
			obj:    map[string]any{"kind": "Job"},
			want: map[string]any{
				"startTime": ts, "completionTime": ts, "succeeded": int64(1),
				"conditions": []any{
					map[string]any{"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": ts, "lastTransitionTime": ts},
					map[string]any{"type": "Complete", "status": "True", "lastProbeTime": ts, "lastTransitionTime": ts},
				},
			},
			ok: true,
		},
		"CompletedJob": {
			reason: "A completed Job's status is immutable and left alone.",
			obj:    map[string]any{"kind": "Job", "status": map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}},
		},
		"CNPGCluster": {
			reason: "CloudNativePG reports a Cluster Ready.",
			obj:    map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster"},
			want: map[string]any{"phase": "Cluster in healthy state", "conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "ClusterIsReady", "message": "Cluster is Ready", "lastTransitionTime": ts},
			}},
			ok: true,
		},
		"CNPGDatabase": {
			reason: "CloudNativePG reports a Database applied.",
			obj:    map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Database", "metadata": map[string]any{"generation": int64(2)}},
			want:   map[string]any{"applied": true, "observedGeneration": int64(2)},
			ok:     true,
		},
		"ManagedResource": {
			reason: "A provider reports its managed resource Synced and Ready.",
			obj:    map[string]any{"apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "Release"},
			want: map[string]any{"conditions": []any{
				map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": ts},
				map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": ts},
			}},
			ok: true,
		},
		"Certificate": {
			reason: "cert-manager reports a Certificate Ready, issued once.",
			obj:    map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate"},
			want: map[string]any{"revision": int64(1), "conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": ts},
			}},
			ok: true,
		},
		"ProviderConfig": {
			reason: "A ProviderConfig has no readiness to simulate.",
			obj:    map[string]any{"apiVersion": "postgresql.sql.m.crossplane.io/v1alpha1", "kind": "ProviderConfig"},
		},
		"Secret": {
			reason: "Other kinds have no health to simulate.",
			obj:    map[string]any{"kind": "Secret"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := HealthyStatus(&unstructured.Unstructured{Object: tc.obj}, now)
			if ok != tc.ok {
				t.Errorf("%s\nHealthyStatus(...) ok = %t, want %t", tc.reason, ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHealthyStatus(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
