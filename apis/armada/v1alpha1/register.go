package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
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
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

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

func init() {
	SchemeBuilder.Register(
		&Queue{}, &QueueList{},
		&ProviderConfig{}, &ProviderConfigList{},
		&ClusterProviderConfig{}, &ClusterProviderConfigList{},
		&ProviderConfigUsage{}, &ProviderConfigUsageList{},
		&ClusterProviderConfigUsage{}, &ClusterProviderConfigUsageList{},
	)
}
