package armada

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Backing service names, as in the spec and status.
const (
	servicePostgres = "postgres"
	serviceRedis    = "redis"
	servicePulsar   = "pulsar"
)

// modeExternalManaged names External Postgres with adminSecretRef, whose
// databases provider-sql manages, in mode-change errors.
const modeExternalManaged = "External with adminSecretRef"

// deletionPolicies are the values of spec.deletionPolicy.
var deletionPolicies = []string{deletionOrphan, deletionDelete}

// Composition resource names of the backing services. Each mode's stateful
// resources share a prefix, so observed state tells which mode a live
// Armada runs in.
const (
	keyPostgresCluster  = "postgres-cnpg-cluster"
	keyPostgresCNPGDB   = "postgres-cnpg-db-"
	keyPostgresSQLPC    = "postgres-sql-providerconfig"
	keyPostgresSQLDB    = "postgres-sql-db-"
	keyRedisStatefulSet = "redis-incluster-statefulset"
	keyRedisService     = "redis-incluster-service"
	keyPulsarRelease    = "pulsar-helm-release"
	keyPulsarTopics     = "pulsar-topics"
)

// A backingService is one row of the backing-service table: which spec
// field it is and, per mode, the prefix of the composition resource names
// of its resources.
type backingService struct {
	Name string
	// Field is the spec's mode field.
	Field func(*v1alpha1.ArmadaSpec) string
	// Mode is Field, refined where one mode composes different stateful
	// resources depending on other fields.
	Mode     func(*v1alpha1.ArmadaSpec) string
	Allow    func(*v1alpha1.ArmadaSpec) bool
	Prefixes map[string]string
}

var backingServices = []backingService{
	{
		Name:  servicePostgres,
		Field: func(s *v1alpha1.ArmadaSpec) string { return s.Postgres.Mode },
		Mode: func(s *v1alpha1.ArmadaSpec) string {
			if s.Postgres.Mode == modeExternal && s.Postgres.AdminSecretRef != nil {
				return modeExternalManaged
			}
			return s.Postgres.Mode
		},
		Allow:    func(s *v1alpha1.ArmadaSpec) bool { return s.Postgres.AllowModeChange },
		Prefixes: map[string]string{modeInCluster: "postgres-cnpg-", modeExternalManaged: "postgres-sql-"},
	},
	{
		Name:     serviceRedis,
		Field:    func(s *v1alpha1.ArmadaSpec) string { return s.Redis.Mode },
		Mode:     func(s *v1alpha1.ArmadaSpec) string { return s.Redis.Mode },
		Allow:    func(s *v1alpha1.ArmadaSpec) bool { return s.Redis.AllowModeChange },
		Prefixes: map[string]string{modeInCluster: "redis-incluster-"},
	},
	{
		Name:     servicePulsar,
		Field:    func(s *v1alpha1.ArmadaSpec) string { return s.Pulsar.Mode },
		Mode:     func(s *v1alpha1.ArmadaSpec) string { return s.Pulsar.Mode },
		Allow:    func(s *v1alpha1.ArmadaSpec) bool { return s.Pulsar.AllowModeChange },
		Prefixes: map[string]string{modeInCluster: "pulsar-helm-"},
	},
}

// IsStateful reports whether a composition resource name holds data: a
// database, a database cluster, Redis's volume or the Pulsar release.
func IsStateful(key string) bool {
	return key == keyPostgresCluster || key == keyRedisStatefulSet || key == keyPulsarRelease ||
		strings.HasPrefix(key, keyPostgresCNPGDB) || strings.HasPrefix(key, keyPostgresSQLDB)
}

