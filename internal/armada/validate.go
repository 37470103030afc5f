package armada

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// XR is the part of an XArmada that rendering needs.
type XR struct {
	// Name and Labels of the XR.
	Name   string
	Labels map[string]string
	// Spec as the user wrote it.
	Spec v1alpha1.ArmadaSpec
	// ComposedPriorityClasses are the PriorityClasses the XR already
	// composes (its resource references and observed resources): an
	// existing Armada keeps the default names it was created with.
	ComposedPriorityClasses []string
	// ComposedSQLProviderConfigs are the provider-sql ProviderConfigs the
	// XR already composes (its resource references and observed
	// resources): an existing Armada keeps the name it was created with.
	ComposedSQLProviderConfigs []string
	// Namespace is a namespaced (Crossplane v2) XR's own namespace, empty
	// for a legacy XR; ClusterScope is its spec.clusterScope.providerConfigRef.
	Namespace    string
	ClusterScope *v1alpha1.ProviderConfigRef
}

// maxNameLength keeps every derived object name within 63 characters.
const maxNameLength = 30

var (
	userName    = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)
	pulsarURL   = regexp.MustCompile(`^pulsar(\+ssl)?://[^\s/]+$`)
	pulsarIdent = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	dbName      = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
	adminURL    = regexp.MustCompile(`^https?://[^\s/]+/?$`)
	// imageRegistry is a registry host, with an optional port and
	// repository path, that an image repository is appended to: the
	// XRD's pattern on spec.imageRegistry.
	imageRegistry = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*/?$`)
)

// New defaults and validates an XR. The XRD's schema enforces most of these
// rules already; they are checked again here because the function cannot
// know the schema ran (crossplane render, an older XRD, a direct XR), and
// every rejection must name the field.
func New(xr XR) (*Install, field.ErrorList) {
	in := &Install{Name: xr.Name, Namespace: xr.Spec.Namespace, Spec: *xr.Spec.DeepCopy(), owner: ownerOf(xr)}
	errs := ownNamespace(xr)
	if len(errs) > 0 {
		in.Namespace = xr.Labels[xcrd.LabelKeyClaimNamespace]
	}
	switch {
	case xr.Namespace != "":
		in.isNamespaced = true
		errs = append(errs, in.namespaced(xr)...)
	case xr.Labels[xcrd.LabelKeyClaimName] != "":
		in.Name = xr.Labels[xcrd.LabelKeyClaimName]
	}
	if in.Namespace == "" {
		in.Namespace = xr.Labels[xcrd.LabelKeyClaimNamespace]
	}
	applyDefaults(&in.Spec, priorityClassPrefix(in.Namespace, in.Name, xr.ComposedPriorityClasses))
	in.legacySQLProviderConfig = slices.Contains(xr.ComposedSQLProviderConfigs, in.object(sqlProviderConfigSuffix))
	errs = append(errs, validateSpec(field.NewPath("spec"), &in.Spec)...)
	in.resolveConnections()
	errs = append(errs, in.checkSecretInputs(&xr.Spec)...)
	errs = append(errs, in.checkRestoreTarget()...)
	if in.Namespace == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "namespace"), "set it when the XArmada is not created through an ArmadaClaim"))
	}
	if in.isNamespaced {
		errs = append(errs, in.checkClusterScope()...)
	}
	// The longest derived name is a migration Job's, whose name is also a
	// pod label and so at most 63 characters.
	if len(in.Name) > maxNameLength {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), in.Name, maxNameLength))
	}
	for _, msg := range validation.IsDNS1035Label(in.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), in.Name, msg))
	}
	errs = append(errs, in.checkComposedNames()...)
	errs = append(errs, in.checkJobNamespaces()...)
	errs = append(errs, in.validateRotation()...)
	return in, errs
}

// checkComposedNames refuses, up front, names composed from two fields that
// pass their own limits but not Kubernetes': every executor has a Service
// <name>-executor-<clusterId>, and a Service name is a DNS label of at most
// 63 characters. Without this the Service never syncs and the claim never
// says why. TestComposedNamesFit checks every other composed name fits.
func (in *Install) checkComposedNames() field.ErrorList {
	var errs field.ErrorList
	for i, e := range in.Spec.Executors {
		svc := in.object("executor-" + e.ClusterID)
		if len(svc) <= validation.DNS1035LabelMaxLength {
			continue
		}
		limit := max(validation.DNS1035LabelMaxLength-len(in.object("executor-")), 0)
		errs = append(errs, &field.Error{
			Type: field.ErrorTypeTooLong, Field: field.NewPath("spec", "executors").Index(i).Child("clusterId").String(), BadValue: e.ClusterID,
			Detail: fmt.Sprintf("with the name %q (the claim's metadata.name) this executor's Service would be %q, %d characters, over Kubernetes' 63: "+
				"shorten the clusterId to at most %d characters or the claim's name", in.Name, svc, len(svc), limit),
		})
	}
	return errs
}

func validateSpec(p *field.Path, s *v1alpha1.ArmadaSpec) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(SupportedVersions, s.Version) {
		errs = append(errs, field.NotSupported(p.Child("version"), s.Version, SupportedVersions))
	}
	if !slices.Contains(deletionPolicies, s.DeletionPolicy) {
		errs = append(errs, field.NotSupported(p.Child("deletionPolicy"), s.DeletionPolicy, deletionPolicies))
	}
	if s.ImageRegistry != "" && !imageRegistry.MatchString(s.ImageRegistry) {
		errs = append(errs, field.Invalid(p.Child("imageRegistry"), s.ImageRegistry,
			"must be a registry host with an optional :port and lower-case repository path, e.g. registry.example.com/mirror"))
	}
	errs = append(errs, validatePostgres(p.Child("postgres"), &s.Postgres)...)
	errs = append(errs, validateRedis(p.Child("redis"), &s.Redis)...)
	errs = append(errs, validatePulsar(p.Child("pulsar"), &s.Pulsar)...)
	errs = append(errs, validateAuth(p.Child("auth"), &s.Auth)...)
	errs = append(errs, validateScheduling(p.Child("scheduling"), &s.Scheduling)...)
	errs = append(errs, validateExecutors(p.Child("executors"), s)...)
	errs = append(errs, validateComponents(p.Child("components"), s)...)
	errs = append(errs, validateQueues(p.Child("queues"), s.Queues, s.Scheduling.PriorityClasses)...)
	errs = append(errs, validateTLS(p.Child("tls"), s.TLS)...)
	errs = append(errs, validateRetention(p.Child("retention"), &s.Retention)...)
	errs = append(errs, validateActions(p.Child("actions"), s)...)
	if ing := s.Ingress; ing != nil {
		ip := p.Child("ingress")
		for name, host := range map[string]string{"grpcHost": ing.GRPCHost, "restHost": ing.RESTHost, "lookoutHost": ing.LookoutHost} {
			for _, msg := range validation.IsDNS1123Subdomain(host) {
				errs = append(errs, field.Invalid(ip.Child(name), host, msg))
			}
		}
		if ing.RESTHost != "" && ing.RESTHost == ing.LookoutHost {
			errs = append(errs, field.Invalid(ip.Child("restHost"), ing.RESTHost, "must differ from lookoutHost"))
		}
	}
	return errs
}

func validateSecretRef(p *field.Path, r *v1alpha1.SecretKeyRef) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name the Secret, in the Armada namespace"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
	}
	if r.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), "name the key in the Secret"))
	}
	return errs
}

// modes are the backing-service modes.
var modes = []string{modeExternal, modeInCluster}

// validateMode checks a backing service's mode and that the fields of the
// other mode are unset.
func validateMode(p *field.Path, mode string, inCluster bool, external map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch mode {
	case modeExternal:
		if inCluster {
			errs = append(errs, field.Forbidden(p.Child("inCluster"), "only valid with mode: InCluster"))
		}
	case modeInCluster:
		for _, name := range slices.Sorted(maps.Keys(external)) {
			if external[name] {
				errs = append(errs, field.Forbidden(p.Child(name), "not valid with mode: InCluster, which composes the service and its connection"))
			}
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("mode"), mode, modes))
	}
	return errs
}

func validatePostgres(p *field.Path, pg *v1alpha1.Postgres) field.ErrorList {
	errs := validateMode(p, pg.Mode, pg.InCluster != nil, map[string]bool{
		"host": pg.Host != "", "user": pg.User != "", "passwordSecretRef": pg.PasswordSecretRef != nil, "adminSecretRef": pg.AdminSecretRef != nil,
	})
	if pg.Mode == modeExternal {
		if pg.Host == "" {
			errs = append(errs, field.Required(p.Child("host"), "the PostgreSQL server's host name"))
		}
		if pg.User == "" {
			errs = append(errs, field.Required(p.Child("user"), "the user Armada connects as"))
		}
		if pg.PasswordSecretRef == nil {
			errs = append(errs, field.Required(p.Child("passwordSecretRef"), "the Secret key holding the user's password"))
		} else {
			errs = append(errs, validateSecretRef(p.Child("passwordSecretRef"), pg.PasswordSecretRef)...)
		}
		if r := pg.AdminSecretRef; r != nil {
			for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
				errs = append(errs, field.Invalid(p.Child("adminSecretRef", "name"), r.Name, msg))
			}
		}
	}
	errs = append(errs, validateBackupRestore(p, pg)...)
	if ic := pg.InCluster; ic != nil && (ic.Instances < 0 || ic.Instances > 9) {
		errs = append(errs, field.Invalid(p.Child("inCluster", "instances"), ic.Instances, "must be between 1 and 9"))
	}
	if pg.Port < 1 || pg.Port > 65535 {
		errs = append(errs, field.Invalid(p.Child("port"), pg.Port, "must be between 1 and 65535"))
	}
	sslModes := []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
	if !slices.Contains(sslModes, pg.SSLMode) {
		errs = append(errs, field.NotSupported(p.Child("sslMode"), pg.SSLMode, sslModes))
	}
	dbs := p.Child("databases")
	for name, db := range map[string]string{dbScheduler: pg.Databases.Scheduler, dbLookout: pg.Databases.Lookout} {
		if !dbName.MatchString(db) {
			errs = append(errs, field.Invalid(dbs.Child(name), db, "must be a lower-case PostgreSQL identifier"))
		}
	}
	switch {
	case pg.Databases.Scheduler == pg.Databases.Lookout:
		errs = append(errs, field.Duplicate(dbs.Child("lookout"), pg.Databases.Lookout))
	case databaseSuffix(pg.Databases.Scheduler) == databaseSuffix(pg.Databases.Lookout):
		errs = append(errs, field.Invalid(dbs.Child("lookout"), pg.Databases.Lookout,
			"names the same Kubernetes object as spec.postgres.databases.scheduler once \"_\" becomes \"-\": choose another name"))
	}
	return errs
}

func validateRedis(p *field.Path, r *v1alpha1.Redis) field.ErrorList {
	errs := validateMode(p, r.Mode, r.InCluster != nil, map[string]bool{
		"addrs": len(r.Addrs) > 0, "passwordSecretRef": r.PasswordSecretRef != nil,
	})
	if r.Mode == modeExternal && len(r.Addrs) == 0 {
		errs = append(errs, field.Required(p.Child("addrs"), "at least one host:port address"))
	}
	for i, a := range r.Addrs {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			errs = append(errs, field.Invalid(p.Child("addrs").Index(i), a, "must be host:port"))
		}
	}
	if r.DB != nil && (*r.DB < 0 || *r.DB > 15) {
		errs = append(errs, field.Invalid(p.Child("db"), *r.DB, "must be between 0 and 15"))
	}
	if r.PasswordSecretRef != nil {
		errs = append(errs, validateSecretRef(p.Child("passwordSecretRef"), r.PasswordSecretRef)...)
	}
	return errs
}

// pulsarOwnValues are the chart values the function sets and users may
// not: token authentication, and the names and labels its Services,
// Secrets and NetworkPolicies rely on.
var pulsarOwnValues = map[string]string{
	"auth":             "the function turns on token authentication and generates the tokens",
	"fullnameOverride": "the function names the release's Services",
	"nameOverride":     "the function's NetworkPolicies select the release's pods by the chart's labels",
	"clusterName":      "the function's NetworkPolicies select the release's pods by their cluster label",
}

// validatePulsarValues refuses Helm values the function sets itself.
func validatePulsarValues(p *field.Path, raw *runtime.RawExtension) field.ErrorList {
	values, err := decodeConfig(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", "must be an object of the Apache Pulsar chart's values")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if why, ok := pulsarOwnValues[k]; ok {
			errs = append(errs, field.Forbidden(p.Child(k), why+"; remove it"))
		}
	}
	return errs
}

func validatePulsar(p *field.Path, ps *v1alpha1.Pulsar) field.ErrorList {
	errs := validateMode(p, ps.Mode, ps.InCluster != nil, map[string]bool{
		"url": ps.URL != "", "adminURL": ps.AdminURL != "", "tokenSecretRef": ps.TokenSecretRef != nil, "caSecretRef": ps.CASecretRef != nil,
	})
	if ps.Mode == modeExternal {
		if !pulsarURL.MatchString(ps.URL) {
			errs = append(errs, field.Invalid(p.Child("url"), ps.URL, "must be pulsar://host:port or pulsar+ssl://host:port"))
		}
		if !adminURL.MatchString(ps.AdminURL) {
			errs = append(errs, field.Invalid(p.Child("adminURL"), ps.AdminURL, "must be http(s)://host:port of the Pulsar admin API; the topic-init Job needs it"))
		}
	}
	if ic := ps.InCluster; ic != nil && !slices.Contains([]string{pulsarProfileSmall, pulsarProfileHA}, ic.Profile) {
		errs = append(errs, field.NotSupported(p.Child("inCluster", "profile"), ic.Profile, []string{pulsarProfileSmall, pulsarProfileHA}))
	}
	if ic := ps.InCluster; ic != nil {
		errs = append(errs, validatePulsarValues(p.Child("inCluster", "values"), ic.Values)...)
	}
	if !pulsarIdent.MatchString(ps.Tenant) {
		errs = append(errs, field.Invalid(p.Child("tenant"), ps.Tenant, "must be 1-64 letters, digits, '_' or '-'"))
	}
	if !pulsarIdent.MatchString(ps.Namespace) {
		errs = append(errs, field.Invalid(p.Child("namespace"), ps.Namespace, "must be 1-64 letters, digits, '_' or '-'"))
	}
	if ps.EventsPartitions < 1 || ps.EventsPartitions > 64 {
		errs = append(errs, field.Invalid(p.Child("eventsPartitions"), ps.EventsPartitions, "must be between 1 and 64"))
	}
	if ps.TokenSecretRef != nil {
		errs = append(errs, validateSecretRef(p.Child("tokenSecretRef"), ps.TokenSecretRef)...)
	}
	if ps.CASecretRef != nil {
		errs = append(errs, validateSecretRef(p.Child("caSecretRef"), ps.CASecretRef)...)
		if !strings.HasPrefix(ps.URL, "pulsar+ssl://") {
			errs = append(errs, field.Invalid(p.Child("caSecretRef"), ps.CASecretRef.Name, "only applies to pulsar+ssl:// URLs"))
		}
	}
	return errs
}

func validateAuth(p *field.Path, a *v1alpha1.Auth) field.ErrorList {
	var errs field.ErrorList
	if !a.Anonymous && len(a.BasicUsers) == 0 && a.OIDC == nil {
		errs = append(errs, field.Required(p, "configure basicUsers or oidc, or set anonymous: true explicitly"))
	}
	seen := map[string]bool{}
	for i, u := range a.BasicUsers {
		up := p.Child("basicUsers").Index(i).Child("name")
		if !userName.MatchString(u.Name) {
			errs = append(errs, field.Invalid(up, u.Name, "must match "+userName.String()))
		}
		if seen[u.Name] {
			errs = append(errs, field.Duplicate(up, u.Name))
		}
		seen[u.Name] = true
	}
	if o := a.OIDC; o != nil {
		if !strings.HasPrefix(o.ProviderURL, "https://") {
			errs = append(errs, field.Invalid(p.Child("oidc", "providerUrl"), o.ProviderURL, "must be an https:// issuer URL"))
		}
		if o.ClientID == "" {
			errs = append(errs, field.Required(p.Child("oidc", "clientId"), "the client id tokens are issued for"))
		}
		if o.CASecretRef != nil {
			errs = append(errs, validateSecretRef(p.Child("oidc", "caSecretRef"), o.CASecretRef)...)
		}
	}
	return errs
}

func validateScheduling(p *field.Path, s *v1alpha1.Scheduling) field.ErrorList {
	var errs field.ErrorList
	pools := map[string]bool{}
	for i, pl := range s.Pools {
		pp := p.Child("pools").Index(i).Child("name")
		for _, msg := range validation.IsDNS1123Label(pl.Name) {
			errs = append(errs, field.Invalid(pp, pl.Name, msg))
		}
		if pools[pl.Name] {
			errs = append(errs, field.Duplicate(pp, pl.Name))
		}
		pools[pl.Name] = true
	}
	classes := map[string]bool{}
	for i, pc := range s.PriorityClasses {
		pp := p.Child("priorityClasses").Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(pc.Name) {
			errs = append(errs, field.Invalid(pp.Child("name"), pc.Name, msg))
		}
		if strings.HasPrefix(pc.Name, "system-") {
			errs = append(errs, field.Invalid(pp.Child("name"), pc.Name, "the system- prefix is reserved by Kubernetes"))
		}
		if classes[pc.Name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), pc.Name))
		}
		classes[pc.Name] = true
		if pc.Priority < 0 || pc.Priority > 1000000000 {
			errs = append(errs, field.Invalid(pp.Child("priority"), pc.Priority, "must be between 0 and 1000000000"))
		}
	}
	if !classes[s.DefaultPriorityClass] {
		errs = append(errs, field.Invalid(p.Child("defaultPriorityClass"), s.DefaultPriorityClass, "must name one of spec.scheduling.priorityClasses"))
	}
	return errs
}

// validateNodeTaint checks an executor's node taint. Whether the release
// can give the pool's jobs its toleration (scheduling.pools[].jobDefaults,
// from 0.22.7) is checked against its config keys (configkeys.go).
func validateNodeTaint(p *field.Path, t *v1alpha1.NodeTaint) field.ErrorList {
	keyMsgs, valueMsgs := validation.IsQualifiedName(t.Key), validation.IsValidLabelValue(t.Value)
	errs := make(field.ErrorList, 0, len(keyMsgs)+len(valueMsgs))
	for _, msg := range keyMsgs {
		errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
	}
	for _, msg := range valueMsgs {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
	}
	return errs
}

func validateExecutors(p *field.Path, s *v1alpha1.ArmadaSpec) field.ErrorList {
	var errs field.ErrorList
	pools := map[string]bool{}
	for _, pl := range s.Scheduling.Pools {
		pools[pl.Name] = true
	}
	seen := map[string]bool{}
	remote := false
	for i, e := range s.Executors {
		ep := p.Index(i)
		if e.Cluster != nil {
			remote = true
			if e.Cluster.ProviderConfigRef.Name == "" {
				errs = append(errs, field.Required(ep.Child("cluster", "providerConfigRef", "name"), "name the provider-kubernetes config that reaches the worker cluster"))
			}
		}
		for _, msg := range validation.IsDNS1123Label(e.ClusterID) {
			errs = append(errs, field.Invalid(ep.Child("clusterId"), e.ClusterID, msg))
		}
		if len(e.ClusterID) > 40 {
			errs = append(errs, field.TooLong(ep.Child("clusterId"), e.ClusterID, 40))
		}
		if seen[e.ClusterID] {
			errs = append(errs, field.Duplicate(ep.Child("clusterId"), e.ClusterID))
		}
		seen[e.ClusterID] = true
		errs = append(errs, validateConfig(ep.Child("config"), s.Version, "executor", e.Config)...)
		if !pools[e.Pool] {
			errs = append(errs, field.Invalid(ep.Child("pool"), e.Pool, "must name one of spec.scheduling.pools, or the scheduler never schedules onto this executor"))
		}
		if t := e.NodeTaint; t != nil {
			errs = append(errs, validateNodeTaint(ep.Child("nodeTaint"), t)...)
		}
	}
	hasURL := s.ExecutorAPI != nil && s.ExecutorAPI.URL != ""
	hasHost := s.Ingress != nil && s.Ingress.ExecutorAPIHost != ""
	if remote && !hasURL && !hasHost {
		errs = append(errs, field.Required(field.NewPath("spec", "executorApi", "url"),
			"executors in other clusters (spec.executors[].cluster) dial the scheduler's executor API: set spec.executorApi.url or spec.ingress.executorApiHost"))
	}
	return errs
}

func validateComponents(p *field.Path, spec *v1alpha1.ArmadaSpec) field.ErrorList {
	var errs field.ErrorList
	c := &spec.Components
	for i := range components {
		row := &components[i]
		s := row.Settings(c)
		cp := p.Child(settingsField(row.Name))
		if s.Replicas != nil && (*s.Replicas < 1 || *s.Replicas > 20) {
			errs = append(errs, field.Invalid(cp.Child("replicas"), *s.Replicas, "must be between 1 and 20"))
		}
		if s.Replicas != nil && row.MaxReplicas > 0 && *s.Replicas > row.MaxReplicas {
			errs = append(errs, field.Invalid(cp.Child("replicas"), *s.Replicas, "an executor runs exactly one replica"))
		}
		errs = append(errs, validateConfig(cp.Child("config"), spec.Version, row.Name, s.Config)...)
	}
	return errs
}

// validateConfig checks a config override decodes, and that Armada's
// component at the claim's version reads every key in it.
func validateConfig(p *field.Path, version, component string, raw *runtime.RawExtension) field.ErrorList {
	cfg, err := decodeConfig(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	if cfg == nil {
		return nil
	}
	errs := checkUngranted(p, component, cfg)
	if !slices.Contains(SupportedVersions, version) {
		return errs
	}
	return append(errs, checkConfigKeys(p, version, component, cfg)...)
}

// queueName is a queue name the function accepts: it is also part of the
// Queue object's name.
var queueName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func validateQueues(p *field.Path, qs []v1alpha1.ArmadaQueue, classes []v1alpha1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	names := make([]string, 0, len(classes))
	for _, pc := range classes {
		names = append(names, pc.Name)
	}
	for i, q := range qs {
		qp := p.Index(i)
		// A limit for a class this Armada does not have limits nothing.
		for _, pc := range slices.Sorted(maps.Keys(q.ResourceLimitsByPriorityClassName)) {
			if !slices.Contains(names, pc) {
				errs = append(errs, field.NotSupported(qp.Child("resourceLimitsByPriorityClassName").Key(pc), pc, names))
			}
		}
		if !queueName.MatchString(q.Name) {
			errs = append(errs, field.Invalid(qp.Child("name"), q.Name, "must be a lower-case DNS label of at most 63 characters"))
		}
		if seen[q.Name] {
			errs = append(errs, field.Duplicate(qp.Child("name"), q.Name))
		}
		seen[q.Name] = true
		errs = append(errs, ValidateQueueParameters(qp, &q.QueueParameters)...)
	}
	return errs
}

// ValidateQueueParameters checks what Armada would reject: a priority
// factor below 1, fractions outside [0, 1], empty owners or label parts.
func ValidateQueueParameters(p *field.Path, q *armadav1.QueueParameters) field.ErrorList {
	var errs field.ErrorList
	if f, err := strconv.ParseFloat(string(q.PriorityFactor), 64); err != nil || f < 1 {
		errs = append(errs, field.Invalid(p.Child("priorityFactor"), q.PriorityFactor, "must be a decimal number of at least 1"))
	}
	for pc, l := range q.ResourceLimitsByPriorityClassName {
		lp := p.Child("resourceLimitsByPriorityClassName").Key(pc)
		errs = append(errs, ValidateFractions(lp.Child("maximumResourceFraction"), l.MaximumResourceFraction)...)
		for pool, pl := range l.MaximumResourceFractionByPool {
			errs = append(errs, ValidateFractions(lp.Child("maximumResourceFractionByPool").Key(pool).Child("maximumResourceFraction"), pl.MaximumResourceFraction)...)
		}
	}
	for k, v := range q.Labels {
		if k == "" || v == "" {
			errs = append(errs, field.Invalid(p.Child("labels").Key(k), v, "Armada rejects empty label keys and values"))
		}
	}
	return errs
}

// ValidateFractions checks each fraction is in [0, 1].
func ValidateFractions(p *field.Path, fs map[string]armadav1.Fraction) field.ErrorList {
	var errs field.ErrorList
	for _, r := range slices.Sorted(maps.Keys(fs)) {
		if f, err := strconv.ParseFloat(string(fs[r]), 64); err != nil || f < 0 || f > 1 {
			errs = append(errs, field.Invalid(p.Key(r), fs[r], "must be a fraction from 0 to 1"))
		}
	}
	return errs
}
