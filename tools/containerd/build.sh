#!/usr/bin/env bash
# Builds containerd and its runc shim (github.com/containerd/containerd/v2,
# the version go.mod pins) from this wrapper module into
# ${CONTAINERD_BIN_DIR:-~/.cache/armada-crossplane/bin/containerd-VERSION},
# reusing binaries already there: the container runtime, CRI plugin built
# in, the real node's kubelet talks to (internal/harness/node). One
# `go build` builds both, so what they share compiles once. Built without
# the btrfs, devmapper and ZFS snapshotters (the node uses overlayfs;
# btrfs would need libbtrfs headers).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../progress.sh
version=$(pin github.com/containerd/containerd/v2)
binaries=(containerd containerd-shim-runc-v2)
bin_dir="${CONTAINERD_BIN_DIR:-$HOME/.cache/armada-crossplane/bin/containerd-${version}}"
mkdir -p "${bin_dir}"
missing=() pkgs=()
for name in "${binaries[@]}"; do
  if built "${bin_dir}/${name}" .; then
    echo "containerd ${name} ${version} is built: ${bin_dir}/${name}"
  else
    missing+=("${name}")
    pkgs+=("github.com/containerd/containerd/v2/cmd/${name}")
  fi
done
[[ ${#missing[@]} -gt 0 ]] || exit 0
# Through a temporary directory, so an interrupted build never leaves a
# truncated binary a later run would take as built.
tmp=$(mktemp -d "${bin_dir}/.build-XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
GOFLAGS="${GOFLAGS:-} -mod=mod" gobuild "containerd ${version} (${missing[*]})" \
  -tags "no_btrfs no_devmapper no_zfs urfave_cli_no_docs" \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=${version}" -o "${tmp}/" "${pkgs[@]}"
for name in "${missing[@]}"; do
  mv "${tmp}/${name}" "${bin_dir}/${name}"
  stamp "${bin_dir}/${name}" .
done
echo "containerd binaries ready in ${bin_dir}"
