# Armada on Crossplane. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Tool binaries are built once from the pinned modules under tools/ and
# cached outside the repository, keyed by version.
CACHE_DIR        ?= $(HOME)/.cache/armada-crossplane
BIN_DIR          := $(CACHE_DIR)/bin
# modver DIR,MODULE: the version tools/DIR/go.mod pins of MODULE, so that
# each tool's version is written once, in its module (the build scripts
# read it with progress.sh's `pin`; the Go constants that name a version
# are checked against it by TestPinsMatchToolModules).
modver = $(shell awk '($$1 == "$(2)" && $$2 ~ /^v/) { print $$2; exit } ($$1 == "require" && $$2 == "$(2)") { print $$3; exit }' tools/$(1)/go.mod)
CROSSPLANE_CLI   := $(BIN_DIR)/crossplane-cli-$(call modver,crossplane,github.com/crossplane/cli/v2)
CROSSPLANE_CORE  := $(BIN_DIR)/crossplane-core-$(call modver,crossplane,github.com/crossplane/crossplane/v2)
GOLANGCI_LINT    := $(BIN_DIR)/golangci-lint-$(call modver,lint,github.com/golangci/golangci-lint/v2)
CONTROLLER_GEN   := $(BIN_DIR)/controller-gen-$(call modver,gen,sigs.k8s.io/controller-tools)
# Armada's binaries live in $(ARMADA_BIN_ROOT)/armada-vX.Y.Z, one directory
# per release of the function's version table (internal/armada/versions.go),
# which ARMADA_VERSIONS reads; it is evaluated only where used.
ARMADA_BIN_ROOT  := $(BIN_DIR)

# Every Go build and test here compiles with the configuration the runtime
# images need (internal/build/image): no cgo, -trimpath, and no DWARF from
# the compiler (every binary is linked without it: -ldflags -w or -s -w;
# about a tenth less compile CPU). Go's build cache keys a compiled package
# by all three, so with one configuration a package the tools, the tests,
# the control planes' function-armada and the images share compiles once;
# with two, the function's whole dependency tree compiled again for its
# amd64 image in every cold run. runc and ghostunnel need cgo and say so in
# their build scripts. GO_ENV repeats the two for $(shell): make 4.3 does
# not pass exported variables to it.
GO_BUILD_FLAGS := -trimpath -gcflags=all=-dwarf=false
export CGO_ENABLED ?= 0
export GOFLAGS := $(strip $(GO_BUILD_FLAGS) $(filter-out $(GO_BUILD_FLAGS),$(GOFLAGS)))
GO_ENV := CGO_ENABLED=$(CGO_ENABLED) GOFLAGS='$(GOFLAGS)'
ARMADA_VERSIONS   = $(shell $(GO_ENV) go run ./internal/build/cmd/armadaversions)
# Apache Pulsar's broker release, from the same table
# (internal/armada/versions.go); evaluated only where used.
PULSAR_VERSION    = $(shell $(GO_ENV) go run ./internal/build/cmd/armadaversions -pulsar)
export CROSSPLANE_CLI CROSSPLANE_CORE ARMADA_BIN_ROOT

# Per checkout: worktrees generating at the same time must not share it.
GEN_DIR := $(CURDIR)/_output/gen
GEN_BIN := $(CURDIR)/_output/bin

# prometheus-operator's CRDs are generated from its pinned API types
# (tools/promcrds, internal/harness/thirdparty) and committed.
PROM_OPERATOR_VERSION := $(call modver,promcrds,github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring)
PROM_CRDS := internal/harness/thirdparty/crds/prometheus-operator-$(PROM_OPERATOR_VERSION)

