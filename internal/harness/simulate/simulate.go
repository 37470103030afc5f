// Package simulate stands in for what no local process does: a kubelet
// and the workload controllers reporting Jobs complete and workloads
// available. Render convergence, `make run -simulate-healthy` and the e2e
// tests all use it, so they agree on what "healthy" looks like.
package simulate

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

// kindObject is provider-kubernetes' Object kind.
const kindObject = "Object"

// AsCreated makes obj what a healthy cluster reports for a composed
// object its provider created: HealthyStatus's status, and on a
// provider-kubernetes Object the annotation crossplane-runtime records
// once it has created the object it carries (without it the function
// takes a worker cluster's namespace for one found there, observed only).
func AsCreated(obj *unstructured.Unstructured, now time.Time) {
	if status, ok := HealthyStatus(obj, now); ok {
		obj.Object["status"] = status
	}
	if obj.GetKind() != kindObject {
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a["crossplane.io/external-create-succeeded"] = "2026-01-01T00:00:00Z"
	obj.SetAnnotations(a)
}

// HealthyStatus returns the status a healthy cluster reports for obj, and
// whether obj is a kind that has one: a Job, Deployment or StatefulSet; a
// CloudNativePG Cluster ready or Database applied, as the operator reports; a Crossplane managed
// resource (provider-kubernetes Object, provider-helm Release,
// provider-sql Database) its provider reports Synced and Ready. A Job that
// already completed returns false: its completion is immutable.
func HealthyStatus(obj *unstructured.Unstructured, now time.Time) (map[string]any, bool) {
	group, _, _ := strings.Cut(obj.GetAPIVersion(), "/")
	switch {
	case group == "postgresql.cnpg.io" && obj.GetKind() == "Cluster":
		ts := now.UTC().Format(time.RFC3339)
		return map[string]any{"phase": "Cluster in healthy state", "conditions": []any{
			condition("Ready", "ClusterIsReady", ts, "message", "Cluster is Ready"),
		}}, true
	case group == "postgresql.cnpg.io" && obj.GetKind() == "Database":
		return map[string]any{"applied": true, "observedGeneration": obj.GetGeneration()}, true
	case group == "cert-manager.io" && obj.GetKind() == "Certificate":
		// Issued once: revision 1.
		ts := now.UTC().Format(time.RFC3339)
		return map[string]any{"revision": int64(1), "conditions": []any{
			condition("Ready", "Ready", ts, "message", "Certificate is up to date and has not expired"),
		}}, true
	case strings.HasSuffix(group, ".crossplane.io") && managedKinds[obj.GetKind()]:
		ts := now.UTC().Format(time.RFC3339)
		status := map[string]any{"conditions": []any{
			condition("Synced", "ReconcileSuccess", ts),
			condition("Ready", "Available", ts),
		}}
		// provider-kubernetes reports the object in its cluster, healthy too.
		if m, ok, _ := unstructured.NestedMap(obj.Object, "spec", "forProvider", "manifest"); ok && obj.GetKind() == kindObject {
			if st, ok := HealthyStatus(&unstructured.Unstructured{Object: m}, now); ok {
				m["status"] = st
			}
			status["atProvider"] = map[string]any{"manifest": m}
		}
		return status, true
	}
	switch obj.GetKind() {
	case "Job":
		if complete(obj) {
			return nil, false
		}
		ts := now.UTC().Format(time.RFC3339)
		return map[string]any{
			"startTime": ts, "completionTime": ts, "succeeded": int64(1),
			"conditions": []any{
				condition("SuccessCriteriaMet", "", ts, "lastProbeTime", ts),
				condition("Complete", "", ts, "lastProbeTime", ts),
			},
		}, true
	case "Deployment", "StatefulSet":
		// Unset replicas mean one; rendered objects hold int64s, decoded
		// JSON float64s.
		n := int64(1)
		spec, _ := obj.Object["spec"].(map[string]any)
		switch v := spec["replicas"].(type) {
		case int64:
			n = v
		case float64:
			n = int64(v)
		}
		return map[string]any{
			"observedGeneration": obj.GetGeneration(),
			"replicas":           n, "readyReplicas": n, "updatedReplicas": n, "availableReplicas": n,
		}, true
	}
	return nil, false
}

// condTrue is a condition's True status.
const condTrue = "True"

// keyLTT is a condition's lastTransitionTime field.
const keyLTT = "lastTransitionTime"

// managedKinds are the managed-resource kinds the function composes.
var managedKinds = map[string]bool{kindObject: true, "Release": true, "Database": true}

func complete(obj *unstructured.Unstructured) bool {
	c, _ := manifest.ConditionOf(obj, "Complete")
	return c.Status == condTrue
}

// condition is a True condition of a type, with a reason if not empty, the
// transition time ts and extra key/value pairs.
func condition(typ, reason, ts string, extra ...string) map[string]any {
	c := map[string]any{"type": typ, "status": condTrue, keyLTT: ts}
	if reason != "" {
		c["reason"] = reason
	}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}
