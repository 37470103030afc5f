package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// deletionTimeout bounds the wait for a deleted claim's or dropped mode's
// managed resources to leave the API server: the XR's deletion, the
// garbage collector and provider-sql each take a turn.
const deletionTimeout = 3 * time.Minute

// TestSQLDataProtection proves spec.deletionPolicy on real databases.
// provider-sql runs in the control plane; each case applies the
// all-external example pointed at a private PostgreSQL (its claim's host
// and port, and the admin Secret provider-sql connects with), and waits
// until provider-sql has created the two composed databases there, owned
// by the claim's user. Then the databases leave the Armada's desired state,
// by deleting the claim or by an allowed switch of spec.postgres.mode from
// External to InCluster. Once provider-sql has let go of its Database
// objects (they are gone from the API server, so whatever the policy said
// has been done), the server still has both databases, with their owner,
// under the default Orphan, and has neither under Delete. A switch is made
// with provider-sql stopped (switchHoldingProviderSQL): the ProviderConfig
// its Databases need must outlive them, and goes after them.
//
// A neighbour, an Armada of the same name in another namespace with
// Databases of its own on the same server, stays through every case, and
// each case's ProviderConfig counts only its own Databases' usages
// (status.users). provider-sql v0.16.0 counts a ProviderConfig's usages by
// its name in every namespace (crossplane-runtime before v2.3.0), so a
// ProviderConfig named like the neighbour's would count the neighbour's
// Databases too, and its deletion would wait for them.
func TestSQLDataProtection(t *testing.T) {
	parallel(t)
	pg := testenv.StartPostgres(t)
	neighbour := installOnPostgres(t, pg, "e2e-sql-neighbour", "neighbour", "")
	waitProviderConfigUsers(t, neighbour.claim, len(neighbour.mrs))
	for _, tc := range []struct {
		name string
		// policy is spec.deletionPolicy; empty leaves the default, Orphan.
		policy string
		// switchMode leaves through an allowed mode switch, otherwise
		// through claim deletion.
		switchMode bool
		kept       bool
	}{
		{name: "delete-orphan", kept: true},
		{name: "delete-delete", policy: "Delete"},
		{name: "switch-orphan", switchMode: true, kept: true},
		{name: "switch-delete", policy: "Delete", switchMode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			installed := installOnPostgres(t, pg, "e2e-sql-"+tc.name, strings.ReplaceAll(tc.name, "-", ""), tc.policy)
			claim, names, owned, mrs, dbs := installed.claim, installed.names, installed.owned, installed.mrs, installed.dbs
			waitProviderConfigUsers(t, claim, len(mrs))

			var pc ref
			if tc.switchMode {
				pc = switchHoldingProviderSQL(t, claim, dbs)
			} else if err := kube().Delete(context.Background(), claim); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			waitWithin(t, deletionTimeout, "provider-sql's Databases gone from the API server", func() (bool, string) {
				var left []string
				for _, r := range mrs {
					if u := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name); u != nil {
						left = append(left, r.String()+" ("+managedState(u)+")")
					}
				}
				msg := fmt.Sprintf("%v left", left)
				if c := get(t, claimAPIVersion, "ArmadaClaim", claim.GetNamespace(), claim.GetName()); c != nil {
					// After a switch, a refused render (a Fatal result)
					// keeps the old Databases composed: the claim says so.
					msg += "; claim " + managedState(c)
				}
				return len(left) == 0, msg
			})
			t.Logf("Databases gone %s after the %s", time.Since(start).Round(time.Millisecond), map[bool]string{true: "mode switch", false: "claim deletion"}[tc.switchMode])

			got := databasesOn(t, pg, names...)
			switch {
			case tc.kept && !cmp.Equal(owned, got):
				t.Errorf("under deletionPolicy Orphan the server must keep the databases: pg_database has %v, want %v", got, owned)
			case !tc.kept && len(got) != 0:
				t.Errorf("under deletionPolicy Delete provider-sql must drop the databases: pg_database still has %v", got)
			}
			if tc.switchMode {
				// The switch took the databases out of desired state, not
				// the whole Armada: the claim still composes, now InCluster.
				if left := sqlDatabases(t, claim); len(left) != 0 {
					t.Errorf("after the switch to InCluster the XR still references %v", left)
				}
				// Nothing needs the ProviderConfig now: it goes too, once
				// the garbage collector has removed the Databases'
				// ProviderConfigUsages (provider-sql's in-use finalizer)
				// and its own foregroundDeletion finalizer.
				start = time.Now()
				waitWithin(t, deletionTimeout, "the provider-sql ProviderConfig gone once its Databases are", func() (bool, string) {
					u := get(t, pc.APIVersion, pc.Kind, pc.Namespace, pc.Name)
					if u == nil {
						return true, ""
					}
					users, _, _ := unstructured.NestedInt64(u.Object, "status", "users")
					return false, fmt.Sprintf("%s is still there: %s, users %d", pc, managedState(u), users)
				})
				t.Logf("ProviderConfig gone %s after the Databases", time.Since(start).Round(time.Millisecond))
			}
		})
	}
}