.PHONY: help
help: ## Show this help.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-14s %s\n", $$1, $$2}'

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, the XRD, the Composition, provider-armada's CRDs from apis/, prometheus-operator's CRDs, Armada's config keys, the fixed RBAC in cluster/rbac and docs/reference/api.md.
	@rm -rf $(GEN_DIR) && mkdir -p $(GEN_DIR)
	@# The generators in one go install: their packages compile once, links
	@# overlap, and a binary already up to date is not linked again.
	GOBIN=$(GEN_BIN) tools/progress.sh progress generators go install ./internal/build/cmd/xrdgen ./internal/build/cmd/armadakeys ./internal/build/cmd/rbacgen
	tools/progress.sh progress controller-gen $(CONTROLLER_GEN) object crd:crdVersions=v1 paths=./apis/... output:crd:artifacts:config=$(GEN_DIR)
	$(GEN_BIN)/xrdgen -crds $(GEN_DIR) -out package/xarmada
	@rm -rf package/provider/crds && mkdir -p package/provider/crds
	cp $(GEN_DIR)/armada.m.armadaproject.io_*.yaml package/provider/crds/
	@mkdir -p cluster/tenancy
	cp $(GEN_DIR)/platform.armadaproject.io_armadatenancypolicies.yaml cluster/tenancy/
	@# The same controller-gen, in the module that pins prometheus-operator's types.
	cd tools/promcrds && $(CONTROLLER_GEN) crd:crdVersions=v1,maxDescLen=0 \
		paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 output:crd:artifacts:config=$(GEN_DIR)/prometheus-operator
	@rm -rf internal/harness/thirdparty/crds && mkdir -p $(PROM_CRDS)
	cp $(GEN_DIR)/prometheus-operator/monitoring.coreos.com_servicemonitors.yaml \
		$(GEN_DIR)/prometheus-operator/monitoring.coreos.com_prometheusrules.yaml $(PROM_CRDS)/
	tools/progress.sh progress armadakeys $(GEN_BIN)/armadakeys -out internal/armada/configkeys
	$(GEN_BIN)/rbacgen -out cluster/rbac/armada-crossplane-roles.yaml
	go run ./internal/build/cmd/apidoc -out docs/reference/api.md

$(CONTROLLER_GEN): FORCE
	tools/build-tool.sh tools/gen $@ sigs.k8s.io/controller-tools/cmd/controller-gen

# FORCE makes a tool binary's recipe run even if the file is there: its
# build script reuses it only if it was built from its wrapper module's
# go.sum as it is now (a raised pin builds it again), and is quick if so.
FORCE:

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	tools/progress.sh progress golangci-lint $(GOLANGCI_LINT) run ./...

# TEST_BINS are the tool binaries the tests run; `make bins` builds them
# alone (.ci/run does, to time the builds apart from the tests): the Go
# builds one after the other, which keep both cores busy, and beside them
# the others, Pulsar's jars and Lookout's UI, which wait on the network
# much of the time (as run-bins does).
TEST_BINS_GO = tools armada-bins cluster-bins provider-sql versitygw ghostunnel oidc node-bins
TEST_BINS_OTHER = pulsar lookoutui
TEST_BINS = $(TEST_BINS_GO) $(TEST_BINS_OTHER)

# LONG_TEST_PKGS are the longest suites. go test starts packages in the
# order it is given them, as many at a time as cores (go test's -p): the
# long ones start first and the short packages fill in beside them,
# instead of the long ones starting last, side by side, after the short
# ones (the order of ./...). The real node's package goes first, beside
# e2e, and test/jobflow after it: both start real nodes, which run one at
# a time (internal/harness/netlock), so the two overlapping would leave
# one waiting for the other. A third package at a time (-p 3) made a cold
# run slower on two cores. Measured: docs/dev/first-run.md.
LONG_TEST_PKGS = ./internal/harness/node ./test/e2e ./test/jobflow ./test/conformance

# -vet=off: go test's vet costs about a CPU-minute on a cold run
# (docs/dev/first-run.md), and make lint runs all of go vet's analyzers
# on the same files, tests included (.golangci.yml: govet enable-all,
# tests: true). -ldflags=-w: no DWARF in the test binaries, which nothing
# here debugs; linking the e2e suite's took 3.6 CPU-seconds instead of 6
# to 10 (stack traces need none of it).
.PHONY: test
test: system-deps $(TEST_BINS) ## Run every test: unit, render, Armada conformance, control plane and e2e (go vet's checks are make lint's).
	go test -count=1 -vet=off -ldflags=-w -timeout 50m $(LONG_TEST_PKGS) ./...

