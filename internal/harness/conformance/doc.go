// Package conformance is the machinery of the Armada conformance suite
// (test/conformance): it runs Armada's own binaries exactly as the
// workloads of a rendered Armada (a `crossplane composition render`
// output) would run them, and checks what they do. The suite's tests, in
// test/conformance, decide which renders and releases to run and which
// subtests to report; this package does the work of each step:
//
//   - reading a render (LoadRender, ParseRender, Render) and reconstructing
//     every Armada container of its workloads as a process (NewRuns, Run),
//     with its rendered args, environment and mounted files;
//   - starting the example's backing services (StartServices,
//     StartStandIns), its migrations (RunMigration, CheckTables), its
//     Pulsar topic-init Jobs (RunTopicJob, CheckTopics) and its
//     long-running components (StartComponent, CheckComponent), each judged
//     by a check-table row (checks): log markers in order, the rendered
//     readinessProbe, listening ports, scraped metric names, config keys
//     Armada reports unused;
//   - dialing the components as their clients do: TLS with the rendered
//     trust (RootsOf, HTTPSGet, ReportEvents), in-cluster and remote
//     executors leasing from the scheduler (RunExecutor, CheckLeasing).
//
// What is real: Armada's binaries of the release under test (`make
// armada-bins`) with its source tree's built-in configs, private
// PostgreSQL and Redis servers and a real Pulsar broker (package testenv),
// real Kubernetes API servers (package controlplane) standing in for the
// cluster a claim is applied to and for worker clusters, with the
// rendered RBAC applied and ServiceAccount tokens from the TokenRequest
// API, and real TLS: certificates for the rendered names, checked by
// Armada's and Go's own clients.
//
// What is simulated, because it cannot run here: containers are processes
// in a root of their own with the rendered mounts and hosts file (package
// podrun), and cluster DNS is per-process hosts files plus loopback relays;
// no kubelet runs, so the test runs the readinessProbes as the kubelet
// would; the Armada server's queue API the scheduler loads (armadaAPI),
// the OIDC provider (oidcProvider) and, for remote executors, the
// scheduler's executor API behind a CONNECT proxy (executorAPI,
// connectProxy) are stand-ins that check calls against the rendered
// credentials; cert-manager's Certificates are issued by a private CA of
// the test (supplyCertificates); and Secrets an operator, provider or user
// fills (passwords, tokens, CAs) are supplied by the test.
//
// The pure parts (render parsing, check tables and log markers, probe and
// port derivation, wiring and auth checks) have unit tests here that need
// no binaries or services.
package conformance
