// Package v1alpha1 holds the XArmada API (claim: ArmadaClaim), served by
// function-armada.
// +kubebuilder:object:generate=true
// +groupName=platform.armadaproject.io
// +versionName=v1alpha1
package v1alpha1