// sqlArmada is an all-external Armada whose Databases provider-sql has
// created on a private PostgreSQL.
type sqlArmada struct {
	claim *unstructured.Unstructured
	// names are the scheduler's and Lookout's database names; dbs is
	// spec.postgres.databases naming them; owned maps each to its owner.
	names []string
	dbs   map[string]any
	owned map[string]string
	// mrs are the provider-sql Databases the XR references.
	mrs []ref
}

// installOnPostgres applies the all-external example in namespace ns,
// pointed at pg, with database names ending in suffix (so Armadas share
// one server) and spec.deletionPolicy policy (empty leaves the default),
// and waits until provider-sql has created both databases, owned by the
// claim's user, and reports its Databases Ready.
func installOnPostgres(t *testing.T, pg *testenv.Postgres, ns, suffix, policy string) sqlArmada {
	t.Helper()
	// Without underscores: the function names the Database objects after
	// them, and an underscore is no valid object name.
	names := []string{"scheduler" + suffix, "lookout" + suffix}
	dbs := map[string]any{"scheduler": names[0], "lookout": names[1]}
	docs := onPostgres(t, pg, exampleDocs(t, "all-external", ns))
	claim := installDocs(t, "all-external", ns, docs, func(c *unstructured.Unstructured) {
		_ = unstructured.SetNestedMap(c.Object, dbs, "spec", "postgres", "databases")
		if policy != "" {
			_ = unstructured.SetNestedField(c.Object, policy, "spec", "deletionPolicy")
		}
	})
	user, _, _ := unstructured.NestedString(claim.Object, "spec", "postgres", "user")
	owned := map[string]string{names[0]: user, names[1]: user}

	start := time.Now()
	waitFor(t, "provider-sql to create the databases on the private PostgreSQL", func() (bool, string) {
		got := databasesOn(t, pg, names...)
		return cmp.Equal(owned, got), fmt.Sprintf("pg_database has %v, want %v", got, owned)
	})
	mrs := sqlDatabases(t, claim)
	if len(mrs) != len(names) {
		t.Fatalf("want a provider-sql Database per database, composed: %v", mrs)
	}
	waitFor(t, "provider-sql to report its Databases Ready", func() (bool, string) {
		for _, r := range mrs {
			u := get(t, r.APIVersion, r.Kind, r.Namespace, r.Name)
			if s, reason, msg := condition(u, "Ready"); s != "True" {
				return false, fmt.Sprintf("%s Ready=%s %s: %s", r, s, reason, msg)
			}
		}
		return true, ""
	})
	t.Logf("%s: databases created by provider-sql %s after the claim was composed", ns, time.Since(start).Round(time.Millisecond))
	return sqlArmada{claim: claim, names: names, dbs: dbs, owned: owned, mrs: mrs}
}

