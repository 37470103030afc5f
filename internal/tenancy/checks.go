package tenancy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// modeInCluster is the backing-service mode that composes the service.
const modeInCluster = "InCluster"

// Armada is what CheckArmada reads of an Armada.
type Armada struct {
	// Namespace is the tenant's namespace: a namespaced Armada's own, or
	// the claim's.
	Namespace string
	// Spec is the defaulted spec, Written the spec as the tenant wrote it
	// (images are checked there: the defaults are the function's own).
	Spec, Written *v1alpha1.ArmadaSpec
	// ClusterScope is a namespaced Armada's spec.clusterScope.providerConfigRef.
	ClusterScope *v1alpha1.ProviderConfigRef
}

// CheckArmada refuses everything an Armada names outside its namespace
// that the policy does not allow, each error naming the field and the
// policy setting that refuses it.
func (p Policy) CheckArmada(a Armada) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	s := a.Spec
	if !p.allowArmada() {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"),
			p.rule("allowArmada", fmt.Sprintf("namespace %q may not hold an Armada", a.Namespace))))
	}
	if s.Postgres.Mode == modeInCluster && !slices.Contains(p.kubernetesConfigs(), s.ProviderConfigs.Kubernetes) {
		errs = append(errs, field.Forbidden(sp.Child("providerConfigs", "kubernetes"),
			p.rule("providerConfigs.kubernetes", fmt.Sprintf("ClusterProviderConfig %q", s.ProviderConfigs.Kubernetes))))
	}
	if s.Pulsar.Mode == modeInCluster && !slices.Contains(p.helmConfigs(), s.ProviderConfigs.Helm) {
		errs = append(errs, field.Forbidden(sp.Child("providerConfigs", "helm"),
			p.rule("providerConfigs.helm", fmt.Sprintf("ClusterProviderConfig %q", s.ProviderConfigs.Helm))))
	}
	if r := a.ClusterScope; r != nil {
		errs = append(errs, p.checkClusterScope(sp.Child("clusterScope", "providerConfigRef"), r)...)
	}
	for i, e := range s.Executors {
		if e.Cluster == nil {
			continue
		}
		r := e.Cluster.ProviderConfigRef
		if !allowsRef(p.Spec.ProviderConfigs.WorkerClusters, r.Kind, r.Name) {
			errs = append(errs, field.Forbidden(sp.Child("executors").Index(i).Child("cluster", "providerConfigRef"),
				p.rule("providerConfigs.workerClusters", fmt.Sprintf("%s %q", kindOf(r.Kind), r.Name))))
		}
	}
	if a.Written != nil {
		errs = append(errs, p.checkImages(sp, a.Written)...)
	}
	for i, pc := range s.Scheduling.PriorityClasses {
		if pc.Priority > p.maxPriority() {
			errs = append(errs, field.Invalid(sp.Child("scheduling", "priorityClasses").Index(i).Child("priority"), pc.Priority,
				p.rule("maxPriority", fmt.Sprintf("above the ceiling %d", p.maxPriority()))))
		}
	}
	if ic := s.Pulsar.InCluster; ic != nil {
		errs = append(errs, p.checkPulsarValues(sp.Child("pulsar", "inCluster", "values"), ic.Values)...)
	}
	if !p.Spec.AllowAuthConfig {
		errs = append(errs, p.checkAuthConfig(sp, s)...)
	}
	return errs
}

// checkClusterScope refuses a spec.clusterScope config the policy does
// not list.
func (p Policy) checkClusterScope(path *field.Path, r *v1alpha1.ProviderConfigRef) field.ErrorList {
	if allowsRef(p.Spec.ProviderConfigs.ClusterScope, r.Kind, r.Name) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, p.rule("providerConfigs.clusterScope", fmt.Sprintf("%s %q", kindOf(r.Kind), r.Name)))}
}

