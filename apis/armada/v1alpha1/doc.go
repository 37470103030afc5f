// Package v1alpha1 holds provider-armada's API: the Queue managed resource
// (an Armada queue) and the ProviderConfig and ClusterProviderConfig kinds
// that say how to reach an Armada server. The kinds are Crossplane v2
// namespaced managed resources, hence the ".m." in the group.
// +kubebuilder:object:generate=true
// +groupName=armada.m.armadaproject.io
// +versionName=v1alpha1
package v1alpha1
