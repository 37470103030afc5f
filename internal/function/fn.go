// Package function is function-armada's composition function: it turns an
// XArmada, or a namespaced Armada, into every object a complete Armada
// needs.
package function

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	nsv1alpha1 "github.com/armadaproject/armada-crossplane/apis/namespaced/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// Function is function-armada.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
	key []byte
	// tls remembers issued and parsed certificates between calls: the
	// only memo the function keeps (see "Memos" in docs/dev/performance.md).
	tls *armada.TLSMemo
	// now is the clock the not-ready backoff reads (backoff.go).
	now func() time.Time
	// certNow is the clock that picks the validity window of generated
	// certificates; nil renders without one (see WithCertClock).
	certNow func() time.Time
}

// Option configures a Function.
type Option func(*Function)

// WithPasswordKey sets the key generated passwords are derived from.
// Without it each process uses a random key.
func WithPasswordKey(key []byte) Option { return func(f *Function) { f.key = key } }

// WithCertClock sets the clock that picks the validity window of
// generated TLS certificates and tells when an observed one must be
// renewed (time.Now without it). nil renders without a clock, as a render
// of a manifest offline: certificates then do not depend on the date
// (serving certificates last as long as the CA), which golden files need.
func WithCertClock(now func() time.Time) Option { return func(f *Function) { f.certNow = now } }

// New returns a Function.
func New(log logging.Logger, opts ...Option) (*Function, error) {
	f := &Function{log: log, tls: armada.NewTLSMemo(), now: time.Now, certNow: time.Now}
	for _, o := range opts {
		o(f)
	}
	if f.key == nil {
		f.key = make([]byte, 32)
		if _, err := rand.Read(f.key); err != nil {
			return nil, errors.Wrap(err, "cannot generate password key")
		}
	}
	return f, nil
}

// RunFunction composes an XArmada or a namespaced Armada, or a team's
// XArmadaQueue or namespaced ArmadaQueue, and reports on the XR (and the
// claim, if any) whether it accepted it.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	oxr, err := request.GetObservedCompositeResource(req)
	switch {
	case err != nil:
		response.Fatal(rsp, errors.Wrap(err, "cannot get observed composite resource"))
	case oxr.Resource.GetKind() == kindTeamQueue || oxr.Resource.GetKind() == kindNamespacedTeamQueue:
		f.runTeamQueue(req, rsp, oxr)
	default:
		f.runArmada(req, rsp, oxr)
	}
	reportAcceptance(rsp)
	return rsp, nil
}

