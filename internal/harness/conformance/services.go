package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// Services are an example's private backing Services.
type Services struct {
	PG    *testenv.Postgres
	Redis *testenv.Redis
	// ExecutorAPICA is the private CA whose certificate the test supplies
	// as spec.executorApi.caSecretRef, and which signs the test's executor
	// API; nil without a caSecretRef.
	ExecutorAPICA *privateCA
	// OIDC is the stand-in for the rendered OIDC provider; nil without
	// one.
	OIDC *oidcProvider
	// ArmadaAPI is the stand-in for the server's API the scheduler
	// calls; nil without a server.
	ArmadaAPI *armadaAPI
	// Names resolves the rendered host names (see names).
	Names *podrun.Names
	// PulsarAt is the example's Pulsar far end, host:port.
	PulsarAt string
	// Pulsar is the real broker the example's Pulsar names reach.
	Pulsar *testenv.Pulsar
	// PulsarToken is the token the test puts in the user's
	// spec.pulsar.tokenSecretRef Secret, signed by Pulsar's key, or the
	// rendered token Armada presents to an in-cluster Pulsar; empty
	// without token authentication.
	PulsarToken string
	// PulsarAuthorization is set when the broker admits only superuser
	// roles (a composed chart's, with auth.authorization).
	PulsarAuthorization bool
	// PulsarInCluster is set when the render composes the in-cluster
	// Pulsar (the chart's Release).
	PulsarInCluster bool
}

// StartStandIns serves the far ends of the links the test serves by name
// (routedEnv): the OIDC provider and the server's API.
func StartStandIns(t *testing.T, svc *Services, r *Render, runs []*Run, workloadOf map[*Run]podrun.Workload) {
	t.Helper()
	svc.OIDC = startOIDC(t, runs)
	svc.ArmadaAPI = startArmadaAPI(t, r, runs, workloadOf)
}

// StartServices starts PostgreSQL and Redis, picks the example's Pulsar
// broker among b, and returns the values of the
// Secrets that are not part of the render: the user's (spec references) or
// the ones an operator generates (CloudNativePG's app Secret). Which Secret
// keys hold the Postgres and Redis passwords is read from the rendered
// workloads' env, so the test connects through exactly the references the
// function rendered.
func StartServices(t *testing.T, r *Render, workloads []podrun.Workload, b *Brokers) (*Services, map[SecretRef]string) {
	t.Helper()
	supplied := map[SecretRef]string{}
	svc := &Services{PG: testenv.StartPostgres(t), Names: newNames(t)}

	ref, ok := envSecretRef(workloads, "ARMADA_POSTGRES_CONNECTION_PASSWORD")
	if !ok {
		t.Fatal("no rendered workload reads ARMADA_POSTGRES_CONNECTION_PASSWORD from a Secret")
	}
	if _, rendered, _ := r.Secret(ref.Name); rendered {
		t.Fatalf("the Postgres password Secret %s is rendered; it must come from the user or CloudNativePG", ref.Name)
	}
	supplied[ref] = testenv.RandomPassword(t)

	for _, env := range []string{"ARMADA_REDIS_PASSWORD", "ARMADA_EVENTSAPIREDIS_PASSWORD"} {
		ref, ok := envSecretRef(workloads, env)
		if !ok || svc.Redis != nil {
			continue
		}
		if data, rendered, err := r.Secret(ref.Name); err != nil {
			t.Fatal(err)
		} else if rendered {
			// An in-cluster Redis: its password is generated into the
			// rendered credentials Secret.
			svc.Redis = testenv.StartRedisWithPassword(t, string(data[ref.Key]))
		} else {
			svc.Redis = testenv.StartRedis(t)
			supplied[ref] = svc.Redis.Password
		}
	}
	if svc.Redis == nil {
		svc.Redis = testenv.StartRedisWithPassword(t, "")
	}
	useBroker(t, b, r, svc, supplied)
	if ref, ok := r.XRSecretRef("pulsar", "caSecretRef"); ok {
		ca, _ := testenv.SelfSignedCert(t)
		supplied[ref] = string(ca)
	}
	if ref, ok := r.XRSecretRef("executorApi", "caSecretRef"); ok {
		svc.ExecutorAPICA = newPrivateCA(t)
		supplied[ref] = string(svc.ExecutorAPICA.PEM)
	}
	supplyRemote(t, r, supplied)
	supplyCertificates(t, r, supplied)
	far, err := r.FarEnds(workloads)
	if err != nil {
		t.Fatal(err)
	}
	serveFarEnds(t, svc, far)
	servePulsar(t, svc, workloads)
	return svc, supplied
}

