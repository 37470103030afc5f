package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/armadaproject/armada-crossplane/internal/harness/testutil"
	"github.com/armadaproject/armada-crossplane/internal/harness/thirdparty"
	"github.com/armadaproject/armada-crossplane/internal/harness/xprender"
)

// valid is a minimal valid claim; cases replace parts of it.
const valid = `apiVersion: platform.armadaproject.io/v1alpha1
kind: ArmadaClaim
metadata: {name: armada, namespace: armada}
spec:
  postgres: {host: pg, user: armada, passwordSecretRef: {name: pg, key: password}}
  redis: {addrs: ["redis:6379"]}
  pulsar: {url: "pulsar://pulsar:6650", adminURL: "http://pulsar:8080"}
  auth: {basicUsers: [{name: admin}]}
`

// inCluster is a valid claim with every backing service in-cluster.
const inCluster = `apiVersion: platform.armadaproject.io/v1alpha1
kind: ArmadaClaim
metadata: {name: armada, namespace: armada}
spec:
  postgres: {mode: InCluster}
  redis: {mode: InCluster}
  pulsar: {mode: InCluster}
  auth: {basicUsers: [{name: admin}]}
`

// objectStore is a valid spec.postgres.backup.objectStore, in flow style.
const objectStore = "{bucket: armada-backups, path: prod, accessKeyIdSecretRef: {name: s3, key: id}, secretAccessKeySecretRef: {name: s3, key: secret}}"