.PHONY: test-lanes
test-lanes: system-deps $(TEST_BINS) ## Run every test as lanes side by side, reporting each lane's wall and CPU time (a measuring tool: tools/test-lanes.sh; LANES=e2e-a runs one lane, TESTFLAGS=-v adds flags).
	tools/test-lanes.sh

.PHONY: bins
bins: ## Build every tool binary the tests run (cached).
	@$(MAKE) --no-print-directory -j2 bins-go bins-other
.PHONY: bins-go bins-other
bins-go:
	@$(SERIAL_MAKE) $(TEST_BINS_GO)
bins-other:
	@$(SERIAL_MAKE) $(TEST_BINS_OTHER)
# SERIAL_MAKE is a sub-make that builds its targets one at a time inside a
# parallel make (make -j1 there would warn that it leaves the jobserver).
SERIAL_MAKE = MAKEFLAGS='$(filter-out -j% --jobserver-auth=%,$(MAKEFLAGS))' $(MAKE) --no-print-directory

# TIMINGS_FILE is where .ci/run, and the builds it runs, record each step's
# wall time (tools/progress.sh).
TIMINGS_FILE ?= $(CURDIR)/_output/timings.tsv
.PHONY: timings
timings: ## Print each step's wall time from the last .ci/run, the builds inside a step indented under it.
	@tools/timings.sh $(TIMINGS_FILE)

.PHONY: e2e
e2e: system-deps tools cluster-bins provider-sql ## Run the end-to-end suite against a local control plane (provider-sql against a private PostgreSQL).
	go test -count=1 -timeout 20m -v ./test/e2e/...

# UNIT_PKGS are the packages whose tests start no server and need no tool
# binary: not internal/provider (a kube-apiserver), internal/harness/testenv (etcd,
# kube-apiserver, PostgreSQL and Redis), internal/harness/node (a control plane
# and a real node: containerd, runc, CNI, kubelet), internal/build/docscheck
# (the Crossplane CLI and Graphviz; make docs-check runs it) nor
# internal/build/cmd/render (the Crossplane CLI and core).
UNIT_PKGS = $(shell go list ./internal/... ./apis/... ./test/layout | grep -v -e '/internal/provider$$' -e '/internal/harness/testenv$$' -e '/internal/harness/node$$' -e '/internal/build/docscheck$$' -e '/internal/build/cmd/render$$')
.PHONY: unit
unit: ## Run only the tests that need no tool binary and start no server (no etcd, kube-apiserver, PostgreSQL, Redis or Armada).
	go test -count=1 $(UNIT_PKGS)

# BENCH_COUNT runs of each benchmark; medians and ratios come from all of
# them. RunFunction and its codec floor run in BENCH_COUNT rounds, each
# running both one after the other, so that a change in the machine's load
# (other work on a shared machine) weighs on both alike; the ratio is the
# median of the rounds' ratios.
BENCH_COUNT ?= 5
.PHONY: bench
bench: ## Benchmark RunFunction against its codec floor (ratios printed, in elapsed and in CPU time: BenchmarkFloorRatio), its scaling with local and remote executors and queues, and the TLS memo's memory per Armada (BenchmarkServedMemory, the served process's memory, runs apart: see docs/dev/performance.md).
	{ for i in $$(seq $(BENCH_COUNT)); do \
		go test -run '^$$' -bench 'BenchmarkRunFunction(Converged|Fresh|ChangedSpec)?$$|BenchmarkCodecFloor' -benchmem -count 1 ./internal/function/ || exit 1; \
	done; \
	go test -run '^$$' -bench 'BenchmarkFloorRatio' -benchtime 1x -count $(BENCH_COUNT) ./internal/function/ || exit 1; \
	go test -run '^$$' -bench 'BenchmarkRunFunction(Executors|RemoteExecutors|Queues)' -benchmem -count $(BENCH_COUNT) ./internal/function/; \
	go test -run '^$$' -bench 'BenchmarkMemoFootprint' -benchtime 3x -benchmem -count 1 ./internal/function/; } | go run ./internal/build/cmd/benchratio