// waitProviderConfigUsers waits until the claim's provider-sql
// ProviderConfig reports want users (status.users, the
// ProviderConfigUsages provider-sql counts for it), and fails naming the
// count it reports if that does not come.
func waitProviderConfigUsers(t *testing.T, claim *unstructured.Unstructured, want int) {
	t.Helper()
	pcs := providerSQL(t, claim, "ProviderConfig")
	if len(pcs) != 1 {
		t.Fatalf("want one provider-sql ProviderConfig composed, got %v", pcs)
	}
	pc := pcs[0]
	waitFor(t, fmt.Sprintf("%s to count only its own %d Databases", pc, want), func() (bool, string) {
		u := get(t, pc.APIVersion, pc.Kind, pc.Namespace, pc.Name)
		if u == nil {
			return false, pc.String() + " is not there"
		}
		users, _, _ := unstructured.NestedInt64(u.Object, "status", "users")
		return users == int64(want), fmt.Sprintf("%s reports status.users %d, want %d", pc, users, want)
	})
}

// switchHoldingProviderSQL switches the claim's spec.postgres.mode to
// InCluster, with allowModeChange, while provider-sql is stopped, so its
// Databases cannot leave. Crossplane deletes them and drops them from the
// XR's resource references at once; over the function's next calls the
// ProviderConfig they need to drop or release their databases must stay,
// not deleted. It resumes provider-sql and returns the ProviderConfig.
func switchHoldingProviderSQL(t *testing.T, claim *unstructured.Unstructured, dbs map[string]any) ref {
	t.Helper()
	xr, _ := composed(t, claim)
	pcs := providerSQL(t, claim, "ProviderConfig")
	if len(pcs) != 1 {
		t.Fatalf("want one provider-sql ProviderConfig composed, got %v", pcs)
	}
	pc := pcs[0]
	resume := pauseProcess(t, controlplane.ProcProviderSQL)
	defer resume()
	if err := updateClaim(t, claim, func(c *unstructured.Unstructured) {
		_ = unstructured.SetNestedMap(c.Object, map[string]any{
			"mode": "InCluster", "allowModeChange": true, "databases": dbs,
		}, "spec", "postgres")
	}); err != nil {
		t.Fatalf("switching spec.postgres.mode to InCluster with allowModeChange: %v", err)
	}
	// Calls for reconciles after the one that deleted the Databases.
	const calls = 6
	base, began := functionCallsFor(t, xr.GetName()), time.Now()
	waitFor(t, fmt.Sprintf("the XR to forget its Databases and the function to be called %d times, provider-sql stopped", calls), func() (bool, string) {
		u := get(t, pc.APIVersion, pc.Kind, pc.Namespace, pc.Name)
		if u == nil || u.GetDeletionTimestamp() != nil {
			state := "gone"
			if u != nil {
				state = managedState(u)
			}
			t.Fatalf("%s went while provider-sql's Databases still need it to drop their databases: %s", pc, state)
		}
		referenced := sqlDatabases(t, claim)
		n := functionCallsFor(t, xr.GetName()) - base
		return len(referenced) == 0 && n >= calls, fmt.Sprintf("the XR references %v; %d function calls since the switch", referenced, n)
	})
	t.Logf("%s stayed through %d function calls in %s after the switch, provider-sql stopped", pc, functionCallsFor(t, xr.GetName())-base, time.Since(began).Round(time.Millisecond))
	return pc
}

