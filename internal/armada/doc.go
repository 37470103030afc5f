// Package armada renders a complete Armada installation from an XArmada
// spec. Everything here is pure: spec and observations in, typed Kubernetes
// objects out, no I/O.
//
// The flow is New (validate.go: validate, then default with defaults.go),
// Observe (observe.go: what exists), then Render (render.go), which runs
// the steps below in order and reports conditions (conditions.go). Each
// concern is one file:
//
//   - The install and its tables: install.go (names, endpoints, images),
//     components.go (the component table), versions.go (supported
//     releases, version order, downgrades), dependencies.go (pinned
//     third-party releases), configkeys.go (Armada's config keys per
//     release).
//   - Where objects go: placement.go (this cluster, a worker cluster or
//     the cluster-scope config), remote.go (executors in worker
//     clusters), scope.go (a namespaced XR), adopt.go (objects that may
//     exist in another cluster).
//   - Secrets: credentials.go (generated passwords), passwordrotation.go,
//     identityrotation.go and carotation.go (spec.rotation), tls.go,
//     tlsclock.go and tlsproxy.go (generated TLS), certmanager.go (TLS
//     from cert-manager), oidc.go (the OIDC provider's CA).
//   - Backing services: backing.go (gates and status), postgres.go,
//     redis.go, redis_sentinel.go, pulsar.go, pulsarauth.go; then
//     migrations.go, pruning.go, backup.go and drill.go (the restore
//     drill) for the databases.
//   - Components: config.go, merge.go and owned.go (each component's
//     config, the user's overrides and the keys the composition owns),
//     workload.go (pods, Deployments, StatefulSets, Services),
//     actions.go (restart, back up now, pause).
//   - Cluster objects: rbac.go, priorityclasses.go, ingress.go,
//     jobns.go (job namespaces), admission.go (the executor's admission
//     policy), netpol.go (NetworkPolicies).
//   - Tenancy and safety: tenancy.go (what a claim may reach),
//     guards.go (never drop a stateful resource that would delete data).
//   - Queues and monitoring: queues.go (provider-armada's Queues),
//     monitoring.go, alerts.go, dashboards.go.
package armada
