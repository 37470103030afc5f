// Package promcrds pins prometheus-operator's API types, from which
// internal/harness/thirdparty generates the ServiceMonitor and PrometheusRule CRDs
// with controller-gen, as prometheus-operator generates its own.
package promcrds

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1" // The pinned types.
)
