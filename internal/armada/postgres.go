package armada

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// API versions of the PostgreSQL objects, pinned to what the offline
// validation checks them against: CloudNativePG v1.29.0 and provider-sql
// v0.16.0 (namespaced, Crossplane v2 style).
const (
	apiCNPG          = "postgresql.cnpg.io/v1"
	apiProviderSQL   = "postgresql.sql.m.crossplane.io/v1alpha1"
	apiK8sObject     = "kubernetes.m.crossplane.io/v1alpha1"
	kindClusterPCRef = "ClusterProviderConfig"
	// kindProviderConfig is a provider's namespaced ProviderConfig kind.
	kindProviderConfig = "ProviderConfig"
	// kindDatabase is CloudNativePG's and provider-sql's database kind.
	kindDatabase = "Database"
)

// unstructuredObject is a namespaced object of a kind this module has no Go
// types for (providers' and CloudNativePG's kinds are built as unstructured
// on purpose: their Go modules do not build against crossplane-runtime v2.4).
// Every value must be JSON-compatible: string, bool, int64, float64, []any
// or map[string]any.
func (in *Install) unstructuredObject(apiVersion, kind, name, component string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)
	u.SetNamespace(in.Namespace)
	u.SetLabels(in.labels(component))
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// managementPolicies keep a stateful managed resource's external resource
// when the managed resource is deleted, unless spec.deletionPolicy is
// Delete. Returns nil for the provider's default (every action).
func (in *Install) managementPolicies() []any {
	if in.Spec.DeletionPolicy == deletionDelete {
		return nil
	}
	return []any{"Observe", "Create", "Update", "LateInitialize"}
}

// protect applies managementPolicies to a managed resource's spec.
func (in *Install) protect(spec map[string]any) map[string]any {
	if p := in.managementPolicies(); p != nil {
		spec["managementPolicies"] = p
	}
	return spec
}

// cnpgClusterName is the CloudNativePG Cluster's name. CloudNativePG
// derives its Services (<name>-rw) and app Secret (<name>-app) from it.
func (in *Install) cnpgClusterName() string { return in.object("postgres") }

// cnpgCluster is the CloudNativePG Cluster, wrapped in a provider-kubernetes
// Object so that spec.deletionPolicy Orphan can leave it, with its volumes,
// in place when the claim is deleted: a Cluster composed directly would be
// garbage-collected with the XR. The Object is Ready when the Cluster's own
// Ready condition is. With spec.postgres.backup it archives WAL through
// the Barman Cloud Plugin; with spec.postgres.restore it bootstraps by
// recovery (backup.go).
func (in *Install) cnpgCluster() *unstructured.Unstructured {
	ic := in.Spec.Postgres.InCluster
	storage := map[string]any{"size": ic.StorageSize.String()}
	if ic.StorageClass != "" {
		storage["storageClass"] = ic.StorageClass
	}
	spec := map[string]any{
		"instances": int64(ic.Instances),
		"imageName": ic.ImageName,
		"storage":   storage,
		"bootstrap": map[string]any{"initdb": map[string]any{"database": cnpgOwner, "owner": cnpgOwner}},
		// The Armada components are the only clients.
		"enableSuperuserAccess": false,
	}
	if ic.Resources != nil {
		spec["resources"] = toJSONMap(ic.Resources)
	}
	in.clusterBackupSpec(spec)
	cluster := in.unstructuredObject(apiCNPG, "Cluster", in.cnpgClusterName(), "postgres", spec)
	return in.protectedObject(in.object("postgres-cluster"), readyFromObject, cluster)
}

// cnpgDatabase is a CloudNativePG Database in the composed cluster, owned
// by cnpgOwner. Its reclaim policy follows spec.deletionPolicy, so deleting
// it keeps the database unless the user asked otherwise.
func (in *Install) cnpgDatabase(db string) *unstructured.Unstructured {
	reclaim := "retain"
	if in.Spec.DeletionPolicy == deletionDelete {
		reclaim = "delete"
	}
	return in.unstructuredObject(apiCNPG, kindDatabase, in.databaseObject(db), "postgres", map[string]any{
		"cluster":               map[string]any{"name": in.cnpgClusterName()},
		"name":                  db,
		"owner":                 cnpgOwner,
		"databaseReclaimPolicy": reclaim,
	})
}

// sqlProviderConfig is the provider-sql ProviderConfig for an external
// server, reading the user's admin connection Secret.
func (in *Install) sqlProviderConfig() *unstructured.Unstructured {
	pg := in.Spec.Postgres
	return in.unstructuredObject(apiProviderSQL, kindProviderConfig, in.sqlProviderConfigName(), "postgres", map[string]any{
		"credentials": map[string]any{
			"source":              "PostgreSQLConnectionSecret",
			"connectionSecretRef": map[string]any{"name": pg.AdminSecretRef.Name},
		},
		"sslMode":         sqlSSLMode(pg.SSLMode),
		"defaultDatabase": "postgres",
	})
}

