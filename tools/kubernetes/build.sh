#!/usr/bin/env bash
# Builds the Kubernetes binaries (binaries below) at the version go.mod pins from
# this wrapper module into
# ${KUBE_BIN_DIR:-~/.cache/armada-crossplane/bin/kubernetes-VERSION}, reusing
# binaries already there. The missing ones are built by one `go build`, so
# the Kubernetes libraries they share compile once and their links overlap.
# Cold: about 5 minutes on two cores; kube-scheduler (the job flow's,
# which binds Armada's job pods to KWOK Nodes) shares their build, and so
# do kubelet and kube-proxy (the real node's, internal/harness/node).
#
# Usage: tools/kubernetes/build.sh [BINARY...] builds only those (make run
# needs kube-scheduler only after the composed tree); default: the first
# four (kube-proxy only when named).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../progress.sh
version=$(pin k8s.io/kubernetes)
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
known=("${binaries[@]}" kube-proxy)
if [[ $# -gt 0 ]]; then
  for name in "$@"; do
    [[ " ${known[*]} " == *" ${name} "* ]] || { echo "$0: ${name} is not one of: ${known[*]}" >&2; exit 2; }
  done
  binaries=("$@")
fi
bin_dir="${KUBE_BIN_DIR:-$HOME/.cache/armada-crossplane/bin/kubernetes-${version}}"
mkdir -p "${bin_dir}"
ld="-s -w"
minor=${version#v1.}
minor=${minor%%.*}
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="${ld} -X ${p}.gitVersion=${version} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean"
done
missing=() pkgs=()
for name in "${binaries[@]}"; do
  if built "${bin_dir}/${name}" .; then
    echo "kubernetes ${name} ${version} is built: ${bin_dir}/${name}"
  else
    missing+=("${name}")
    pkgs+=("k8s.io/kubernetes/cmd/${name}")
  fi
done
[[ ${#missing[@]} -gt 0 ]] || exit 0
# Build into a temporary directory and move each binary in, so an
# interrupted build never leaves a truncated binary that a later run would
# mistake for complete.
tmp=$(mktemp -d "${bin_dir}/.build-XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
GOFLAGS="${GOFLAGS:-} -mod=mod" gobuild "kubernetes ${version} (${missing[*]})" -ldflags "${ld}" -o "${tmp}/" "${pkgs[@]}"
for name in "${missing[@]}"; do
  mv "${tmp}/${name}" "${bin_dir}/${name}"
  stamp "${bin_dir}/${name}" .
done
echo "kubernetes binaries ready in ${bin_dir}"