# BENCH_JOBS picks BenchmarkJobFlow's rounds: 100, 1000 or both.
BENCH_JOBS ?= 100|1000
.PHONY: bench-jobflow
bench-jobflow: crossplane-core cluster-bins run-bins ## Benchmark jobs through a composed Armada on 10 KWOK Nodes (BENCH_JOBS one-second jobs): apply → first Succeeded, submit → Succeeded p50/p95, jobs per minute, each process's memory; then the same on Armada's own localdev configuration, for the ratio. Not part of make test.
	go test -run '^$$' -bench 'BenchmarkJobFlow/jobs=($(BENCH_JOBS))$$' -benchtime 1x -timeout 90m -v ./test/jobflow/

.PHONY: bench-run
bench-run: run-first run-bins node-bins ## Benchmark make run on KWOK and on the real node side by side: claim Ready once its pods can run, demo job submit → Succeeded, and the ratios (node over KWOK). Needs root; not part of make test.
	go test -run '^$$' -bench 'BenchmarkMakeRun$$' -benchtime 1x -timeout 60m -v ./test/jobflow/

# EXAMPLE is the file make render renders; REQUIRED the files of resources
# the function may require (comma-separated): the platform's
# ArmadaTenancyPolicies and, for a team queue, the file that holds its
# Armada (e.g. REQUIRED=examples/tenancy-policy.yaml,examples/production.yaml
# EXAMPLE=examples/team-queue.yaml).
EXAMPLE  ?= examples/minimal.yaml
REQUIRED ?= examples/tenancy-policy.yaml
.PHONY: render
render: tools ## Render EXAMPLE's claims through the real function and Crossplane (no cluster) under REQUIRED's tenancy policies (default: examples/minimal.yaml, examples/tenancy-policy.yaml).
	go run ./internal/build/cmd/render $(if $(REQUIRED),-required-resources '$(REQUIRED)') '$(EXAMPLE)'

# RUN_ARGS: -example FILE, -kubeconfig PATH (use that cluster instead of a
# local control plane), -simulate-healthy (report Jobs complete and
# workloads available, as a kubelet would, to show the whole rollout,
# instead of the demo job), -demo=false (stop after the composed tree),
# -exit-after-demo. The demo's binaries (run-bins: the job flow's
# kube-scheduler and KWOK, Pulsar, Armada's) are built by the command once
# it has shown the composed tree, which needs none of them, so that the
# tree comes sooner.
RUN_ARGS ?=
# RUN_NODE=1 runs the composed pods and the demo job as containers on a
# real node (run -node: containerd, runc, the CNI bridge, a kubelet,
# kube-proxy, CoreDNS, kube-router enforcing NetworkPolicies), which needs
# root; RUN_NODE=0 runs Armada's binaries as processes and the job on KWOK
# Nodes. The default is the real node as root, KWOK otherwise.
RUN_NODE ?= $(if $(filter 0,$(shell id -u)),1,0)
RUN_FLAGS = $(if $(filter 1,$(RUN_NODE)),-node -bins-cmd '$(MAKE) --no-print-directory run-bins RUN_NODE_BINS=1',-bins-cmd '$(MAKE) --no-print-directory run-bins')
.PHONY: run
run: run-first ## The main job: local control plane, apply the default claim, show what it composed, then run it for real (on a real node as root, else KWOK: RUN_NODE) and run one demo job through it.
	$(GEN_BIN)/run $(RUN_FLAGS) $(RUN_ARGS)

.PHONY: run-node
run-node: ## make run on a real node (RUN_NODE=1): every composed pod and the demo job as containers (containerd, kubelet, CNI, kube-proxy, CoreDNS, NetworkPolicies enforced; needs root).
	@$(MAKE) --no-print-directory run RUN_NODE=1

