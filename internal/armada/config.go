package armada

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// Topic names. Every producer and consumer gets the same full names.
const (
	topicEvents       = "events"
	topicControlPlane = "control-plane"
)

// Paths where optional Pulsar credentials are mounted.
const (
	pulsarTokenDir = "/pulsar/tokens"
	pulsarCADir    = "/pulsar/ca"
)

// serverPermissions are every permission the server checks
// (internal/server/permissions/permissions.go).
var serverPermissions = []string{
	"submit_any_jobs", "cancel_any_jobs", "preempt_any_jobs", "reprioritize_any_jobs",
	"watch_all_events", "create_queue", "delete_queue", "cordon_queue", "cordon_nodes",
	"update_executor_settings", "create_retry_policy", "update_retry_policy", "delete_retry_policy",
}

// auth is the auth block of a component's API: the users it accepts, OIDC
// and anonymous access as the spec says, admin groups mapped to every
// permission, and extra permissions mapped to groups.
func (in *Install) auth(basic []v1alpha1.BasicUser, extra map[string][]string) map[string]any {
	a := map[string]any{"anonymousAuth": in.Spec.Auth.Anonymous}
	users := map[string]any{}
	for _, u := range basic {
		groups := u.Groups
		if groups == nil {
			groups = []string{}
		}
		// The password is a placeholder overridden from a Secret through
		// the environment; see passwordEnv.
		users[u.Name] = map[string]any{"password": "", "groups": groups}
	}
	a["basicAuth"] = map[string]any{"users": users}
	if o := in.Spec.Auth.OIDC; o != nil {
		a["openIdAuth"] = map[string]any{
			"providerUrl": o.ProviderURL,
			"clientId":    o.ClientID,
			"groupsClaim": o.GroupsClaim,
		}
	}
	admins := slices.Clone(in.Spec.Auth.AdminGroups)
	if in.Spec.Auth.Anonymous {
		// Every principal, including "anonymous", is in "everyone".
		admins = append(admins, "everyone")
	}
	mapping := map[string]any{}
	for _, p := range serverPermissions {
		mapping[p] = admins
		if slices.Contains(queuePermissions, p) {
			mapping[p] = append(slices.Clone(admins), groupQueueAdmins)
		}
	}
	for p, groups := range extra {
		mapping[p] = groups
	}
	a["permissionGroupMapping"] = mapping
	return a
}

// postgres is a component's Postgres block. The password comes from the
// user's Secret through ARMADA_POSTGRES_CONNECTION_PASSWORD, a key Armada's
// embedded config already has.
func (in *Install) postgres(database string) map[string]any {
	p := in.Spec.Postgres
	db := p.Databases.Scheduler
	if database == dbLookout {
		db = p.Databases.Lookout
	}
	return map[string]any{"connection": map[string]any{
		"host":    p.Host,
		"port":    fmt.Sprint(p.Port),
		"user":    p.User,
		"dbname":  db,
		"sslmode": p.SSLMode,
	}}
}

// pulsar is a component's Pulsar block with the topics it uses.
func (in *Install) pulsar(controlPlane bool) map[string]any {
	p := map[string]any{
		"URL":               in.Spec.Pulsar.URL,
		"jobsetEventsTopic": in.topic(topicEvents),
	}
	if controlPlane {
		p["controlPlaneEventsTopic"] = in.topic(topicControlPlane)
	}
	if ref := in.Spec.Pulsar.TokenSecretRef; ref != nil {
		p["authenticationEnabled"] = true
		p["authenticationType"] = "JWT"
		p["jwtTokenPath"] = pulsarTokenDir + "/" + ref.Key
	}
	if ref := in.Spec.Pulsar.CASecretRef; ref != nil {
		p["tlsTrustCertsFilePath"] = pulsarCADir + "/" + ref.Key
		p["tlsValidateHostname"] = true
	}
	return p
}

// redis is a go-redis UniversalOptions block. The password placeholder is
// overridden from the user's Secret through the environment.
func (in *Install) redis() map[string]any {
	cfg := map[string]any{
		"addrs":    slices.Clone(in.Spec.Redis.Addrs),
		"db":       int(*in.Spec.Redis.DB),
		"password": "",
	}
	if in.sentinelOn() {
		// addrs are the Sentinels'; go-redis asks them for the primary.
		cfg["masterName"] = SentinelMaster
		cfg["sentinelPassword"] = ""
	}
	return cfg
}

// connection is a gRPC client block to another component, authenticated as
// an internal user. In-cluster links are plaintext (forceNoTls) unless
// spec.tls is on; the client then verifies the server against the system
// roots, which SSL_CERT_FILE points at the private CA.
func (in *Install) connection(address, user string) map[string]any {
	return map[string]any{
		"armadaUrl":  address,
		"forceNoTls": !in.tlsOn(),
		"basicAuth":  map[string]any{"username": user, "password": ""},
	}
}

