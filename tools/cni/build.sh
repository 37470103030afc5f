#!/usr/bin/env bash
# Builds the CNI plugins the real node's pod network uses (bridge,
# host-local, loopback, portmap from github.com/containernetworking/plugins,
# the version go.mod pins) from this wrapper module into
# ${CNI_BIN_DIR:-~/.cache/armada-crossplane/bin/cni-plugins-VERSION} (the
# directory containerd's CRI plugin looks in), reusing binaries already
# there. One `go build` builds all four.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../progress.sh
version=$(pin github.com/containernetworking/plugins)
declare -A pkg=(
  [bridge]=plugins/main/bridge
  [host-local]=plugins/ipam/host-local
  [loopback]=plugins/main/loopback
  [portmap]=plugins/meta/portmap
)
bin_dir="${CNI_BIN_DIR:-$HOME/.cache/armada-crossplane/bin/cni-plugins-${version}}"
mkdir -p "${bin_dir}"
missing=() pkgs=()
for name in bridge host-local loopback portmap; do
  if built "${bin_dir}/${name}" .; then
    echo "CNI plugin ${name} ${version} is built: ${bin_dir}/${name}"
  else
    missing+=("${name}")
    pkgs+=("github.com/containernetworking/plugins/${pkg[${name}]}")
  fi
done
[[ ${#missing[@]} -gt 0 ]] || exit 0
tmp=$(mktemp -d "${bin_dir}/.build-XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
GOFLAGS="${GOFLAGS:-} -mod=mod" gobuild "CNI plugins ${version} (${missing[*]})" \
  -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${version}" \
  -o "${tmp}/" "${pkgs[@]}"
for name in "${missing[@]}"; do
  mv "${tmp}/${name}" "${bin_dir}/${name}"
  stamp "${bin_dir}/${name}" .
done
echo "CNI plugins ready in ${bin_dir}"