// TestSchema proves the generated XRD rejects bad claims before they reach
// the function, with messages that name the field: the real Crossplane
// validator applies the XRD's OpenAPI schema and CEL rules offline.
func TestSchema(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		claim  string
		want   []string
	}{
		"Valid": {
			reason: "The minimal claim is accepted.",
			claim:  valid,
		},
		"UnsupportedVersion": {
			reason: "Only supported Armada versions are accepted.",
			claim:  valid + "  version: \"0.21.0\"\n",
			want:   []string{`spec.version: Unsupported value: "0.21.0": supported values: "0.22.6", "0.22.7", "0.22.8"`},
		},
		"NoAuthMethod": {
			reason: "Anonymous access must be asked for explicitly.",
			claim:  strings.Replace(valid, "auth: {basicUsers: [{name: admin}]}", "auth: {}", 1),
			want:   []string{"spec: Invalid value: spec.auth needs at least one user-facing method"},
		},
		// Duplicate pool, user and executor names are list-map keys
		// (x-kubernetes-list-type: map), which the API server enforces but
		// the offline validator does not; the function rejects them too
		// (internal/armada TestNew).
		"ExecutorPoolNotScheduled": {
			reason: "A CEL rule ties executor pools to the scheduler's pools.",
			claim:  valid + "  scheduling: {pools: [{name: cpu}]}\n  executors: [{clusterId: c, pool: gpu}]\n",
			want:   []string{"every spec.executors[].pool must name a pool in spec.scheduling.pools"},
		},
		"MissingPostgresPassword": {
			reason: "Credentials come from a Secret reference, which is required.",
			claim:  strings.Replace(valid, ", passwordSecretRef: {name: pg, key: password}", "", 1),
			want:   []string{"spec.postgres: Invalid value: spec.postgres: External mode needs host, user and passwordSecretRef"},
		},
		"BadPulsarURL": {
			reason: "Pulsar URLs are pulsar:// or pulsar+ssl://.",
			claim:  strings.Replace(valid, "pulsar://pulsar:6650", "http://pulsar:8080", 1),
			want:   []string{"spec.pulsar.url: Invalid value"},
		},
		"ImageRegistrySyntax": {
			reason: "spec.imageRegistry is a registry host, port and path: a space is refused at apply, naming the field.",
			claim:  valid + "  imageRegistry: \"evil.example.com/x y\"\n",
			want:   []string{"spec.imageRegistry: Invalid value"},
		},
		"ImageRegistryValid": {
			reason: "A host, port and path is a valid spec.imageRegistry.",
			claim:  valid + "  imageRegistry: registry.example.com:5000/mirror/\n",
		},
		"MonitoringReservedLabel": {
			reason: "Monitoring labels cannot override the labels the function sets.",
			claim:  valid + "  monitoring: {enabled: true, labels: {app.kubernetes.io/name: x}}\n",
			want:   []string{"spec.monitoring.labels cannot set app.kubernetes.io/ labels"},
		},
		"MonitoringBadScrapeInterval": {
			reason: "The scrape interval is a Prometheus duration in seconds or minutes.",
			claim:  valid + "  monitoring: {enabled: true, scrapeInterval: 15}\n",
			want:   []string{"spec.monitoring.scrapeInterval"},
		},
		"InCluster": {
			reason: "Every backing service may be composed in-cluster with no connection settings.",
			claim:  inCluster,
		},
		"InClusterWithHost": {
			reason: "An in-cluster Postgres takes no external connection settings.",
			claim:  strings.Replace(inCluster, "postgres: {mode: InCluster}", "postgres: {mode: InCluster, host: pg}", 1),
			want:   []string{"spec.postgres: InCluster mode takes no host, user, passwordSecretRef or adminSecretRef"},
		},
		"ExternalWithInClusterSettings": {
			reason: "In-cluster settings are only valid in-cluster.",
			claim:  strings.Replace(valid, `redis: {addrs: ["redis:6379"]}`, `redis: {addrs: ["redis:6379"], inCluster: {image: redis}}`, 1),
			want:   []string{"spec.redis.inCluster is only valid with mode: InCluster"},
		},
		"RedisSentinel": {
			reason: "The in-cluster Redis may run with replicas and Sentinel failover.",
			claim:  strings.Replace(inCluster, "redis: {mode: InCluster}", "redis: {mode: InCluster, inCluster: {sentinel: {replicas: 3, sentinels: 5}}}", 1),
		},
		"RedisSentinelEvenCount": {
			reason: "A failover needs a majority of the Sentinels: their count is odd.",
			claim:  strings.Replace(inCluster, "redis: {mode: InCluster}", "redis: {mode: InCluster, inCluster: {sentinel: {sentinels: 4}}}", 1),
			want:   []string{"spec.redis.inCluster.sentinel.sentinels must be odd"},
		},
		"RedisSentinelOneReplica": {
			reason: "Failover needs a replica to promote.",
			claim:  strings.Replace(inCluster, "redis: {mode: InCluster}", "redis: {mode: InCluster, inCluster: {sentinel: {replicas: 1}}}", 1),
			want:   []string{"spec.redis.inCluster.sentinel.replicas: Invalid value: 1: spec.redis.inCluster.sentinel.replicas in body should be greater than or equal to 2"},
		},
		"ExternalPulsarNeedsAdminURL": {
			reason: "The topic-init Job needs the external admin URL.",
			claim:  strings.Replace(valid, `, adminURL: "http://pulsar:8080"`, "", 1),
			want:   []string{"spec.pulsar: External mode needs url and adminURL"},
		},
		"UnknownMode": {
			reason: "Modes are an enum.",
			claim:  strings.Replace(inCluster, "redis: {mode: InCluster}", "redis: {mode: Managed}", 1),
			want:   []string{`spec.redis.mode: Unsupported value: "Managed"`},
		},
		"BadDeletionPolicy": {
			reason: "The deletion policy is Orphan or Delete.",
			claim:  valid + "  deletionPolicy: Retain\n",
			want:   []string{`spec.deletionPolicy: Unsupported value: "Retain"`},
		},
		"TooManyPartitions": {
			reason: "Partitions are bounded.",
			claim:  strings.Replace(inCluster, "pulsar: {mode: InCluster}", "pulsar: {mode: InCluster, eventsPartitions: 100}", 1),
			want:   []string{"spec.pulsar.eventsPartitions: Invalid value: 100"},
		},
		"ReplicasOutOfRange": {
			reason: "Replicas are bounded.",
			claim:  valid + "  components: {server: {replicas: 0}}\n",
			want:   []string{"spec.components.server.replicas: Invalid value: 0: spec.components.server.replicas in body should be greater than or equal to 1"},
		},
		"Backup": {
			reason: "An in-cluster PostgreSQL may be backed up to an object store and restored from another's.",
			claim: strings.Replace(inCluster, "postgres: {mode: InCluster}", "postgres: {mode: InCluster, backup: {objectStore: "+objectStore+"}, "+
				"restore: {serverName: old-postgres, targetTime: \"2026-12-01T10:00:00Z\", objectStore: "+objectStore+"}}", 1),
		},
		"BackupOnExternal": {
			reason: "An External database is backed up by its provider.",
			claim:  strings.Replace(valid, "key: password}}", "key: password}, backup: {objectStore: "+objectStore+"}}", 1),
			want:   []string{"spec.postgres.backup is only valid with mode: InCluster"},
		},
		"RestoreOnExternal": {
			reason: "An External database is restored by its provider.",
			claim:  strings.Replace(valid, "key: password}}", "key: password}, restore: {serverName: old-postgres, objectStore: "+objectStore+"}}", 1),
			want:   []string{"spec.postgres.restore is only valid with mode: InCluster"},
		},
		"BackupWithoutObjectStore": {
			reason: "Backups need an object store.",
			claim:  strings.Replace(inCluster, "postgres: {mode: InCluster}", `postgres: {mode: InCluster, backup: {schedule: "0 0 2 * * *"}}`, 1),
			want:   []string{"spec.postgres.backup needs objectStore"},
		},
		"BackupFiveFieldSchedule": {
			reason: "CloudNativePG's schedule has six fields, seconds first.",
			claim:  strings.Replace(inCluster, "postgres: {mode: InCluster}", `postgres: {mode: InCluster, backup: {schedule: "0 2 * * *", objectStore: `+objectStore+"}}", 1),
			want:   []string{"spec.postgres.backup.schedule: Invalid value"},
		},
		"RestoreDrillSixFieldSchedule": {
			reason: "The restore drill is a Kubernetes CronJob: five fields or a macro.",
			claim: strings.Replace(inCluster, "postgres: {mode: InCluster}", `postgres: {mode: InCluster, backup: {objectStore: `+objectStore+
				`, restoreDrill: {schedule: "0 0 4 * * 0"}}}`, 1),
			want: []string{"spec.postgres.backup.restoreDrill.schedule: Invalid value"},
		},
		"RestoreDrillMaxAgeNotAfterTimeout": {
			reason: "A drill is overdue only after it could have ended.",
			claim: strings.Replace(inCluster, "postgres: {mode: InCluster}", `postgres: {mode: InCluster, backup: {objectStore: `+objectStore+
				`, restoreDrill: {timeout: 3h, maxAge: 2h}}}`, 1),
			want: []string{"restoreDrill.maxAge must be longer than timeout"},
		},
		"RestoreDrillShortTimeout": {
			reason: "A drill needs at least a minute.",
			claim: strings.Replace(inCluster, "postgres: {mode: InCluster}", `postgres: {mode: InCluster, backup: {objectStore: `+objectStore+
				`, restoreDrill: {timeout: 30s}}}`, 1),
			want: []string{"spec.postgres.backup.restoreDrill.timeout: Invalid value", "must be at least 1m"},
		},
		"RestoreBadTargetTime": {
			reason: "A point in time is an RFC 3339 date-time.",
			claim:  strings.Replace(inCluster, "postgres: {mode: InCluster}", "postgres: {mode: InCluster, restore: {serverName: old-postgres, targetTime: yesterday, objectStore: "+objectStore+"}}", 1),
			want:   []string{"spec.postgres.restore.targetTime"},
		},
		"IssuerRef": {
			reason: "A cert-manager ClusterIssuer by name is accepted.",
			claim:  valid + "  tls: {issuerRef: {name: corp-ca, kind: ClusterIssuer}}\n",
		},
		"IssuerRefBadKind": {
			reason: "An issuer is an Issuer or a ClusterIssuer.",
			claim:  valid + "  tls: {issuerRef: {name: corp-ca, kind: Certificate}}\n",
			want:   []string{`spec.tls.issuerRef.kind: Unsupported value: "Certificate"`},
		},
		"IssuerRefEmptyName": {
			reason: "An issuer needs a name.",
			claim:  valid + "  tls: {issuerRef: {name: \"\"}}\n",
			want:   []string{`spec.tls.issuerRef.name: Invalid value: ""`},
		},
		"ImageRegistryWithSpace": {
			reason: "A registry with a space would compose invalid image references into every pod.",
			claim:  valid + "  imageRegistry: \"evil.example.com/x y\"\n",
			want:   []string{"spec.imageRegistry: Invalid value"},
		},
		"ImageRegistryWithPort": {
			reason: "A registry host with a port and a path is a valid prefix.",
			claim:  valid + "  imageRegistry: localhost:5000/mirror\n",
		},
		"RotationNegative": {
			reason: "Rotation generations are 0 or more.",
			claim:  valid + "  rotation: {passwords: {admin: -1}}\n",
			want:   []string{"spec.rotation.passwords: each generation is between 0 and 1000000"},
		},
		"Rotation": {
			reason: "Rotation generations for a password and the CA are accepted.",
			claim:  valid + "  rotation: {passwords: {admin: 1}, ca: 2}\n",
		},
		"IssuerRefTLSOff": {
			reason: "An issuer with TLS off would be ignored.",
			claim:  valid + "  tls: {enabled: false, issuerRef: {name: corp-ca}}\n",
			want:   []string{"spec.tls.issuerRef needs spec.tls.enabled: true"},
		},
	}
	xrd := filepath.Join(root, "package", "xarmada", "definition.yaml")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { validateOne(t, tools, xrd, tc.reason, tc.claim, tc.want) })
	}
}