// runArmada composes an XArmada.
func (f *Function) runArmada(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, oxr *resource.Composite) {
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get observed composed resources"))
		return
	}
	xr, err := decodeXR(oxr.Resource.Object)
	if err != nil {
		response.Fatal(rsp, err)
		return
	}
	kind := xrKind(oxr)
	if refuse(rsp, kind, checkComposed(observed, oxr, armada.NewOwner(armada.ArmadaKinds, xr.Name, xr.Namespace, xr.Labels))) {
		return
	}
	// What the XR composes: only observed resources, which checkComposed
	// found to be its own. Its resource references, which a namespaced
	// XR's author writes, only keep the default names an existing Armada
	// was created with.
	composedPCs := slices.Concat(observedNames(observed, "", "PriorityClass"), observedKeys(observed, priorityClassRequirement))
	xr.ComposedPriorityClasses = append(xr.ComposedPriorityClasses, composedPCs...)
	composedSQLPCs := observedNames(observed, armada.SQLProviderConfigAPIVersion, armada.SQLProviderConfigKind)
	xr.ComposedSQLProviderConfigs = append(xr.ComposedSQLProviderConfigs, composedSQLPCs...)
	in, errs := armada.New(xr)
	if len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "invalid "+kind))
		return
	}
	if errs := in.CheckPriorityClasses(requiredByName(req, priorityClassRequirement), composedPCs); len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "invalid "+kind))
		return
	}
	if errs := in.CheckJobNamespaces(requiredByName(req, jobNamespaceRequirement), observedKeys(observed, armada.KeyJobNamespacePrefix)); len(errs) > 0 {
		response.Fatal(rsp, errors.Wrap(errs.ToAggregate(), "invalid "+kind))
		return
	}
	requirePriorityClasses(rsp, in.PriorityClasses())
	requireJobNamespaces(rsp, in.JobNamespaces())
	policy, err := checkArmadaTenancy(req, rsp, &oxr.Resource.Unstructured, in, xr)
	if refuse(rsp, kind, err) {
		return
	}

	obs := armada.Observe(unstructuredOf(observed)).WithServices(observedServices(oxr.Resource.Object)).
		WithStatus(statusString(oxr.Resource.Object, "backup", "lastBackup", "name"),
			statusString(oxr.Resource.Object, "version", "desired"), statusString(oxr.Resource.Object, "version", "running"))
	obs = requireLeavingSQLDatabases(req, rsp, in, obs)
	out, err := armada.Render(in, armada.Options{
		Observed: obs,
		Rand:     armada.KeyedRand(f.key, string(oxr.Resource.GetUID())+"/"+xr.Name),
		TLSMemo:  f.tls,
		Created:  oxr.Resource.GetCreationTimestamp().Time,
		Now:      f.certTime(),
		Tenancy:  policy,
	})
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot render Armada"))
		return
	}
	warnNotAdopted(rsp, armada.NotAdopted(out.Objects, unstructuredOf(observed)))
	out.Objects = armada.NamespacesFirst(out.Objects, obs.Keys)
	if err := setDesired(rsp, out.Objects, out.Status, out.Ready); err != nil {
		response.Fatal(rsp, err)
		return
	}
	setConditions(rsp, out.Conditions)
	if !out.Ready {
		// Crossplane calls again after the TTL: look again soon while a
		// migration or rollout is in progress, less often the longer it
		// has not converged.
		rsp.Meta.Ttl = durationpb.New(notReadyTTL(notReadySince(oxr.Resource.Object), f.now()))
	}
	f.log.Debug("Composed Armada", "xr", xr.Name, "objects", len(out.Objects), "ready", out.Ready)
}

// xrKind is the XR's kind for messages: XArmada, or Armada for a
// namespaced one.
func xrKind(oxr *resource.Composite) string {
	if oxr.Resource.GetNamespace() != "" {
		return kindNamespacedArmada
	}
	return "XArmada"
}

// kindNamespacedArmada is the namespaced Armada XR's kind.
const kindNamespacedArmada = "Armada"

// priorityClassRequirement prefixes the requirement names of PriorityClasses.
const priorityClassRequirement = "priorityclass-"

// requirePriorityClasses asks Crossplane for the PriorityClasses the install
// composes; it calls the function again with them as required resources.
func requirePriorityClasses(rsp *fnv1.RunFunctionResponse, names []string) {
	sel := make(map[string]*fnv1.ResourceSelector, len(names))
	for _, n := range names {
		sel[priorityClassRequirement+n] = &fnv1.ResourceSelector{
			ApiVersion: "scheduling.k8s.io/v1",
			Kind:       "PriorityClass",
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: n},
		}
	}
	rsp.Requirements = &fnv1.Requirements{Resources: sel}
}

// jobNamespaceRequirement prefixes the requirement names of the claim's
// job namespaces.
const jobNamespaceRequirement = "jobnamespace-"

// requireJobNamespaces asks Crossplane for the claim's job namespaces, so
// the function sees which exist before it composes them.
func requireJobNamespaces(rsp *fnv1.RunFunctionResponse, names []string) {
	for _, n := range names {
		require(rsp, jobNamespaceRequirement+n, &fnv1.ResourceSelector{
			ApiVersion: "v1",
			Kind:       "Namespace",
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: n},
		})
	}
}

// decodeXR reads the fields rendering needs from an XR of either shape: a
// legacy XArmada (cluster-scoped, maybe claimed) or a namespaced Armada,
// whose namespace and spec.clusterScope it reads too. The kind in errors is
// the one the user wrote.
func decodeXR(obj map[string]any) (armada.XR, error) {
	u := &unstructured.Unstructured{Object: obj}
	xr := armada.XR{
		Name: u.GetName(), Labels: u.GetLabels(), Namespace: u.GetNamespace(),
		ComposedPriorityClasses:    referencedNames(obj, "", "PriorityClass"),
		ComposedSQLProviderConfigs: referencedNames(obj, armada.SQLProviderConfigAPIVersion, armada.SQLProviderConfigKind),
	}
	if xr.Namespace == "" {
		return xr, decodeSpec(obj, "XArmada", &xr.Spec)
	}
	var spec nsv1alpha1.ArmadaSpec
	if err := decodeSpec(obj, u.GetKind(), &spec); err != nil {
		return xr, err
	}
	xr.Spec = spec.ArmadaSpec
	if spec.ClusterScope != nil {
		xr.ClusterScope = &spec.ClusterScope.ProviderConfigRef
	}
	return xr, nil
}

