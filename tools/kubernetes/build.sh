#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2
# from this wrapper module into ${KUBE_BIN_DIR:-~/.cache/armada-crossplane/bin/kubernetes-v1.37.2},
# reusing binaries already there. Cold: about 15-20 minutes on two cores;
# kube-scheduler (the job flow's, which binds Armada's job pods to KWOK
# Nodes) about 20 s more, as it shares the others' build cache.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
version=v1.37.2
bin_dir="${KUBE_BIN_DIR:-$HOME/.cache/armada-crossplane/bin/kubernetes-${version}}"
mkdir -p "${bin_dir}"
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="${ld} -X ${p}.gitVersion=${version} -X ${p}.gitMajor=1 -X ${p}.gitMinor=37 -X ${p}.gitTreeState=clean"
done
start=${SECONDS}
for name in kube-apiserver kube-controller-manager kube-scheduler; do
  out="${bin_dir}/${name}"
  if [[ -x "${out}" ]]; then
    echo "kubernetes ${name} ${version} is built: ${out}"
    continue
  fi
  echo "building kubernetes ${name} ${version}... [$((SECONDS - start))s elapsed]"
  GOFLAGS=-mod=mod go build -trimpath -ldflags "${ld}" -o "${out}.tmp" "k8s.io/kubernetes/cmd/${name}"
  mv "${out}.tmp" "${out}"
done
echo "kubernetes binaries ready in ${bin_dir} [$((SECONDS - start))s elapsed]"