// Selection is the objects of one kind in one namespace that carry labels.
type Selection struct {
	APIVersion, Kind, Namespace string
	Labels                      map[string]string
}

// LeavingSQLDatabases selects the provider-sql Databases the install
// composed, while its ProviderConfig is observed but its spec composes
// none (an allowed switch of spec.postgres.mode to InCluster): Crossplane
// deletes them and stops observing them at once, while provider-sql still
// needs the ProviderConfig to drop or release them. ok is false when there
// is nothing to look for. UsesSQLProviderConfig tells which of those
// selected need the install's ProviderConfig.
func (in *Install) LeavingSQLDatabases(o Observed) (s Selection, ok bool) {
	pg := in.Spec.Postgres
	if o.SQLProviderConfig == nil || pg.Mode != modeInCluster && pg.AdminSecretRef != nil {
		return Selection{}, false
	}
	return Selection{APIVersion: apiProviderSQL, Kind: kindDatabase, Namespace: in.Namespace, Labels: in.selector("postgres")}, true
}

// UsesSQLProviderConfig reports whether a provider-sql Database names the
// install's ProviderConfig.
func (in *Install) UsesSQLProviderConfig(db *unstructured.Unstructured) bool {
	kind, _, _ := unstructured.NestedString(db.Object, "spec", "providerConfigRef", "kind")
	name, _, _ := unstructured.NestedString(db.Object, "spec", "providerConfigRef", "name")
	return db.GetAPIVersion() == apiProviderSQL && db.GetKind() == kindDatabase && db.GetNamespace() == in.Namespace &&
		kind == kindProviderConfig && name == in.sqlProviderConfigName()
}

// sqlProviderConfigSuffix ends the name of the provider-sql ProviderConfig.
const sqlProviderConfigSuffix = "postgres-admin"

// sqlProviderConfigName names the provider-sql ProviderConfig: the
// Armada's name, "postgres-admin" and a short hash of its namespace and
// name, so that no two Armadas' ProviderConfigs share a name. provider-sql
// v0.16.0 (crossplane-runtime v2.2.1) counts a namespaced ProviderConfig's
// users by name across every namespace (crossplane/crossplane#7154): one
// named like another Armada's would count that Armada's Databases too,
// and its deletion would wait on them. An Armada that already composes the
// unhashed name keeps it.
func (in *Install) sqlProviderConfigName() string {
	if in.legacySQLProviderConfig {
		return in.object(sqlProviderConfigSuffix)
	}
	return in.object(sqlProviderConfigSuffix + "-" + armadaHash(in.Namespace, in.Name, 6))
}

// SQLProviderConfigAPIVersion and SQLProviderConfigKind identify
// provider-sql's ProviderConfig among an XR's composed resources
// (XR.ComposedSQLProviderConfigs).
const (
	SQLProviderConfigAPIVersion = apiProviderSQL
	SQLProviderConfigKind       = kindProviderConfig
)

// sqlSSLMode maps a libpq sslmode onto provider-sql's narrower enum:
// allow and prefer try TLS first, so they become require.
func sqlSSLMode(mode string) string {
	switch mode {
	case "allow", "prefer":
		return "require"
	default:
		return mode
	}
}

// sqlDatabase is a provider-sql Database on the external server, owned by
// the user Armada connects as. Its external name is the database's name.
func (in *Install) sqlDatabase(db string) *unstructured.Unstructured {
	u := in.unstructuredObject(apiProviderSQL, kindDatabase, in.databaseObject(db), "postgres", in.protect(map[string]any{
		"forProvider":       map[string]any{"owner": in.Spec.Postgres.User},
		"providerConfigRef": map[string]any{"kind": kindProviderConfig, "name": in.sqlProviderConfigName()},
	}))
	u.SetAnnotations(map[string]string{annotationExternalName: db})
	return u
}

// databaseObject names the object of database db. A PostgreSQL name may
// hold "_", an object name may not: each becomes "-" (which a database
// name cannot hold, so names stay distinct), and a name that would then
// end in "-" gets a trailing "x".
func (in *Install) databaseObject(db string) string {
	return in.object("postgres-" + databaseSuffix(db))
}

func databaseSuffix(db string) string {
	n := strings.ReplaceAll(db, "_", "-")
	if strings.HasSuffix(n, "-") {
		n += "x"
	}
	return n
}

// databases are the two database names.
func databases(pg *v1alpha1.Postgres) []string {
	return []string{pg.Databases.Scheduler, pg.Databases.Lookout}
}