// checkModeChanges refuses to switch a backing service's mode on a live
// Armada, unless the user allowed it: the old mode is known from the
// composed resources observed or, when those are missing, from the mode the
// XR's status last reported. allowModeChange allows one switch: it returns,
// by service, the mode it allowed a switch to (for status), and refuses a
// switch to another mode while the XR's status reports an earlier one.
// Returning an error leaves everything composed as it is.
func checkModeChanges(s *v1alpha1.ArmadaSpec, o Observed) (map[string]string, error) {
	changed := map[string]string{}
	for _, b := range backingServices {
		mode := b.Mode(s)
		old, evidence := "", ""
		for _, key := range slices.Sorted(maps.Keys(o.Keys)) {
			for m, prefix := range b.Prefixes {
				if m != mode && strings.HasPrefix(key, prefix) {
					old, evidence = m, "its "+m+" resources exist ("+key+")"
				}
			}
		}
		if m := o.Modes[b.Name]; old == "" && m != "" && m != b.Field(s) {
			old, evidence = m, "status.backingServices."+b.Name+".mode is "+m
		}
		allowed := ""
		if b.Allow(s) {
			allowed = o.ModeChanges[b.Name]
		}
		switch {
		case old == "":
		case !b.Allow(s):
			return nil, errors.Errorf("spec.%s.mode: Forbidden: cannot switch %s from %s to %s on a live Armada (%s); "+
				"set spec.%s.allowModeChange: true to switch (with spec.deletionPolicy Orphan the old data stays in place)",
				b.Name, b.Name, old, mode, evidence, b.Name)
		case allowed != "" && allowed != mode:
			return nil, errors.Errorf("spec.%s.allowModeChange: Forbidden: it allowed the switch to %s and allows one switch, not this one from %s to %s; "+
				"set it false, apply and wait until status.backingServices.%s.modeChangedTo is gone, then set it true with the new mode",
				b.Name, allowed, old, mode, b.Name)
		default:
			allowed = mode
		}
		changed[b.Name] = allowed
	}
	return changed, nil
}

// gates are what the backing services allow to proceed.
type gates struct {
	// Postgres is true when both databases exist.
	Postgres bool
	// Redis is true when Redis is up.
	Redis bool
	// Topics is true when the Pulsar topics exist.
	Topics bool
}

// backing composes the backing services and reports what they allow. Their
// stateful resources are composed from the spec alone: a missing or failed
// observation only holds back what depends on them, never removes them.
func (r *renderer) backing() (gates, error) {
	r.out.Status.BackingServices = map[string]v1alpha1.BackingServiceStatus{}
	g := gates{Postgres: r.postgres(), Redis: r.redis()}
	topics, err := r.pulsar()
	g.Topics = topics
	for name, st := range r.out.Status.BackingServices {
		st.DeletionPolicy, st.ModeChangedTo = r.in.Spec.DeletionPolicy, r.modeChanges[name]
		r.out.Status.BackingServices[name] = st
	}
	return g, err
}

// postgres composes the PostgreSQL cluster or the databases and reports
// whether both databases exist.
func (r *renderer) postgres() bool {
	in, o := r.in, r.opt.Observed
	pg := &in.Spec.Postgres
	var waiting []string
	switch {
	case pg.Mode == modeInCluster:
		r.add(keyPostgresCluster, in.cnpgCluster(), o.Ready[keyPostgresCluster])
		if !o.Ready[keyPostgresCluster] {
			waiting = append(waiting, "CloudNativePG cluster "+in.cnpgClusterName())
		}
		for _, db := range databases(pg) {
			r.add(keyPostgresCNPGDB+db, in.cnpgDatabase(db), o.Ready[keyPostgresCNPGDB+db])
			waiting = append(waiting, waitingIf(!o.Ready[keyPostgresCNPGDB+db], "database "+db)...)
		}
	case pg.AdminSecretRef != nil:
		r.add(keyPostgresSQLPC, in.sqlProviderConfig(), r.exists(keyPostgresSQLPC))
		for _, db := range databases(pg) {
			r.add(keyPostgresSQLDB+db, in.sqlDatabase(db), o.Ready[keyPostgresSQLDB+db])
			waiting = append(waiting, waitingIf(!o.Ready[keyPostgresSQLDB+db], "database "+db)...)
		}
	}
	if pg.Mode == modeInCluster || pg.AdminSecretRef == nil {
		r.keepSQLProviderConfig()
	}
	r.out.Status.BackingServices[servicePostgres] = serviceStatus(pg.Mode, waiting)
	return len(waiting) == 0
}

// keepSQLProviderConfig keeps provider-sql's ProviderConfig, as observed,
// while any of its Databases is observed, or still exists, after an
// allowed mode switch took them out of desired state: provider-sql drops
// (deletionPolicy Delete) or releases them through it, so without it they
// would hang on their finalizers and a Delete would never drop the data.
// Crossplane forgets a composed resource once it has asked for its
// deletion, so the Databases that are still leaving are the ones
// LeavingSQLDatabases selects (Observed.SQLDatabasesLeft).
func (r *renderer) keepSQLProviderConfig() {
	o := r.opt.Observed
	if o.SQLProviderConfig == nil || !o.observedPrefix(keyPostgresSQLDB) && !o.SQLDatabasesLeft {
		return
	}
	r.add(keyPostgresSQLPC, r.in.unstructuredObject(apiProviderSQL, kindProviderConfig, r.in.sqlProviderConfigName(), "postgres", o.SQLProviderConfig), true)
}

