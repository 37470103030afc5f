// Package conformance runs Armada's own binaries exactly as the composed
// workloads in the render golden files would run them, against private
// PostgreSQL and Redis servers, to prove that the rendered configuration is
// accepted by Armada: migrations apply, every component gets past config
// loading and validation to its network dependencies, and no rendered config
// key or environment variable is silently ignored.
//
// This directory holds only the tests (conformance_test.go and its
// siblings); the machinery they drive (reading renders, starting services,
// processes and stand-ins, the check tables) is package
// internal/harness/conformance, which says what is real and what is simulated. Run
// them with `go test ./test/conformance/...` after `make armada-bins`.
package conformance
