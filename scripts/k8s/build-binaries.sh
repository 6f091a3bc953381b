#!/usr/bin/env bash
# Builds the Kubernetes control plane, kubelet and containerd from their Go
# modules into $1/bin (the test cluster's state dir). Nothing can be pulled
# from the internet here but the Go module proxy, and Debian's containerd is
# too old for a current kubelet. A binary already in $1/bin is kept: a second
# `up` does not rebuild (delete $1/bin to force it).
set -euo pipefail
mkdir -p "$1"
dir=$(realpath "$1")
K8S_VERSION=${ABX_K8S_VERSION:-v1.37.2}
CONTAINERD_VERSION=${ABX_CONTAINERD_VERSION:-v2.4.2}
bin=$dir/bin
mkdir -p "$bin"
export GOFLAGS="-mod=mod -buildvcs=false -trimpath" CGO_ENABLED=${CGO_ENABLED:-1}

k8s_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
ctr_cmds=(containerd containerd-shim-runc-v2)

missing() { local c; for c in "$@"; do [[ -x $bin/$c ]] || return 0; done; return 1; }

# k8s.io/kubernetes is not meant to be a dependency: its go.mod points every
# k8s.io staging module at ./staging. A scratch module replaces each with the
# published v0.N.x that matches v1.N.x.
build_kubernetes() {
  missing "${k8s_cmds[@]}" || return 0
  local m=$dir/src/kubernetes staging="v0.${K8S_VERSION#v1.}"
  mkdir -p "$m"
  local modfile
  modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module abx.local/k8s-test-cluster"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//')"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$staging"'#p' "$modfile"
    echo ")"
  } > "$m/go.mod"
  local c pkgs=()
  for c in "${k8s_cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (cd "$m" && go build -o "$bin/" "${pkgs[@]}")
}

build_containerd() {
  missing "${ctr_cmds[@]}" || return 0
  local m=$dir/src/containerd
  mkdir -p "$m"
  printf 'module abx.local/k8s-test-containerd\n\ngo %s\n\nrequire github.com/containerd/containerd/v2 %s\n' \
    "$(go env GOVERSION | sed 's/^go//')" "$CONTAINERD_VERSION" > "$m/go.mod"
  (cd "$m" && go build -tags no_btrfs,no_devmapper,no_zfs -o "$bin/" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)
}

build_kubernetes
build_containerd
ls -l "$bin"
