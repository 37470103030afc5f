package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Package type metadata.
const (
	Group   = "armada.m.armadaproject.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group and version of this API.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind metadata, derived from the Go types so a rename cannot drift.
var (
	QueueKind             = reflect.TypeFor[Queue]().Name()
	QueueGroupKind        = schema.GroupKind{Group: Group, Kind: QueueKind}
	QueueGroupVersionKind = SchemeGroupVersion.WithKind(QueueKind)

	ProviderConfigKind                      = reflect.TypeFor[ProviderConfig]().Name()
	ProviderConfigGroupKind                 = schema.GroupKind{Group: Group, Kind: ProviderConfigKind}
	ProviderConfigGroupVersionKind          = SchemeGroupVersion.WithKind(ProviderConfigKind)
	ProviderConfigUsageGroupVersionKind     = SchemeGroupVersion.WithKind(reflect.TypeFor[ProviderConfigUsage]().Name())
	ProviderConfigUsageListGroupVersionKind = SchemeGroupVersion.WithKind(reflect.TypeFor[ProviderConfigUsageList]().Name())

	ClusterProviderConfigKind                      = reflect.TypeFor[ClusterProviderConfig]().Name()
	ClusterProviderConfigGroupKind                 = schema.GroupKind{Group: Group, Kind: ClusterProviderConfigKind}
	ClusterProviderConfigGroupVersionKind          = SchemeGroupVersion.WithKind(ClusterProviderConfigKind)
	ClusterProviderConfigUsageGroupVersionKind     = SchemeGroupVersion.WithKind(reflect.TypeFor[ClusterProviderConfigUsage]().Name())
	ClusterProviderConfigUsageListGroupVersionKind = SchemeGroupVersion.WithKind(reflect.TypeFor[ClusterProviderConfigUsageList]().Name())
)

// addKnownTypes registers this API's kinds and the meta types every group
// version serves (options, status, watch events) with s.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&Queue{}, &QueueList{},
		&ProviderConfig{}, &ProviderConfigList{},
		&ClusterProviderConfig{}, &ClusterProviderConfigList{},
		&ProviderConfigUsage{}, &ProviderConfigUsageList{},
		&ClusterProviderConfigUsage{}, &ClusterProviderConfigUsageList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