// TeamQueue is what CheckTeamQueue reads of a team queue.
type TeamQueue struct {
	// Namespace is the team's namespace: the namespaced ArmadaQueue's own,
	// or the claim's.
	Namespace string
	// ArmadaNamespace and ArmadaName name the target Armada.
	ArmadaNamespace, ArmadaName string
	// ClusterScope is the config the queue composes through: its own
	// spec.clusterScope, else the one it inherits from the target Armada
	// (Inherited true).
	ClusterScope *v1alpha1.ProviderConfigRef
	Inherited    bool
}

// CheckTeamQueue refuses a team queue on an Armada in another namespace
// the policy does not list, and a cluster-scope config it does not allow.
func (p Policy) CheckTeamQueue(q TeamQueue) field.ErrorList {
	return append(p.CheckQueueTarget(q), p.CheckQueueScope(q)...)
}

// CheckQueueTarget refuses a team queue on an Armada in another namespace
// the policy does not list. It needs only the queue's spec, so the
// function checks it before it asks for the target: a tenant learns
// nothing of Armadas it may not use.
func (p Policy) CheckQueueTarget(q TeamQueue) field.ErrorList {
	if q.ArmadaNamespace == q.Namespace || slices.ContainsFunc(p.Spec.QueueArmadas, func(r tenancyv1.ArmadaRef) bool {
		return r.Namespace == q.ArmadaNamespace && r.Name == q.ArmadaName
	}) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "armada"),
		p.rule("queueArmadas", fmt.Sprintf("Armada %s/%s is in another namespace and does not allow team %q", q.ArmadaNamespace, q.ArmadaName, q.Namespace)))}
}

// CheckQueueScope refuses the cluster-scope config a team queue composes
// through, its own or its target's, unless the policy allows it.
func (p Policy) CheckQueueScope(q TeamQueue) field.ErrorList {
	r := q.ClusterScope
	if r == nil {
		return nil
	}
	path := field.NewPath("spec", "clusterScope", "providerConfigRef")
	if q.Inherited && !allowsRef(p.Spec.ProviderConfigs.ClusterScope, r.Kind, r.Name) {
		return field.ErrorList{field.Forbidden(path, p.rule("providerConfigs.clusterScope",
			fmt.Sprintf("unset, so the queue would compose through the target Armada's %s %q", kindOf(r.Kind), r.Name)))}
	}
	return p.checkClusterScope(path, r)
}

// checkImages refuses an image registry or image the tenant chose outside
// the policy's registries.
func (p Policy) checkImages(sp *field.Path, s *v1alpha1.ArmadaSpec) field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, ref string) {
		if ref == "" || p.allowsImage(ref) {
			return
		}
		errs = append(errs, field.Forbidden(path, p.rule("imageRegistries", fmt.Sprintf("%q is not from an allowed registry", strings.TrimSuffix(ref, "/")))))
	}
	// The registry prefixes image names: check it as an image under it.
	if reg := strings.TrimSuffix(s.ImageRegistry, "/"); reg != "" {
		check(sp.Child("imageRegistry"), reg+"/")
	}
	comps := components(s.Components)
	for _, name := range slices.Sorted(maps.Keys(comps)) {
		if img := comps[name].Image; img != nil {
			check(sp.Child("components", name, "image", "repository"), img.Repository)
		}
	}
	if ic := s.Postgres.InCluster; ic != nil {
		check(sp.Child("postgres", "inCluster", "imageName"), ic.ImageName)
	}
	if ic := s.Redis.InCluster; ic != nil {
		check(sp.Child("redis", "inCluster", "image"), ic.Image)
	}
	return errs
}

