//go:build tools

// Package tools pins KWOK v0.8.0, built by build.sh: the fake kubelet that
// gives the job-flow tests Nodes with real allocatable resources and takes
// Armada's job pods through the Stages under internal/harness/controlplane/kwok.
// To refresh go.mod and go.sum, run `go get sigs.k8s.io/kwok/cmd/kwok@v0.8.0`.
package tools

import (
	_ "sigs.k8s.io/kwok/pkg/kwok/cmd"
)
