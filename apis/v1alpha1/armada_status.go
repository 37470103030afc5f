package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArmadaStatus is the observed state of an Armada installation.
type ArmadaStatus struct {
	// Version reports the desired Armada version and the one whose
	// components are running.
	// +optional
	Version VersionStatus `json:"version,omitempty"`
	// Components reports each component's readiness, keyed by component
	// name (executors as executor-<clusterId>).
	// +optional
	Components map[string]ComponentStatus `json:"components,omitempty"`
	// Endpoints where Armada can be reached.
	// +optional
	Endpoints Endpoints `json:"endpoints,omitempty"`
	// BackingServices reports PostgreSQL, Redis and Pulsar, keyed by
	// postgres, redis and pulsar.
	// +optional
	BackingServices map[string]BackingServiceStatus `json:"backingServices,omitempty"`
	// CredentialsSecret names the Secret, in spec.namespace, holding the
	// generated basic-auth passwords.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// Scheduling reports the priority class names this Armada uses: jobs'
	// priorityClassName and team queue quotas name them.
	// +optional
	Scheduling SchedulingStatus `json:"scheduling,omitempty"`
	// Executors reports each executor, with the cluster it runs in.
	// +optional
	Executors []ExecutorStatus `json:"executors,omitempty"`
	// Monitoring reports whether monitoring is composed and which labels
	// select it.
	// +optional
	Monitoring MonitoringStatus `json:"monitoring,omitempty"`
	// Backup reports the in-cluster PostgreSQL's backups, when
	// spec.postgres.backup is set.
	// +optional
	Backup *PostgresBackupStatus `json:"backup,omitempty"`
	// TLS reports when the generated certificates expire, when spec.tls
	// is on without spec.tls.issuerRef.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`
	// Actions reports spec.actions.
	// +optional
	Actions *ActionsStatus `json:"actions,omitempty"`
}

// TLSStatus reports the expiry of the generated CA and certificates. The
// function renews a certificate once two thirds of its life have passed,
// so notAfter in the past means renewal is not happening.
type TLSStatus struct {
	// NotAfter is when the first generated serving certificate expires.
	NotAfter metav1.Time `json:"notAfter"`
	// CANotAfter is when the generated CA expires.
	CANotAfter metav1.Time `json:"caNotAfter"`
}

// ExecutorStatus is one executor's state.
type ExecutorStatus struct {
	// ClusterID of the executor.
	ClusterID string `json:"clusterId"`
	// Cluster is the provider-kubernetes config of its worker cluster, as
	// Kind/name, or "local".
	Cluster string `json:"cluster"`
	// Ready is true when the executor is available in its cluster.
	Ready bool `json:"ready"`
	// Reason says what it waits for when not ready.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// SchedulingStatus reports an Armada's priority classes.
type SchedulingStatus struct {
	// PriorityClasses are the names of the PriorityClasses Armada schedules
	// with, in spec order.
	// +optional
	PriorityClasses []string `json:"priorityClasses,omitempty"`
	// DefaultPriorityClass is what jobs that name none get.
	// +optional
	DefaultPriorityClass string `json:"defaultPriorityClass,omitempty"`
}

// VersionStatus reports Armada versions.
type VersionStatus struct {
	// Desired is spec.version.
	// +optional
	Desired string `json:"desired,omitempty"`
	// Running is the version every component runs, once they all do.
	// +optional
	Running string `json:"running,omitempty"`
}

// ComponentStatus reports one component.
type ComponentStatus struct {
	// Ready is true when the component's workload is available.
	Ready bool `json:"ready"`
	// Version the component runs or is rolling out.
	// +optional
	Version string `json:"version,omitempty"`
	// Reason explains why the component is not ready.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Endpoints where Armada can be reached.
type Endpoints struct {
	// GRPC is the server's gRPC address, for armadactl.
	// +optional
	GRPC string `json:"grpc,omitempty"`
	// REST is the server's REST base URL.
	// +optional
	REST string `json:"rest,omitempty"`
	// Lookout is the Lookout UI URL.
	// +optional
	Lookout string `json:"lookout,omitempty"`
}
