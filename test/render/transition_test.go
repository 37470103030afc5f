package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// TestSchemaTransitions runs the generated XRD's CEL rules on updates,
// with the old object, through the API server's own CEL validator: the
// offline validator has no old object, so transition rules (oldSelf) are
// proven here.
func TestSchemaTransitions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "package", "xarmada", "definition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var xrd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema extv1.JSONSchemaProps `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &xrd); err != nil {
		t.Fatal(err)
	}
	v1 := xrd.Spec.Versions[0].Schema.OpenAPIV3Schema
	top := extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{"spec": v1.Properties["spec"]}}
	var internal apiextensions.JSONSchemaProps
	s := runtime.NewScheme()
	if err := extv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Convert(&top, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	validator := cel.NewValidator(structural, true, celconfig.PerCallLimit)

	const store = "{bucket: armada-backups, path: prod, accessKeyIdSecretRef: {name: s3, key: id}, secretAccessKeySecretRef: {name: s3, key: secret}}"
	restore := func(server string) string {
		return "{mode: InCluster, restore: {serverName: " + server + ", objectStore: " + store + "}}"
	}
	cases := map[string]struct {
		reason string
		// field is the spec field old and new are; empty: postgres.
		field    string
		old, new string
		want     string
	}{
		"RestoreKept": {
			reason: "An unchanged restore is accepted on every update.",
			old:    restore("old-postgres"), new: restore("old-postgres"),
		},
		"RestoreChanged": {
			reason: "A restore only bootstraps: changing it on a live Armada is refused.",
			old:    restore("old-postgres"), new: restore("other-postgres"),
			want: "spec.postgres.restore cannot be added, changed or removed on a live Armada",
		},
		"RestoreAdded": {
			reason: "Adding a restore to a live Armada would restore nothing: refused.",
			old:    "{mode: InCluster}", new: restore("old-postgres"),
			want: "spec.postgres.restore cannot be added, changed or removed on a live Armada",
		},
		"RestoreRemoved": {
			reason: "Removing it changes the live Cluster's bootstrap: refused.",
			old:    restore("old-postgres"), new: "{mode: InCluster}",
			want: "spec.postgres.restore cannot be added, changed or removed on a live Armada",
		},
		"ModeSwitchWithRestore": {
			reason: "An allowed switch to a new in-cluster database may restore into it.",
			old:    "{mode: External, host: pg, user: armada, passwordSecretRef: {name: pg, key: password}}",
			new:    "{mode: InCluster, allowModeChange: true, restore: {serverName: old-postgres, objectStore: " + store + "}}",
		},
		"RedisSentinelKept": {
			reason: "An in-cluster Redis with Sentinel may change its sizes.",
			field:  "redis", old: "{mode: InCluster, inCluster: {sentinel: {}}}", new: "{mode: InCluster, inCluster: {sentinel: {replicas: 5}}}",
		},
		"RedisSentinelAdded": {
			reason: "Adding Sentinel to a live in-cluster Redis would change its Service to headless: refused.",
			field:  "redis", old: "{mode: InCluster}", new: "{mode: InCluster, inCluster: {sentinel: {}}}",
			want: "spec.redis.inCluster.sentinel cannot be added to or removed from a live in-cluster Redis",
		},
		"RedisSentinelRemoved": {
			reason: "Removing it is refused too.",
			field:  "redis", old: "{mode: InCluster, inCluster: {sentinel: {}}}", new: "{mode: InCluster, inCluster: {}}",
			want: "spec.redis.inCluster.sentinel cannot be added to or removed from a live in-cluster Redis",
		},
		"RedisSentinelWithModeSwitch": {
			reason: "A switch from an External Redis may compose it with Sentinel.",
			field:  "redis", old: "{mode: External, addrs: [\"redis:6379\"]}", new: "{mode: InCluster, allowModeChange: true, inCluster: {sentinel: {}}}",
		},
	}
	obj := func(field, v string) map[string]any {
		t.Helper()
		if field == "" {
			field = "postgres"
		}
		var m map[string]any
		// Modes are written out: the API server defaults them before its
		// rules run, and this validator does not default.
		if err := yaml.Unmarshal([]byte("spec:\n  auth: {basicUsers: [{name: admin}]}\n  "+field+": "+v+"\n"), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, _ := validator.Validate(context.Background(), field.NewPath(""), structural, obj(tc.field, tc.new), obj(tc.field, tc.old), celconfig.RuntimeCELCostBudget)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("%s\nupdate refused: %v", tc.reason, got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("%s\nupdate errors %v, want one containing %q", tc.reason, got, tc.want)
			}
		})
	}
}
