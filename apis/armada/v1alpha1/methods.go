package v1alpha1

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// The method sets crossplane-runtime needs. provider-template generates
// these with angryjet; they are written out here because the tool's module
// is not in the checksum database this project builds against. The
// assertions keep them complete.
var (
	_ resource.ModernManaged            = &Queue{}
	_ resource.ProviderConfig           = &ProviderConfig{}
	_ resource.ProviderConfig           = &ClusterProviderConfig{}
	_ resource.TypedProviderConfigUsage = &ProviderConfigUsage{}
	_ resource.TypedProviderConfigUsage = &ClusterProviderConfigUsage{}
	_ resource.ProviderConfigUsageList  = &ProviderConfigUsageList{}
	_ resource.ProviderConfigUsageList  = &ClusterProviderConfigUsageList{}
	_ resource.ManagedList              = &QueueList{}
)

// GetCondition of this Queue.
func (mg *Queue) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return mg.Status.GetCondition(ct)
}

// SetConditions of this Queue.
func (mg *Queue) SetConditions(c ...xpv2.Condition) { mg.Status.SetConditions(c...) }

// GetManagementPolicies of this Queue.
func (mg *Queue) GetManagementPolicies() xpv2.ManagementPolicies {
	return mg.Spec.ManagementPolicies
}

// SetManagementPolicies of this Queue.
func (mg *Queue) SetManagementPolicies(r xpv2.ManagementPolicies) {
	mg.Spec.ManagementPolicies = r
}

// GetProviderConfigReference of this Queue.
func (mg *Queue) GetProviderConfigReference() *xpv2.ProviderConfigReference {
	return mg.Spec.ProviderConfigReference
}

// SetProviderConfigReference of this Queue.
func (mg *Queue) SetProviderConfigReference(r *xpv2.ProviderConfigReference) {
	mg.Spec.ProviderConfigReference = r
}

// GetWriteConnectionSecretToReference of this Queue.
func (mg *Queue) GetWriteConnectionSecretToReference() *xpv2.LocalSecretReference {
	return mg.Spec.WriteConnectionSecretToReference
}

// SetWriteConnectionSecretToReference of this Queue.
func (mg *Queue) SetWriteConnectionSecretToReference(r *xpv2.LocalSecretReference) {
	mg.Spec.WriteConnectionSecretToReference = r
}

// GetCondition of this ProviderConfig.
func (p *ProviderConfig) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return p.Status.GetCondition(ct)
}

// SetConditions of this ProviderConfig.
func (p *ProviderConfig) SetConditions(c ...xpv2.Condition) { p.Status.SetConditions(c...) }

// GetUsers of this ProviderConfig.
func (p *ProviderConfig) GetUsers() int64 { return p.Status.Users }

// SetUsers of this ProviderConfig.
func (p *ProviderConfig) SetUsers(i int64) { p.Status.Users = i }

// GetCondition of this ClusterProviderConfig.
func (p *ClusterProviderConfig) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return p.Status.GetCondition(ct)
}

// SetConditions of this ClusterProviderConfig.
func (p *ClusterProviderConfig) SetConditions(c ...xpv2.Condition) { p.Status.SetConditions(c...) }

// GetUsers of this ClusterProviderConfig.
func (p *ClusterProviderConfig) GetUsers() int64 { return p.Status.Users }

// SetUsers of this ClusterProviderConfig.
func (p *ClusterProviderConfig) SetUsers(i int64) { p.Status.Users = i }

// GetProviderConfigReference of this ProviderConfigUsage.
func (p *ProviderConfigUsage) GetProviderConfigReference() xpv2.ProviderConfigReference {
	return p.ProviderConfigReference
}

// SetProviderConfigReference of this ProviderConfigUsage.
func (p *ProviderConfigUsage) SetProviderConfigReference(r xpv2.ProviderConfigReference) {
	p.ProviderConfigReference = r
}

// GetResourceReference of this ProviderConfigUsage.
func (p *ProviderConfigUsage) GetResourceReference() xpv2.TypedReference {
	return p.ResourceReference
}

// SetResourceReference of this ProviderConfigUsage.
func (p *ProviderConfigUsage) SetResourceReference(r xpv2.TypedReference) {
	p.ResourceReference = r
}

// GetProviderConfigReference of this ClusterProviderConfigUsage.
func (p *ClusterProviderConfigUsage) GetProviderConfigReference() xpv2.ProviderConfigReference {
	return p.ProviderConfigReference
}

// SetProviderConfigReference of this ClusterProviderConfigUsage.
func (p *ClusterProviderConfigUsage) SetProviderConfigReference(r xpv2.ProviderConfigReference) {
	p.ProviderConfigReference = r
}

// GetResourceReference of this ClusterProviderConfigUsage.
func (p *ClusterProviderConfigUsage) GetResourceReference() xpv2.TypedReference {
	return p.ResourceReference
}

// SetResourceReference of this ClusterProviderConfigUsage.
func (p *ClusterProviderConfigUsage) SetResourceReference(r xpv2.TypedReference) {
	p.ResourceReference = r
}

// GetItems of this ProviderConfigUsageList.
func (p *ProviderConfigUsageList) GetItems() []resource.ProviderConfigUsage {
	items := make([]resource.ProviderConfigUsage, len(p.Items))
	for i := range p.Items {
		items[i] = &p.Items[i]
	}
	return items
}

// GetItems of this ClusterProviderConfigUsageList.
func (p *ClusterProviderConfigUsageList) GetItems() []resource.ProviderConfigUsage {
	items := make([]resource.ProviderConfigUsage, len(p.Items))
	for i := range p.Items {
		items[i] = &p.Items[i]
	}
	return items
}

// GetItems of this QueueList.
func (l *QueueList) GetItems() []resource.Managed {
	items := make([]resource.Managed, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}
