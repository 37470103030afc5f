// Package v1alpha1 holds the Crossplane v2-native namespaced APIs, Armada
// and ArmadaQueue, served by function-armada beside the XArmada API (see
// apis/v1alpha1). Their specs are that API's, less spec.namespace (a
// namespaced XR composes into its own namespace) and plus spec.clusterScope
// (how its cluster-scoped objects are composed).
// +kubebuilder:object:generate=true
// +groupName=platform.armadaproject.io
// +versionName=v1alpha1
package v1alpha1