.PHONY: run-kwok
run-kwok: ## make run on KWOK (RUN_NODE=0): Armada's binaries as processes, the demo job's pod on a KWOK Node (no root needed).
	@$(MAKE) --no-print-directory run RUN_NODE=0

# run-first builds what make run needs up to the composed tree, one build
# after the other: etcd (it also compiles the standard library), then
# Kubernetes (kube-apiserver, kube-controller-manager), the longest, then
# Crossplane core, the run command and provider-kubernetes, which require
# the Kubernetes libraries, gRPC, protobuf and the rest at Kubernetes'
# versions (TestToolModulesShareVersions), so the build cache already holds
# nearly all they compile. Two builds side by side would each compile what
# they share. The modules of all of them download in the background
# meanwhile (log: _output/run-download.log). Cold times:
# docs/dev/first-run.md.
.PHONY: run-first run-first-downloads run-first-builds
run-first:
	@$(MAKE) --no-print-directory -j2 run-first-downloads run-first-builds
run-first-downloads:
	@mkdir -p _output
	@tools/download.sh tools/crossplane tools/kubernetes tools/provider-kubernetes . >_output/run-download.log 2>&1 || \
		echo "background module downloads failed (the builds fetch what they need themselves): see _output/run-download.log"
run-first-builds:
	tools/etcd/build.sh
	tools/kubernetes/build.sh kube-apiserver kube-controller-manager
	tools/build-crossplane.sh "$(BIN_DIR)" core
	@mkdir -p $(GEN_BIN)
	tools/progress.sh gobuild "make run's command" -o $(GEN_BIN)/run ./internal/build/cmd/run
	tools/provider-kubernetes/build.sh

# ARMADA_DEFAULT_VERSION is the release a claim without spec.version runs;
# evaluated only where used.
ARMADA_DEFAULT_VERSION = $(shell $(GO_ENV) go run ./internal/build/cmd/armadaversions -default)
.PHONY: run-bins run-bins-go run-bins-other
run-bins: system-deps ## Build what make run's demo job runs (cached): kube-scheduler and KWOK, Pulsar, Armada's binaries, armadactl and Lookout's UI at the default release, ghostunnel (Lookout's and binoculars' TLS sidecar) and the OpenID Provider people sign in to Lookout through; RUN_NODE_BINS=1 adds node-bins.
	@$(MAKE) --no-print-directory -j2 run-bins-other run-bins-go
# run-bins-other are the builds that are not Go compiles: Pulsar's jars
# from Maven Central and Lookout's UI (npm downloads, then a JavaScript
# build mostly on one core). They wait on the network much of the time
# (in a cold make run, 25 to 56% of both cores sat idle while Lookout's
# UI built alone), so run-bins runs them beside the Go builds, one after
# the other, which keep both cores busy. node-bins follows the Go builds
# when make run needs the real node (RUN_NODE_BINS=1).
run-bins-other:
	tools/pulsar/build.sh $(PULSAR_VERSION)
	ARMADA_BIN_ROOT=$(ARMADA_BIN_ROOT) tools/lookoutui/build.sh $(ARMADA_DEFAULT_VERSION)
run-bins-go:
	tools/kubernetes/build.sh kube-scheduler
	tools/kwok/build.sh
	tools/ghostunnel/build.sh
	tools/oidc/build.sh
	ARMADA_BIN_ROOT=$(ARMADA_BIN_ROOT) tools/armada/build.sh $(ARMADA_DEFAULT_VERSION)
	$(if $(filter 1,$(RUN_NODE_BINS)),@$(MAKE) --no-print-directory node-bins)

# XPKG_REGISTRY is where the packages are published; XPKG_ARGS adds flags to
# internal/build/cmd/xpkg (e.g. -push, -version v1.2.3, -arch amd64). The version
# is derived from `git describe` (see internal/build/xpkg.SemVer). provider-armada
# is built as soon as ./cmd/provider and package/provider/crossplane.yaml
# exist. SOURCE_DATE_EPOCH, if set, becomes the images' creation time.
XPKG_REGISTRY ?= ghcr.io/armadaproject
XPKG_OUT      ?= _output/xpkg
XPKG_ARGS     ?=
.PHONY: xpkg
xpkg: $(CROSSPLANE_CLI) ## Build the Function, Configuration (and Provider) packages for amd64 and arm64 into _output/xpkg.
	go run ./internal/build/cmd/xpkg -cli $(CROSSPLANE_CLI) -registry $(XPKG_REGISTRY) -out $(XPKG_OUT) $(XPKG_ARGS)