// corsOrigins lets the Lookout UI call the server and binoculars.
func (in *Install) corsOrigins() []string { return []string{in.Endpoints().Lookout} }

// componentConfig is an instance's full generated config: the blocks its
// table row asks for, its own keys, then the user's config merged over it.
func (in *Install) componentConfig(inst *instance) (map[string]any, error) {
	c := inst.component
	cfg := inst.Config(in, inst)
	if c.Auth != authNone {
		users := in.apiUsers(c)
		extra := map[string][]string(nil)
		if c.Auth == authInternal {
			for _, r := range in.remoteIdentities() {
				users = append(users, v1alpha1.BasicUser{Name: r.User, Groups: []string{groupExecutors, groupInternal}})
			}
			extra = map[string][]string{"execute_jobs": {groupExecutors}}
		}
		cfg["auth"] = in.auth(users, extra)
	}
	if c.Database != "" {
		cfg["postgres"] = in.postgres(c.Database)
	}
	if c.RedisKey != "" {
		cfg[c.RedisKey] = in.redis()
	}
	// Every component's metrics port is set explicitly: Armada's defaults
	// differ per component, and the scheduler ingester's baked config sets
	// a key (metrics.port) that nothing reads.
	setPath(cfg, c.Metrics, portMetrics)
	if c.Pulsar {
		p := in.pulsar(c.ControlPlaneTopic)
		if c.IngesterMetrics != "" && in.ingesterLag() {
			// The ingesters' lag metric needs Pulsar's admin API
			// (internal/common/ingest/ingestion_pipeline.go).
			p["restURL"] = trimSlash(in.Spec.Pulsar.AdminURL)
			p["delayMonitor"] = map[string]any{"enabled": true, "interval": delayMonitorInterval}
		}
		cfg["pulsar"] = p
	}
	for _, l := range c.Clients {
		if id := in.identityOf(inst.Executor); id != nil {
			cfg[l.Key] = in.remoteConnection(id)
			continue
		}
		cfg[l.Key] = in.connection(in.grpcAddress(l.Target), l.User)
	}
	if in.servesTLS(c) && len(c.TLS) > 0 {
		setPath(cfg, c.TLS, tlsBlock())
	}
	composed := cfg
	var errs field.ErrorList
	for j, raw := range inst.userConfig() {
		override, err := decodeConfig(raw)
		if err != nil {
			return nil, err
		}
		errs = append(errs, checkOwnedKeys(in.userConfigPath(inst, j), composed, override)...)
		cfg = mergeConfig(cfg, override)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if err := checkComposedKeys(in.Spec.Version, c.Name, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// setPath sets a nested config key, creating the maps on its path.
func setPath(cfg map[string]any, path []string, v any) {
	m := cfg
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

func serverConfig(in *Install, _ *instance) map[string]any {
	allowed := map[string]any{}
	// Armada's embedded config allows three classes; maps merge, so the
	// ones not configured here are switched off explicitly.
	for _, name := range []string{"armada-default", "armada-preemptible", "armada-resilient"} {
		allowed[name] = false
	}
	for _, pc := range in.Spec.Scheduling.PriorityClasses {
		allowed[pc.Name] = true
	}
	return map[string]any{
		"grpcPort":           portGRPC,
		"httpPort":           portHTTP,
		"corsAllowedOrigins": in.corsOrigins(),
		"submission": map[string]any{
			"allowedPriorityClassNames": allowed,
			"defaultPriorityClassName":  in.Spec.Scheduling.DefaultPriorityClass,
		},
	}
}

func schedulerConfig(in *Install, inst *instance) map[string]any {
	pools := make([]any, 0, len(in.Spec.Scheduling.Pools))
	for _, p := range in.Spec.Scheduling.Pools {
		pool := map[string]any{"name": p.Name}
		if t := in.poolTolerations(p.Name); len(t) > 0 {
			pool["jobDefaults"] = map[string]any{"tolerations": t}
		}
		pools = append(pools, pool)
	}
	classes := map[string]any{}
	for _, pc := range in.Spec.Scheduling.PriorityClasses {
		classes[pc.Name] = map[string]any{"priority": int(pc.Priority), "preemptible": pc.Preemptible}
	}
	leader := map[string]any{"mode": "standalone"}
	if inst.replicas() > 1 {
		leader = map[string]any{
			"mode":               "kubernetes",
			"leaseLockName":      in.object("scheduler"),
			"leaseLockNamespace": in.Namespace,
			// The pod name comes from ARMADA_LEADER_PODNAME.
			"podName": "",
			// Armada replaces <name> with the leader's pod name; the
			// StatefulSet's headless Service gives each pod that DNS name.
			"leaderConnection": in.connection(
				fmt.Sprintf("<name>.%s.%s.svc:%d", in.object("scheduler-headless"), in.Namespace, portGRPC), userServer),
		}
	}
	return map[string]any{
		"grpc":   map[string]any{"port": portGRPC},
		"http":   map[string]any{"port": portHTTP},
		"leader": leader,
		"scheduling": map[string]any{
			"pools":                     pools,
			"priorityClasses":           classes,
			"defaultPriorityClassName":  in.Spec.Scheduling.DefaultPriorityClass,
			"priorityClassNameOverride": in.Spec.Scheduling.DefaultPriorityClass,
		},
	}
}

// ingesterConfig is the config of the three ingesters beyond their shared
// blocks: nothing; their metrics port is set from the table.
func ingesterConfig(_ *Install, _ *instance) map[string]any { return map[string]any{} }

// lookoutConfig is Lookout's config: its port, the origins it answers
// and the UI's configuration, which the browser uses as it is. The page
// calls the server's REST API (armadaApiBaseUrl) and binoculars
// (binocularsBaseUrlPattern) itself, across origins: both are the URLs a
// user reaches (Endpoints), and the server and binoculars allow Lookout's
// origin and no other (corsOrigins). The title names the Armada; Armada's
// default is "Local Dev". The commandSpecs are Armada's defaults
// (config/lookout/config.yaml), which name the run's cluster (the
// executor's clusterId) and the job's namespace.
func lookoutConfig(in *Install, inst *instance) map[string]any {
	ui := map[string]any{
		"armadaApiBaseUrl":         in.Endpoints().REST,
		"binocularsBaseUrlPattern": in.serviceURL("binoculars"),
		"oidcEnabled":              in.Spec.Auth.OIDC != nil,
		"customTitle":              "Armada " + in.Namespace + "/" + in.Name,
	}
	if o := in.Spec.Auth.OIDC; o != nil {
		ui["oidc"] = map[string]any{"authority": o.ProviderURL, "clientId": o.ClientID, "scope": o.Scope}
	}
	return map[string]any{
		"apiPort":            in.listenPort(inst.component, portHTTP),
		"corsAllowedOrigins": in.corsOrigins(),
		"uiConfig":           ui,
	}
}

func binocularsConfig(in *Install, inst *instance) map[string]any {
	return map[string]any{
		"grpcPort":           in.listenPort(inst.component, portGRPC),
		"httpPort":           in.listenPort(inst.component, portHTTP),
		"corsAllowedOrigins": in.corsOrigins(),
	}
}

func executorConfig(_ *Install, inst *instance) map[string]any {
	cfg := map[string]any{
		"httpPort": portHTTP,
		"application": map[string]any{
			"clusterId": inst.Executor.ClusterID,
			"pool":      inst.Executor.Pool,
		},
	}
	if t := inst.Executor.NodeTaint; t != nil {
		cfg["kubernetes"] = map[string]any{"toleratedTaints": []any{t.Key}}
	}
	return cfg
}

// poolTolerations are the tolerations a pool's jobs get: one for the node
// taint of each executor in the pool, so jobs run on the nodes reserved
// for it, in spec order without repeats.
func (in *Install) poolTolerations(pool string) []any {
	var out []any
	seen := map[v1alpha1.NodeTaint]bool{}
	for _, e := range in.Spec.Executors {
		if e.Pool != pool || e.NodeTaint == nil || seen[*e.NodeTaint] {
			continue
		}
		seen[*e.NodeTaint] = true
		t := map[string]any{"key": e.NodeTaint.Key, "operator": "Exists", "effect": "NoSchedule"}
		if e.NodeTaint.Value != "" {
			t["operator"], t["value"] = "Equal", e.NodeTaint.Value
		}
		out = append(out, t)
	}
	return out
}

// configSecret holds a component's rendered Armada config. It is a Secret,
// not a ConfigMap, because a user's free-form config may hold credentials
// (for example an OIDC client secret); generated passwords never appear in
// it. It returns the Secret and a hash of its content.
func (in *Install) configSecret(scratch *[]byte, name, component string, cfg map[string]any) (*corev1.Secret, string, error) {
	e, err := encodeConfig(scratch, cfg)
	if err != nil {
		return nil, "", errors.Wrapf(err, "cannot encode %s config", component)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(name, component),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{configKey: e.yaml},
	}, e.hash, nil
}

// configEncoding is a config's YAML and its hash.
type configEncoding struct {
	yaml []byte
	hash string
}

// encodeConfig writes a config as YAML. structenc writes what
// sigs.k8s.io/yaml would, in one pass; keys are sorted, so the output is
// deterministic. It writes through scratch, a buffer one render reuses
// for all its configs, and keeps a copy of just the config's size.
func encodeConfig(scratch *[]byte, cfg map[string]any) (configEncoding, error) {
	if *scratch == nil {
		// The production example's largest config is under 3 kB.
		*scratch = make([]byte, 0, 4096)
	}
	b, err := structenc.AppendYAML((*scratch)[:0], cfg)
	*scratch = b
	if err != nil {
		return configEncoding{}, err
	}
	b = bytes.Clone(b)
	return configEncoding{yaml: b, hash: configHash(b)}, nil
}

// configHash is the hash of a config's YAML that pod templates carry.
func configHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
