// Package v1alpha1 holds ArmadaTenancyPolicy, the platform team's settings
// for what each tenant's Armada and team queues may name outside the
// tenant's namespace. function-armada reads it as a required resource; it
// is a plain CRD (cluster/tenancy) the platform applies, never part of a
// tenant's claim.
// +kubebuilder:object:generate=true
// +groupName=platform.armadaproject.io
// +versionName=v1alpha1
package v1alpha1