// referencedNames are the names of the objects of kind (and apiVersion,
// unless empty) that an XR's resource references name: what Crossplane
// has composed for it, recorded in the XR itself (spec.resourceRefs for a
// legacy XR, spec.crossplane.resourceRefs for a modern one), so they
// survive a missing observation.
func referencedNames(obj map[string]any, apiVersion, kind string) []string {
	var names []string
	for _, path := range [][]string{{"spec", "resourceRefs"}, {"spec", "crossplane", "resourceRefs"}} {
		refs, _, _ := unstructured.NestedSlice(obj, path...)
		for _, r := range refs {
			ref, ok := r.(map[string]any)
			if !ok || ref["kind"] != kind || apiVersion != "" && ref["apiVersion"] != apiVersion {
				continue
			}
			if n, ok := ref["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names
}

// observedNames are the names of the observed composed objects of kind
// (and apiVersion, unless empty), sorted.
func observedNames(observed map[resource.Name]resource.ObservedComposed, apiVersion, kind string) []string {
	var names []string
	for _, o := range observed {
		if o.Resource.GetKind() == kind && (apiVersion == "" || o.Resource.GetAPIVersion() == apiVersion) {
			names = append(names, o.Resource.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// decodeSpec decodes an XR's spec into a typed spec. A field of the wrong
// type is an error naming it.
func decodeSpec(obj map[string]any, kind string, into any) error {
	spec, _, _ := unstructured.NestedFieldNoCopy(obj, "spec")
	b, ok := structenc.AppendJSON(make([]byte, 0, 1024), spec)
	if !ok {
		var err error
		if b, err = json.Marshal(spec); err != nil {
			return errors.Wrap(err, "cannot encode spec")
		}
	}
	if err := json.Unmarshal(b, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errors.Errorf("invalid %s: spec.%s: Invalid value: must be of type %s, not %s", kind, te.Field, te.Type, te.Value)
		}
		return errors.Wrapf(err, "invalid %s: spec: cannot decode", kind)
	}
	return nil
}

// unstructuredOf unwraps observed composed resources.
func unstructuredOf(observed map[resource.Name]resource.ObservedComposed) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(observed))
	for name, o := range observed {
		out[string(name)] = &o.Resource.Unstructured
	}
	return out
}

// setConditions reports the render's conditions on the XR and its claim.
func setConditions(rsp *fnv1.RunFunctionResponse, conds []armada.Condition) {
	for _, c := range conds {
		if c.Status {
			response.ConditionTrue(rsp, c.Type, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
			continue
		}
		response.ConditionFalse(rsp, c.Type, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
	}
}

// statusString is a string of the XR's status, or "".
func statusString(xr map[string]any, fields ...string) string {
	s, _, _ := unstructured.NestedString(xr, append([]string{"status"}, fields...)...)
	return s
}

// observedServices are the backing services as the XR's status reports
// them: the modes the last reconcile composed, the deletion policy their
// stateful resources carry and the mode allowModeChange allowed a switch
// to. They let the function refuse a mode switch, or a switch in the apply
// that changes the policy, even when the old mode's resources are not
// observed.
func observedServices(xr map[string]any) map[string]v1alpha1.BackingServiceStatus {
	services, _, _ := unstructured.NestedMap(xr, "status", "backingServices")
	out := map[string]v1alpha1.BackingServiceStatus{}
	for name, v := range services {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		var st v1alpha1.BackingServiceStatus
		st.Mode, _ = m["mode"].(string)
		st.DeletionPolicy, _ = m["deletionPolicy"].(string)
		st.ModeChangedTo, _ = m["modeChangedTo"].(string)
		out[name] = st
	}
	return out
}

// certTime is the certificate clock's time, zero without one.
func (f *Function) certTime() time.Time {
	if f.certNow == nil {
		return time.Time{}
	}
	return f.certNow()
}