// validateOne validates one document against an XRD offline: with want
// empty it must pass, else fail with output containing every want.
func validateOne(t *testing.T, tools xprender.Tools, xrd, reason, doc string, want []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := filepath.Join(t.TempDir(), "doc.yaml")
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := tools.Validate(ctx, []string{xrd}, f, nil)
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s\nvalidate rejected a valid document: %v", reason, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("%s\nvalidate accepted the document:\n%s", reason, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("%s\nvalidate output does not contain %q:\n%s", reason, w, out)
		}
	}
}

// TestExamplesValidate checks every example file, claims and Secrets
// alike, against the XRD and Kubernetes' built-in schemas.
func TestExamplesValidate(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	xrd := filepath.Join(root, "package", "xarmada", "definition.yaml")
	// Examples also carry the providers' configs they need (e.g. the
	// worker clusters' ClusterProviderConfigs).
	crds, err := thirdparty.CRDDirs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exts := append([]string{
		xrd, filepath.Join(root, "package", "xarmada", "queue-definition.yaml"),
		filepath.Join(root, "package", "xarmada", "namespaced-definition.yaml"),
		filepath.Join(root, "package", "xarmada", "namespaced-queue-definition.yaml"),
		filepath.Join(root, "package", "provider", "crds"),
		// examples/tenancy-policy.yaml's ArmadaTenancyPolicies.
		filepath.Join(root, "cluster", "tenancy"),
	}, crds...)
	if out, err := tools.Validate(ctx, exts, testutil.Example(), nil); err != nil {
		t.Errorf("examples do not validate: %v", err)
	} else {
		t.Logf("%s", lastLine(out))
	}
}