// allowsImage reports whether an image reference (or a registry with a
// path) starts with one of the policy's registries at a "/" boundary. A
// reference without a host (no "/", or a first part without "." or ":"
// that is not "localhost") is on Docker Hub.
func (p Policy) allowsImage(ref string) bool {
	ref = strings.SplitN(ref, "@", 2)[0]
	first, _, path := strings.Cut(ref, "/")
	if !path || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		ref = "docker.io/" + ref
	}
	for _, r := range p.Spec.ImageRegistries {
		r = strings.TrimSuffix(r, "/")
		if ref == r || strings.HasPrefix(ref, r+"/") || strings.HasPrefix(ref, r+":") {
			return true
		}
	}
	return false
}

// components are a spec's per-component settings by field name.
func components(c v1alpha1.Components) map[string]v1alpha1.Component {
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var out map[string]v1alpha1.Component
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// checkPulsarValues refuses Helm values outside the policy's paths.
func (p Policy) checkPulsarValues(path *field.Path, raw *runtime.RawExtension) field.ErrorList {
	values, err := decode(raw)
	if err != nil || values == nil {
		// validate.go's schema checks report an undecodable value.
		return nil
	}
	var errs field.ErrorList
	for _, leaf := range leaves(values, nil) {
		if !allowedPath(p.Spec.PulsarValues, leaf) {
			errs = append(errs, field.Forbidden(childPath(path, leaf), p.rule("pulsarValues", "this Helm value path is not in the allowlist")))
		}
	}
	return errs
}

// allowedPath reports whether a value path is an allowed path or under one.
func allowedPath(allowed, leaf []string) bool {
	joined := strings.Join(leaf, ".")
	for _, a := range allowed {
		if joined == a || strings.HasPrefix(joined, a+".") {
			return true
		}
	}
	return false
}

// checkAuthConfig refuses config overrides that set keys about
// authentication or authorisation.
func (p Policy) checkAuthConfig(sp *field.Path, s *v1alpha1.ArmadaSpec) field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, raw *runtime.RawExtension) {
		cfg, err := decode(raw)
		if err != nil || cfg == nil {
			return
		}
		for _, keys := range authKeys(cfg, nil) {
			errs = append(errs, field.Forbidden(childPath(path, keys),
				p.rule("allowAuthConfig", "a config override may not set authentication or authorisation; use spec.auth")))
		}
	}
	comps := components(s.Components)
	for _, name := range slices.Sorted(maps.Keys(comps)) {
		check(sp.Child("components", name, "config"), comps[name].Config)
	}
	for i, e := range s.Executors {
		check(sp.Child("executors").Index(i).Child("config"), e.Config)
	}
	return errs
}

// authWords mark a config key about authentication or authorisation, in
// any component and at any depth (Armada reads keys case-insensitively):
// auth blocks and methods (basicAuth, openIdAuth, anonymousAuth,
// kubernetesAuth, kerberos, the client *Auth blocks), OIDC, permission
// mappings and impersonation.
var authWords = []string{"auth", "oidc", "kerberos", "permission", "impersonat"}

// authKeys are the paths of the keys in cfg about auth; it does not look
// under a key it reports.
func authKeys(cfg map[string]any, prefix []string) [][]string {
	var out [][]string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		path := append(slices.Clone(prefix), k)
		lower := strings.ToLower(k)
		if slices.ContainsFunc(authWords, func(w string) bool { return strings.Contains(lower, w) }) {
			out = append(out, path)
			continue
		}
		if m, ok := cfg[k].(map[string]any); ok {
			out = append(out, authKeys(m, path)...)
		}
	}
	return out
}

// leaves are the paths of a value's leaves: everything but a non-empty
// map is a leaf.
func leaves(v map[string]any, prefix []string) [][]string {
	var out [][]string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		path := append(slices.Clone(prefix), k)
		if m, ok := v[k].(map[string]any); ok && len(m) > 0 {
			out = append(out, leaves(m, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// childPath extends a field path by map keys.
func childPath(p *field.Path, keys []string) *field.Path {
	for _, k := range keys {
		p = p.Child(k)
	}
	return p
}

// decode reads a free-form object.
func decode(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}