// onPostgres points the all-external example's PostgreSQL at pg: the
// claim's spec.postgres host and port, and the admin Secret it names,
// which provider-sql reads (endpoint, port, username, password), holding
// pg's superuser. It creates the claim's spec.postgres.user on pg, with the
// password in its Secret, as the server's administrator would: provider-sql
// creates the databases owned by that role.
func onPostgres(t *testing.T, pg *testenv.Postgres, docs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	claim := claimOf(t, docs)
	if err := unstructured.SetNestedField(claim.Object, pg.Host, "spec", "postgres", "host"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(claim.Object, int64(pg.Port), "spec", "postgres", "port"); err != nil {
		t.Fatal(err)
	}
	admin, _, _ := unstructured.NestedString(claim.Object, "spec", "postgres", "adminSecretRef", "name")
	user, _, _ := unstructured.NestedString(claim.Object, "spec", "postgres", "user")
	pw, _, _ := unstructured.NestedStringMap(claim.Object, "spec", "postgres", "passwordSecretRef")
	if admin == "" || user == "" || pw["name"] == "" {
		t.Fatalf("the example's claim has no spec.postgres.adminSecretRef, user or passwordSecretRef: %v", claim.Object["spec"])
	}
	password := ""
	for _, d := range docs {
		if d.GetKind() != "Secret" {
			continue
		}
		switch d.GetName() {
		case admin:
			d.Object["stringData"] = map[string]any{
				"endpoint": pg.Host, "port": strconv.Itoa(pg.Port),
				"username": "postgres", "password": pg.SuperuserPassword,
			}
		case pw["name"]:
			password, _, _ = unstructured.NestedString(d.Object, "stringData", pw["key"])
		}
	}
	if password == "" {
		t.Fatalf("the example has no Secret %s with key %s", pw["name"], pw["key"])
	}
	if pg.MustExec(t, "postgres", "SELECT count(*) FROM pg_roles WHERE rolname = "+testenv.QuoteLiteral(user)) == "0" {
		pg.CreateRole(t, user, password)
	}
	return docs
}

// databasesOn returns the owner of each of names that exists on pg, as
// pg_database says.
func databasesOn(t *testing.T, pg *testenv.Postgres, names ...string) map[string]string {
	t.Helper()
	quoted := make([]string, 0, len(names))
	for _, n := range names {
		quoted = append(quoted, testenv.QuoteLiteral(n))
	}
	out := pg.MustExec(t, "postgres", "SELECT datname, pg_catalog.pg_get_userbyid(datdba) FROM pg_catalog.pg_database WHERE datname IN ("+
		strings.Join(quoted, ", ")+")")
	got := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		if name, owner, ok := strings.Cut(line, "|"); ok {
			got[name] = owner
		}
	}
	return got
}

// sqlDatabases returns the provider-sql Databases the claim's XR
// references.
func sqlDatabases(t *testing.T, claim *unstructured.Unstructured) []ref {
	t.Helper()
	return providerSQL(t, claim, "Database")
}

// providerSQL returns the provider-sql objects of kind the claim's XR
// references.
func providerSQL(t *testing.T, claim *unstructured.Unstructured, kind string) []ref {
	t.Helper()
	_, refs := composed(t, claim)
	var out []ref
	for _, r := range byKind(refs, kind) {
		if isProviderSQL(r.APIVersion) {
			out = append(out, r)
		}
	}
	return out
}

// managedState says where a managed resource that should be leaving is:
// whether it was deleted, what finalizers hold it, and its Synced and
// Ready conditions (provider-sql reports a failed drop in Synced).
func managedState(u *unstructured.Unstructured) string {
	deleted := "not deleted"
	if ts := u.GetDeletionTimestamp(); ts != nil {
		deleted = "deleted at " + ts.UTC().Format(time.RFC3339)
	}
	types := []string{"Synced", "Ready"}
	conds := make([]string, 0, len(types))
	for _, typ := range types {
		s, reason, msg := condition(u, typ)
		conds = append(conds, fmt.Sprintf("%s=%s %s: %s", typ, s, reason, msg))
	}
	return fmt.Sprintf("%s, finalizers %v, %s", deleted, u.GetFinalizers(), strings.Join(conds, "; "))
}

// isProviderSQL reports whether an API version is one of provider-sql's.
func isProviderSQL(apiVersion string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	return strings.HasSuffix(group, ".sql.m.crossplane.io") || strings.HasSuffix(group, ".sql.crossplane.io")
}