// TestPackageManifestsValidate checks the hand-written manifests the
// package and docs/guides/install.md ship (the activation policy, the RBAC for
// Crossplane, the claims' admission policy) against Crossplane's CRDs and Kubernetes' schemas.
func TestPackageManifestsValidate(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := testutil.ModuleDir(ctx, "github.com/crossplane/crossplane/v2", xprender.CoreVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		filepath.Join(root, "package", "xarmada", "activation.yaml"),
		// The v2 XRDs against Crossplane's own schema and CEL rules for
		// apiextensions.crossplane.io/v2 (no claims, no LegacyCluster).
		filepath.Join(root, "package", "xarmada", "namespaced-definition.yaml"),
		filepath.Join(root, "package", "xarmada", "namespaced-composition.yaml"),
		filepath.Join(root, "package", "xarmada", "namespaced-queue-definition.yaml"),
		filepath.Join(root, "package", "xarmada", "namespaced-queue-composition.yaml"),
		filepath.Join(root, "cluster", "rbac", "crossplane-armada.yaml"),
		filepath.Join(root, "cluster", "rbac", "armada-crossplane-roles.yaml"),
		filepath.Join(root, "cluster", "admission", "claims.yaml"),
	} {
		if out, err := tools.Validate(ctx, []string{filepath.Join(dir, "cluster", "crds")}, f, nil); err != nil {
			t.Errorf("%s does not validate: %v", f, err)
		} else {
			t.Logf("%s: %s", filepath.Base(f), lastLine(out))
		}
	}
}