.PHONY: install-env
install-env: $(CROSSPLANE_CLI) $(CROSSPLANE_CORE) cluster-bins ## For docs/guides/install.md: a local OCI registry and control plane with nothing installed.
	go run ./internal/build/cmd/installenv

.PHONY: reviewable
reviewable: commits generate lint test ## Commit subjects, generate, lint and test: what a change needs before review.

.PHONY: commits
commits: ## Fail if a commit subject is over 72 characters: on a branch, the commits since its merge base with main; on main, those since the rule (internal/build/commits).
	go run ./internal/build/cmd/commits

.PHONY: check-diff
GENERATED := apis package internal/harness/thirdparty/crds internal/armada/configkeys cluster/rbac cluster/tenancy docs/reference
check-diff: generate ## Fail if generated files are not committed and current.
	@git diff --exit-code -- $(GENERATED) || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "generated files are not committed"; exit 1; }

# The diagrams' sources are Graphviz files beside the SVGs they render to;
# dot's output is deterministic for one Graphviz version (Debian's).
DIAGRAMS := $(wildcard docs/diagrams/*.dot)
.PHONY: docs-diagrams
docs-diagrams: system-deps ## Render docs/diagrams/*.dot to SVG with Graphviz.
	@for f in $(DIAGRAMS); do dot -Tsvg "$$f" -o "$${f%.dot}.svg"; echo "$${f%.dot}.svg"; done

# The Lookout screenshots in docs/guides/getting-started.md are taken by
# test/jobflow's TestLookoutUI in headless Chromium.
SCREENSHOTS_DIR := docs/guides/images
.PHONY: docs-screenshots
docs-screenshots: system-deps tools cluster-bins run-bins ## Take the Lookout UI screenshots in docs/guides/images with TestLookoutUI (headless Chromium on a composed Armada), and the release they show for make docs-check.
	@mkdir -p $(SCREENSHOTS_DIR)
	LOOKOUT_SCREENSHOTS=$(CURDIR)/$(SCREENSHOTS_DIR) go test -count=1 -timeout 20m -run '^TestLookoutUI$$' ./test/jobflow/

.PHONY: docs-check
docs-check: system-deps tools ## Check the docs: diagrams re-rendered equal the SVGs, YAML blocks validate against the XRDs, links and anchors resolve, runnable command blocks run, no dates or commit hashes in docs/guides/, the Lookout screenshots taken at the default Armada release.
	go test -count=1 -run 'TestDocs|TestParse|TestAnchor|TestCheckLinks|TestStamps' -v ./internal/build/docscheck/
	go test -count=1 -run 'TestFlowTableDoc' ./internal/armada/
	go test -count=1 ./internal/build/cmd/apidoc/

##@ Tools

# The conformance tests start private PostgreSQL and Redis instances from
# Debian's packages, the docs checks render the diagrams with its
# Graphviz, runc (the real node's runtime) compiles against its
# libseccomp-dev, its NetworkPolicy enforcer (kube-router) drives iptables
# and ipset, the Lookout UI test drives chromium, and the Pulsar topic
# Job's script calls curl; install them when they are missing.
.PHONY: system-deps
system-deps: ## Install Debian's postgresql, redis-server, barman-cli-cloud, graphviz, libseccomp-dev, iptables, ipset, chromium and curl if missing (needs root).
	@if [[ ! -x /usr/lib/postgresql/15/bin/initdb || ! -x /usr/bin/redis-server || ! -x /usr/bin/barman-cloud-backup || ! -x /usr/bin/dot || ! -f /usr/include/seccomp.h || ! -x /usr/sbin/iptables || ! -x /usr/sbin/ipset || ! -x /usr/bin/chromium || ! -x /usr/bin/curl ]]; then \
		echo "installing postgresql, redis-server (the tests run private instances), barman-cli-cloud (the backup round trip), graphviz (the docs' diagrams), libseccomp-dev (runc's seccomp, for the real node), iptables and ipset (the real node's NetworkPolicy enforcer) chromium (the Lookout UI's browser test) and curl (the Pulsar topic Job's script)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server barman-cli-cloud graphviz libseccomp-dev iptables ipset chromium curl >/dev/null; \
	fi

.PHONY: tools
tools: $(CROSSPLANE_CLI) $(CROSSPLANE_CORE) ## Build the Crossplane CLI and core (cached).

.PHONY: crossplane-core
crossplane-core: $(CROSSPLANE_CORE) ## Build only the Crossplane core (cached): what the control plane runs.

$(CROSSPLANE_CORE): FORCE
	tools/build-crossplane.sh "$(BIN_DIR)" core

# The CLI is only for render, the tests and packaging.
$(CROSSPLANE_CLI): FORCE
	tools/build-crossplane.sh "$(BIN_DIR)" cli

.PHONY: cluster-bins
cluster-bins: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK and provider-kubernetes (cached): what the tests' control planes run.
	tools/etcd/build.sh
	tools/kubernetes/build.sh
	tools/kwok/build.sh
	tools/provider-kubernetes/build.sh

.PHONY: control-plane-bins
control-plane-bins: ## Build etcd, kube-apiserver, kube-controller-manager and provider-kubernetes (cached): what make run runs up to the composed tree.
	tools/etcd/build.sh
	tools/kubernetes/build.sh kube-apiserver kube-controller-manager
	tools/provider-kubernetes/build.sh

.PHONY: versitygw
versitygw: ## Build versitygw (cached): the S3-compatible server test/backups archives to with Barman Cloud.
	tools/versitygw/build.sh

.PHONY: ghostunnel
ghostunnel: ## Build ghostunnel (cached): Lookout's and binoculars' TLS-terminating sidecar, which the conformance and job-flow tests run as rendered.
	tools/ghostunnel/build.sh

.PHONY: oidc
oidc: ## Build the OpenID Provider (cached): zitadel/oidc's example provider, which make run and the browser test of Lookout's OIDC login sign people in through.
	tools/oidc/build.sh

.PHONY: node-bins
node-bins: system-deps ## Build what the real node runs (cached): kubelet and kube-proxy (the API server's Kubernetes pin), CoreDNS, containerd and its runc shim, runc (cgo, libseccomp), the CNI plugins bridge, host-local, loopback and portmap, and kube-router (its NetworkPolicy enforcer).
	tools/kubernetes/build.sh kubelet kube-proxy
	tools/runc/build.sh
	tools/containerd/build.sh
	tools/cni/build.sh
	tools/kube-router/build.sh
	tools/coredns/build.sh

.PHONY: provider-sql
provider-sql: ## Build provider-sql (cached), which only the e2e tests run.
	tools/provider-sql/build.sh

.PHONY: armada-bins
armada-bins: ## Build Armada's eight binaries and armadactl for every supported release (cached per release).
	ARMADA_BIN_ROOT=$(ARMADA_BIN_ROOT) tools/armada/build.sh $(ARMADA_VERSIONS)

.PHONY: lookoutui
lookoutui: ## Build Lookout's UI from Armada's source at the default release as Armada's image does (openapi-generator-cli from Maven Central run with Java, the locked packages from the npm registry with yarn, vite build; cached per release), which Lookout serves at /.
	ARMADA_BIN_ROOT=$(ARMADA_BIN_ROOT) tools/lookoutui/build.sh $(ARMADA_DEFAULT_VERSION)

.PHONY: pulsar
pulsar: ## Assemble Apache Pulsar's standalone broker from Maven Central (cached per release), which the tests run.
	tools/pulsar/build.sh $(PULSAR_VERSION)

$(GOLANGCI_LINT): FORCE
	tools/build-tool.sh tools/lint $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