// redis composes the in-cluster Redis and reports whether Redis is up.
func (r *renderer) redis() bool {
	in := r.in
	ready := true
	if in.Spec.Redis.Mode == modeInCluster {
		ready = r.opt.Observed.Ready[keyRedisStatefulSet]
		r.add(keyRedisStatefulSet, in.redisStatefulSet(), ready)
		if in.sentinelOn() {
			r.add(keyRedisService, in.headlessService(serviceRedis, "redis", redisPort), r.exists(keyRedisService))
			sentinels := r.opt.Observed.Ready[keyRedisSentinelStatefulSet]
			r.add(keyRedisSentinelStatefulSet, in.sentinelStatefulSet(), sentinels)
			r.add(keyRedisSentinelService, in.headlessService(componentSentinel, "sentinel", sentinelPort), r.exists(keyRedisSentinelService))
			ready = ready && sentinels
		} else {
			r.add(keyRedisService, in.redisService(), r.exists(keyRedisService))
		}
	}
	r.out.Status.BackingServices[serviceRedis] = serviceStatus(in.Spec.Redis.Mode, waitingIf(!ready, "Redis "+in.object(serviceRedis)))
	return ready
}

// pulsar composes the in-cluster Pulsar and, once Pulsar is up, the
// topic-init Job; it reports whether the topics exist.
func (r *renderer) pulsar() (bool, error) {
	in, o := r.in, r.opt.Observed
	ps := &in.Spec.Pulsar
	up := true
	if ps.Mode == modeInCluster {
		rel, err := in.pulsarRelease()
		if err != nil {
			return false, err
		}
		if err := r.pulsarAuth(); err != nil {
			return false, err
		}
		up = o.Ready[keyPulsarRelease]
		r.add(keyPulsarRelease, rel, up)
	}
	topics, err := in.topicsJob()
	if err != nil {
		return false, err
	}
	job := topics.Name
	state, seen := o.Jobs[job]
	if up || seen {
		r.add(keyPulsarTopics, topics, state == JobComplete)
	}
	ready := seen && state == JobComplete
	var waiting []string
	switch {
	case !up && !seen:
		waiting = []string{"Pulsar release " + in.object(servicePulsar)}
	case seen && state == JobFailed:
		waiting = []string{"topic-init Job " + job + ", which failed; see its pod logs"}
	case !ready:
		waiting = []string{"topic-init Job " + job}
	}
	r.out.Status.BackingServices[servicePulsar] = serviceStatus(ps.Mode, waiting)
	return ready, nil
}

func waitingIf(cond bool, what string) []string {
	if cond {
		return []string{what}
	}
	return nil
}

func serviceStatus(mode string, waiting []string) v1alpha1.BackingServiceStatus {
	if len(waiting) == 0 {
		return v1alpha1.BackingServiceStatus{Mode: mode, Ready: true}
	}
	return v1alpha1.BackingServiceStatus{Mode: mode, Reason: "Waiting for " + strings.Join(waiting, ", ")}
}

// waitingFor is why an instance must wait for a backing service, or "".
func (g gates) waitingFor(inst *instance) string {
	switch {
	case inst.Database != "" && !g.Postgres:
		return "Waiting for the PostgreSQL databases"
	case inst.RedisKey != "" && !g.Redis:
		return "Waiting for Redis"
	case inst.Pulsar && !g.Topics:
		return "Waiting for the Pulsar topics"
	}
	return ""
}

// backingCondition summarises the backing services.
func (r *renderer) backingCondition() Condition {
	var waiting []string
	for _, name := range []string{servicePostgres, serviceRedis, servicePulsar} {
		if s := r.out.Status.BackingServices[name]; !s.Ready {
			waiting = append(waiting, fmt.Sprintf("%s: %s", name, s.Reason))
		}
	}
	if len(waiting) > 0 {
		return Condition{Type: ConditionBackingServices, Reason: ReasonWaiting, Message: strings.Join(waiting, "; ")}
	}
	return Condition{Type: ConditionBackingServices, Status: true, Reason: ReasonReady, Message: "PostgreSQL databases, Redis and Pulsar topics are ready"}
}