// namespacedValid is a minimal valid namespaced Armada; cases replace parts
// of it.
const namespacedValid = `apiVersion: platform.armadaproject.io/v1alpha1
kind: Armada
metadata: {name: armada, namespace: team-a}
spec:
  clusterScope: {providerConfigRef: {name: in-cluster}}
  postgres: {host: pg, user: armada, passwordSecretRef: {name: pg, key: password}}
  redis: {addrs: ["redis:6379"]}
  pulsar: {url: "pulsar://pulsar:6650", adminURL: "http://pulsar:8080"}
  auth: {basicUsers: [{name: admin}]}
`

// TestSchemaNamespaced proves the namespaced Armada's v2 XRD carries the
// same rules as the XArmada's and its own: spec.namespace does not exist,
// spec.clusterScope names a provider-kubernetes config kind.
func TestSchemaNamespaced(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		xr     string
		want   []string
	}{
		"Valid": {
			reason: "The minimal namespaced Armada is accepted.",
			xr:     namespacedValid,
		},
		"NoAuthMethod": {
			reason: "The XArmada's CEL rules hold for the namespaced kind too.",
			xr:     strings.Replace(namespacedValid, "auth: {basicUsers: [{name: admin}]}", "auth: {}", 1),
			want:   []string{"spec: Invalid value: spec.auth needs at least one user-facing method"},
		},
		"SpecNamespace": {
			reason: "spec.namespace does not exist on the namespaced kind.",
			xr:     namespacedValid + "  namespace: elsewhere\n",
			want:   []string{`spec.namespace: Invalid value: "namespace": unknown field`},
		},
		"ClusterScopeKind": {
			reason: "spec.clusterScope names a ClusterProviderConfig or ProviderConfig.",
			xr:     strings.Replace(namespacedValid, "{name: in-cluster}", "{kind: Secret, name: in-cluster}", 1),
			want:   []string{`spec.clusterScope.providerConfigRef.kind: Unsupported value: "Secret"`},
		},
	}
	xrd := filepath.Join(root, "package", "xarmada", "namespaced-definition.yaml")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { validateOne(t, tools, xrd, tc.reason, tc.xr, tc.want) })
	}
}

// TestSchemaQueue proves the team queue XRD refuses, before the function
// runs, job namespaces that are the platform's.
func TestSchemaQueue(t *testing.T) {
	tools, err := xprender.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	claim := func(namespaces string) string {
		return `apiVersion: platform.armadaproject.io/v1alpha1
kind: ArmadaQueueClaim
metadata: {name: ml, namespace: team-ml}
spec:
  armada: {name: armada, namespace: armada}
  groupOwners: [team-ml]
  namespaces: ` + namespaces + "\n"
	}
	platform := "spec.namespaces cannot name the platform's namespaces (kube-*, default, crossplane-system)"
	cases := map[string]struct {
		reason string
		claim  string
		want   []string
	}{
		"TeamNamespace": {reason: "A namespace of the team's own is accepted.", claim: claim("[team-ml-jobs]")},
		"KubeSystem":    {reason: "Kubernetes' namespaces are the platform's.", claim: claim("[team-ml-jobs, kube-system]"), want: []string{platform}},
		"Default":       {reason: "default is the platform's.", claim: claim("[default]"), want: []string{platform}},
		"Crossplane":    {reason: "Crossplane's namespace is the platform's.", claim: claim("[crossplane-system]"), want: []string{platform}},
	}
	xrd := filepath.Join(root, "package", "xarmada", "queue-definition.yaml")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { validateOne(t, tools, xrd, tc.reason, tc.claim, tc.want) })
	}
}
