// Package tenancy applies the platform's ArmadaTenancyPolicy: what one
// tenant's Armada or team queue may name outside the tenant's namespace
// (provider configs, worker clusters, image registries, PriorityClass
// values, Pulsar Helm values, auth in config overrides, the Armadas a team
// queue attaches to). The policy is the platform's object, never part of
// the claim; function-armada reads it as a required resource.
package tenancy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	tenancyv1 "github.com/armadaproject/armada-crossplane/apis/tenancy/v1alpha1"
)

// Built-in defaults, for a policy (or no policy) that leaves them unset.
const (
	// DefaultMaxPriority is the highest PriorityClass value a tenant may
	// define unless its policy sets spec.maxPriority: far below
	// Kubernetes' system classes (2000000000 and up) and room for
	// Armada's defaults (1000 and 900).
	DefaultMaxPriority = 100000
	// defaultProviderConfig is the ClusterProviderConfig name an Armada's
	// in-cluster backing services use unless the claim names another.
	defaultProviderConfig = "default"
)

// Kinds of provider-kubernetes config a reference names.
const (
	kindClusterProviderConfig = "ClusterProviderConfig"
)

// Policy is the tenancy policy that governs one namespace.
type Policy struct {
	// Name of the ArmadaTenancyPolicy it came from; empty for the
	// built-in default.
	Name string
	// Spec is the policy's spec.
	Spec tenancyv1.TenancyPolicySpec
}

// Select picks the policy for namespace ns among the ArmadaTenancyPolicies
// Crossplane fetched: the one named ns, else the one named "default", else
// the built-in default (an empty spec).
func Select(ns string, policies []*unstructured.Unstructured) (Policy, error) {
	var own, dflt *unstructured.Unstructured
	for _, u := range policies {
		if u == nil || u.GetKind() != tenancyv1.Kind {
			continue
		}
		switch u.GetName() {
		case ns:
			own = u
		case tenancyv1.DefaultPolicyName:
			dflt = u
		}
	}
	u := own
	if u == nil {
		u = dflt
	}
	if u == nil {
		return Policy{}, nil
	}
	var p tenancyv1.ArmadaTenancyPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return Policy{}, errors.Wrapf(err, "cannot decode ArmadaTenancyPolicy %q", u.GetName())
	}
	return Policy{Name: p.Name, Spec: p.Spec}, nil
}

// source names the policy in refusals.
func (p Policy) source() string {
	if p.Name == "" {
		return "the built-in tenancy policy (there is no ArmadaTenancyPolicy named after the namespace or \"default\")"
	}
	return fmt.Sprintf("ArmadaTenancyPolicy %q", p.Name)
}

// rule is a refusal's reason: which of the policy's settings refuses it.
func (p Policy) rule(setting, why string) string {
	return fmt.Sprintf("%s: not allowed by %s spec.%s", why, p.source(), setting)
}

// allowArmada reports whether the namespace may hold an Armada.
func (p Policy) allowArmada() bool { return ptr.Deref(p.Spec.AllowArmada, true) }

// maxPriority is the PriorityClass ceiling.
func (p Policy) maxPriority() int32 { return ptr.Deref(p.Spec.MaxPriority, DefaultMaxPriority) }

// kubernetesConfigs are the ClusterProviderConfigs
// spec.providerConfigs.kubernetes may name.
func (p Policy) kubernetesConfigs() []string {
	if len(p.Spec.ProviderConfigs.Kubernetes) == 0 {
		return []string{defaultProviderConfig}
	}
	return p.Spec.ProviderConfigs.Kubernetes
}

// helmConfigs are the ClusterProviderConfigs spec.providerConfigs.helm may
// name.
func (p Policy) helmConfigs() []string {
	if len(p.Spec.ProviderConfigs.Helm) == 0 {
		return []string{defaultProviderConfig}
	}
	return p.Spec.ProviderConfigs.Helm
}

// allowsRef reports whether a provider-kubernetes config reference is in
// an allowlist, kinds defaulted.
func allowsRef(list []tenancyv1.ConfigRef, kind, name string) bool {
	kind = kindOf(kind)
	for _, r := range list {
		if kindOf(r.Kind) == kind && r.Name == name {
			return true
		}
	}
	return false
}

// kindOf defaults a config reference's kind.
func kindOf(kind string) string {
	if kind == "" {
		return kindClusterProviderConfig
	}
	return kind
}