// supplyRemote does what provider-kubernetes and a worker cluster do for
// the Objects a render wraps: a worker's token controller fills each
// service-account token Secret, connection details copy the named key into
// the connection Secret here, and references[].patchesFrom copies a key of
// a Secret here into the manifest.
func supplyRemote(t *testing.T, r *Render, supplied map[SecretRef]string) {
	t.Helper()
	for _, o := range r.Wrappers {
		name, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "manifest", "metadata", "name")
		details, _, _ := unstructured.NestedSlice(o.Object, "spec", "connectionDetails")
		conn, _, _ := unstructured.NestedString(o.Object, "spec", "writeConnectionSecretToRef", "name")
		for _, d := range details {
			m, _ := d.(map[string]any)
			if m["fieldPath"] != "data.token" || conn == "" {
				t.Fatalf("Object %s copies %v: only a service-account token is expected", o.GetName(), m["fieldPath"])
			}
			token := testenv.RandomPassword(t)
			supplied[SecretRef{Name: name, Key: "token"}] = token
			supplied[SecretRef{Name: conn, Key: fmt.Sprint(m["toConnectionSecretKey"])}] = token
		}
		refs, _, _ := unstructured.NestedSlice(o.Object, "spec", "references")
		for _, ref := range refs {
			m, _ := ref.(map[string]any)
			from, _ := m["patchesFrom"].(map[string]any)
			fromKey, ok1 := bracketKey(fmt.Sprint(from["fieldPath"]))
			toKey, ok2 := bracketKey(fmt.Sprint(m["toFieldPath"]))
			if from["kind"] != "Secret" || !ok1 || !ok2 {
				t.Fatalf("Object %s patches from %v: only a Secret key into a Secret key is expected", o.GetName(), from)
			}
			v, ok := supplied[SecretRef{Name: fmt.Sprint(from["name"]), Key: fromKey}]
			if !ok {
				t.Fatalf("Object %s patches from Secret %s key %s, which nobody supplies", o.GetName(), from["name"], fromKey)
			}
			supplied[SecretRef{Name: name, Key: toKey}] = v
		}
	}
}

// bracketKey is K of a field path data[K].
func bracketKey(path string) (string, bool) {
	k, ok := strings.CutPrefix(path, "data[")
	if !ok || !strings.HasSuffix(k, "]") {
		return "", false
	}
	return strings.TrimSuffix(k, "]"), true
}

// envSecretRef finds the Secret key an env var of a rendered workload
// reads.
func envSecretRef(workloads []podrun.Workload, name string) (SecretRef, bool) {
	for _, w := range workloads {
		for _, c := range append(slices.Clone(w.Pod.InitContainers), w.Pod.Containers...) {
			for _, e := range c.Env {
				if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return SecretRef{Name: e.ValueFrom.SecretKeyRef.Name, Key: e.ValueFrom.SecretKeyRef.Key}, true
				}
			}
		}
	}
	return SecretRef{}, false
}

// composedDatabases are the databases the render asks a provider or
// operator to create, by name, with their owners: CloudNativePG Databases
// and provider-sql Databases.
func composedDatabases(r *Render) map[string]string {
	dbs := map[string]string{}
	for _, u := range r.Objects {
		switch {
		case u.GetKind() != "Database":
		case strings.HasPrefix(u.GetAPIVersion(), "postgresql.cnpg.io/"):
			name, _, _ := unstructured.NestedString(u.Object, "spec", "name")
			owner, _, _ := unstructured.NestedString(u.Object, "spec", "owner")
			dbs[name] = owner
		case strings.HasPrefix(u.GetAPIVersion(), "postgresql.sql."):
			owner, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "owner")
			dbs[u.GetAnnotations()["crossplane.io/external-name"]] = owner
		}
	}
	return dbs
}

// PrepareDatabases creates the Postgres user the rendered configs connect
// as, with the password the test supplies through the rendered Secret
// reference, and the databases. Where the render composes Database objects
// the test plays their provider (CloudNativePG or provider-sql): it creates
// exactly those, owned as they say, and every database a config names must
// be one of them. Otherwise the databases are the user's, created up front.
func PrepareDatabases(t *testing.T, r *Render, svc *Services, runs []*Run) {
	t.Helper()
	user := ""
	for _, rn := range runs {
		if u, ok := rn.Effective("postgres.connection.user"); ok && u != "" {
			user = u
			break
		}
	}
	if user == "" {
		t.Fatal("no rendered config sets postgres.connection.user")
	}
	// The password as the rendered reference resolves it.
	password := ""
	for _, rn := range runs {
		if v, ok := rn.Inv.Lookup("ARMADA_POSTGRES_CONNECTION_PASSWORD"); ok {
			password = v
			break
		}
	}
	if user == "postgres" {
		svc.PG.MustExec(t, "postgres", "ALTER ROLE postgres PASSWORD "+testenv.QuoteLiteral(password))
		svc.PG.SuperuserPassword = password
	} else {
		svc.PG.CreateRole(t, user, password)
	}
	composed := composedDatabases(r)
	for _, db := range slices.Sorted(maps.Keys(composed)) {
		if composed[db] != user {
			t.Errorf("composed database %s is owned by %q, but the components connect as %q", db, composed[db], user)
		}
		svc.PG.CreateDatabase(t, db, composed[db])
	}
	created := map[string]bool{}
	for _, rn := range runs {
		if !rn.Cfg.Has("postgres.connection.host") {
			continue
		}
		db, _ := rn.Effective("postgres.connection.dbname")
		if db == "" || created[db] {
			continue
		}
		if len(composed) > 0 {
			if _, ok := composed[db]; !ok {
				t.Errorf("%s connects to database %q, which no composed Database creates", rn.ID(), db)
			}
			continue
		}
		svc.PG.CreateDatabase(t, db, user)
		created[db] = true
	}
}
