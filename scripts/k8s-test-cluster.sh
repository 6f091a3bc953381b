#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, for the tests:
#
#   scripts/k8s-test-cluster.sh up       build what is missing, start everything, wait for a Ready node
#   scripts/k8s-test-cluster.sh down     stop everything and put the machine back as it was
#   scripts/k8s-test-cluster.sh status   what runs (exit 0 when all of it does)
#
# etcd (Debian), kube-apiserver, -controller-manager, -scheduler and kubelet
# (built from the k8s.io/kubernetes Go module), containerd 2.x (built from its Go
# module), runc and the CNI plugins (Debian), Debian's docker-registry on
# loopback and a pause image built here: nothing is pulled from the internet.
# Every file lives under one state dir, ABX_K8S_DIR (default build/k8s); what
# kubelet and the CNI plugins change outside it (sysctls, iptables chains, the
# bridge, a few directories) is recorded before `up` and undone by `down`.
# Needs root. Processes are stopped by the pids recorded at start, never by name.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
D=${ABX_K8S_DIR:-$here/../build/k8s}
mkdir -p "$D"
D=$(realpath "$D")

NODE=abx-k8s-node
BRIDGE=${ABX_K8S_BRIDGE:-abxk8s0}
POD_SUBNET=${ABX_K8S_POD_SUBNET:-10.213.0.0/24}
NODE_IP=${POD_SUBNET%.*}.1 # the bridge's address: kubelet will not serve on loopback
SERVICE_CIDR=${ABX_K8S_SERVICE_CIDR:-10.214.0.0/24}
SERVICE_IP=${SERVICE_CIDR%.*}.1
ETCD_PORT=${ABX_K8S_ETCD_PORT:-12379}
API_PORT=${ABX_K8S_API_PORT:-16443}
REGISTRY=127.0.0.1:${ABX_K8S_REGISTRY_PORT:-15000}
PAUSE_IMAGE=$REGISTRY/pause:3.10
BUSYBOX_IMAGE=$REGISTRY/busybox:1
API=https://127.0.0.1:$API_PORT
CNI_NETWORK=abx-k8s-test

BIN=$D/bin PKI=$D/pki RUN=$D/run LOGS=$D/logs REC=$D/recorded
PIDS=$RUN/pids
# Start order; `down` stops them in reverse.
COMPONENTS=(registry etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet)
# What kubelet (setupKernelTunables) and the bridge plugin (ip_forward) set.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)
# Places outside the state dir that kubelet, containerd or the CNI plugins
# create whatever they are told (e.g. containerd's shim sockets in /run/containerd/s).
OUTSIDE=(/var/log/containers /var/log/pods /run/containerd /var/lib/cni /opt/containerd
  /var/lib/kubelet /var/lib/containerd /run/nri /var/run/nri /etc/cni /opt/cni /run/kubernetes
  /etc/kubernetes)
CGROUP_ROOT=kubepods

log() { echo "k8s-test-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- helpers

# A process that exited but is not reaped yet (PID 1 here reaps slowly) is gone.
running() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
alive() { [[ -f $PIDS/$1.pid ]] && running "$(cat "$PIDS/$1.pid")"; }

# Each component in its own session so it outlives this script; the pid
# recorded is the component's own (setsid execs without forking here).
start() {
  local name=$1
  shift
  alive "$name" && return 0
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$PIDS/$name.pid"
}

stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do running "$pid" || return 0; sleep 0.1; done
  log "pid $pid ($2) still there 10s after SIGTERM: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 50); do running "$pid" || return 0; sleep 0.1; done
  log "pid $pid did not exit"
}

stop() {
  [[ -f $PIDS/$1.pid ]] || return 0
  stop_pid "$(cat "$PIDS/$1.pid")" "$1"
  rm -f "$PIDS/$1.pid"
}

wait_for() { # wait_for SECONDS WHAT COMMAND...
  local secs=$1 what=$2 i
  shift 2
  for i in $(seq $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "$what not ready after ${secs}s (logs in $LOGS)"
}

kapi() { # kapi METHOD PATH [curl args...]
  local method=$1 path=$2
  shift 2
  curl -fsS -X "$method" --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "$@" "$API$path"
}

need_root() { [[ $(id -u) -eq 0 ]] || die "needs root (kubelet, containerd, bridge networking)"; }

# ---------------------------------------------------------------- up

install_packages() {
  local p missing=()
  for p in etcd-server runc containernetworking-plugins docker-registry busybox-static \
    iptables iproute2 openssl curl gcc libc6-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# What `down` puts back: taken once per up/down cycle, so a failed `up` run
# again does not record its own leftovers as the machine's state.
record_machine() {
  [[ -d $REC ]] && return 0
  mkdir -p "$REC.tmp"
  local s p
  for s in "${SYSCTLS[@]}"; do echo "$s $(sysctl -n "$s")"; done >"$REC.tmp/sysctls"
  for p in "${OUTSIDE[@]}"; do [[ -e $p || -L $p ]] || echo "$p"; done >"$REC.tmp/absent-paths"
  iptables_chains >"$REC.tmp/iptables-chains"
  for p in /sys/fs/cgroup/*/; do [[ -d $p$CGROUP_ROOT ]] && echo "$p$CGROUP_ROOT"; done \
    >"$REC.tmp/cgroups" || true
  mv "$REC.tmp" "$REC"
}

# "FAMILY TABLE CHAIN" for every chain now present.
iptables_chains() {
  local fam
  for fam in iptables ip6tables; do
    command -v "$fam-save" >/dev/null || continue
    "$fam-save" 2>/dev/null | awk -v f="$fam" '/^\*/{t=substr($1,2)} /^:/{print f, t, substr($1,2)}'
  done
}

make_pki() {
  [[ -f $PKI/admin.kubeconfig ]] && return 0
  mkdir -p "$PKI"
  local o="$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=abx-k8s-test-ca \
    -keyout "$o/ca.key" -out "$o/ca.crt" 2>/dev/null
  cert apiserver /CN=kube-apiserver \
    "subjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,IP:$NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin "/O=system:masters/CN=abx-admin"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert kubelet "/O=system:nodes/CN=system:node:$NODE"
  cert kubelet-serving "/CN=$NODE" "subjectAltName=IP:$NODE_IP,DNS:$NODE"
  openssl genrsa -out "$o/sa.key" 2048 2>/dev/null
  openssl rsa -in "$o/sa.key" -pubout -out "$o/sa.pub" 2>/dev/null
  kubeconfig kubelet
  kubeconfig admin
}

cert() { # cert NAME SUBJECT [EXTENSION]
  local name=$1 subj=$2 ext=${3:-}
  openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$PKI/$name.key" \
    -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 3650 -out "$PKI/$name.crt" \
    ${ext:+-extfile <(echo "$ext")} 2>/dev/null
  rm -f "$PKI/$name.csr"
}

kubeconfig() {
  cat >"$PKI/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: abx-test
  cluster: {server: "$API", certificate-authority: "$PKI/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$PKI/$1.crt", client-key: "$PKI/$1.key"}
contexts:
- name: abx-test
  context: {cluster: abx-test, user: $1}
current-context: abx-test
EOF
}

# A bridge on a private subnet: the node's address, and the CNI bridge
# plugin's (it takes an existing bridge as it is).
make_network() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr show dev "$BRIDGE" | grep -q "inet $NODE_IP/" ||
    ip addr add "$NODE_IP/${POD_SUBNET#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  mkdir -p "$D/cni/net.d" "$D/cni/ipam"
  cat >"$D/cni/net.d/10-abx.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$D/cni/ipam",
              "ranges": [[{"subnet": "$POD_SUBNET", "gateway": "$NODE_IP"}]]}}
  ]
}
EOF
}

start_registry() {
  mkdir -p "$D/registry/data"
  cat >"$D/registry/config.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $D/registry/data}
  delete: {enabled: true}
http: {addr: $REGISTRY}
EOF
  start registry docker-registry serve "$D/registry/config.yml"
  wait_for 20 registry curl -fsS "http://$REGISTRY/v2/"
}

# The pause image (a static binary that sleeps until a signal) and a
# busybox image for tests, packed here and pushed to the local registry.
push_images() {
  mkdir -p "$D/images"
  if [[ ! -x $D/images/pause || $here/k8s/pause.c -nt $D/images/pause ]]; then
    gcc -static -Os -s -o "$D/images/pause" "$here/k8s/pause.c"
  fi
  curl -fsS -o /dev/null -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$REGISTRY/v2/pause/manifests/3.10" 2>/dev/null ||
    python3 "$here/k8s/oci-push.py" "$REGISTRY" pause:3.10 --file "$D/images/pause=/pause" \
      --entrypoint '["/pause"]' >/dev/null
  curl -fsS -o /dev/null -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$REGISTRY/v2/busybox/manifests/1" 2>/dev/null ||
    python3 "$here/k8s/oci-push.py" "$REGISTRY" busybox:1 --file /bin/busybox=/bin/busybox \
      --link /bin/sh=busybox --cmd '["sh"]' >/dev/null
}

start_etcd() {
  start etcd etcd --name abx --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "abx=http://127.0.0.1:$((ETCD_PORT + 1))"
  wait_for 30 etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

# On loopback the API server cannot publish itself as the `kubernetes`
# Service's endpoint, hence --endpoint-reconciler-type=none.
start_control_plane() {
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --endpoint-reconciler-type none --cert-dir "$PKI/generated" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --authorization-mode Node,RBAC --allow-privileged \
    --kubelet-preferred-address-types InternalIP \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$SERVICE_CIDR"
  wait_for 90 kube-apiserver kapi GET /readyz
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$PKI/admin.kubeconfig" --authentication-kubeconfig "$PKI/admin.kubeconfig" \
    --authorization-kubeconfig "$PKI/admin.kubeconfig" --bind-address 127.0.0.1 \
    --leader-elect=false --service-account-private-key-file "$PKI/sa.key" \
    --root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" \
    --cluster-signing-key-file "$PKI/ca.key" --use-service-account-credentials=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$PKI/admin.kubeconfig" \
    --authentication-kubeconfig "$PKI/admin.kubeconfig" \
    --authorization-kubeconfig "$PKI/admin.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false
}

# Root here lacks CAP_SYS_RESOURCE: without restrict_oom_score_adj runc fails
# with "can't get final child's PID from pipe". NRI and the opt plugin would
# make /run/nri and /opt/containerd: off / moved into the state dir.
start_containerd() {
  mkdir -p "$D/containerd/certs.d/$REGISTRY" "$RUN/containerd"
  cat >"$D/containerd/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
  cat >"$D/containerd/config.toml" <<EOF
version = 3
root = "$D/containerd/root"
state = "$RUN/containerd"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.erofs"]
[grpc]
  address = "$RUN/containerd/containerd.sock"
[ttrpc]
  address = "$RUN/containerd/containerd.sock.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "$D/containerd/opt"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$RUN/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$D/cni/net.d"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$D/containerd/certs.d"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
EOF
  # The shim is found on PATH, next to containerd.
  start containerd env PATH="$BIN:$PATH" "$BIN/containerd" --config "$D/containerd/config.toml"
  wait_for 30 containerd test -S "$RUN/containerd/containerd.sock"
}

# cgroup v1 here: failCgroupV1 false and the cgroupfs driver. Eviction
# thresholds low: the machine's disk is shared and not ours to police.
start_kubelet() {
  mkdir -p "$D/kubelet" "$LOGS/pods"
  cat >"$D/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$RUN/containerd/containerd.sock
podLogsDir: $LOGS/pods
protectKernelDefaults: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
EOF
  start kubelet "$BIN/kubelet" --config "$D/kubelet/config.yaml" \
    --kubeconfig "$PKI/kubelet.kubeconfig" --root-dir "$D/kubelet" \
    --hostname-override "$NODE" --node-ip "$NODE_IP" --v 1
}

node_ready() {
  kapi GET "/api/v1/nodes/$NODE" | python3 -c '
import json, sys
conds = json.load(sys.stdin)["status"].get("conditions", [])
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in conds) else 1)'
}

write_cluster_info() {
  cat >"$D/cluster.json" <<EOF
{"server": "$API", "ca": "$PKI/ca.crt", "cert": "$PKI/admin.crt", "key": "$PKI/admin.key",
 "kubeconfig": "$PKI/admin.kubeconfig", "registry": "$REGISTRY", "node": "$NODE", "pod_subnet": "$POD_SUBNET",
 "pause_image": "$PAUSE_IMAGE", "busybox_image": "$BUSYBOX_IMAGE"}
EOF
}

up() {
  need_root
  if [[ -f $D/up ]] && status >/dev/null; then
    log "already up"
    return 0
  fi
  [[ -d $REC ]] && { log "cleaning up after an earlier run"; down; }
  install_packages
  command -v go >/dev/null || die "needs Go (the go command) to build the cluster's binaries"
  mkdir -p "$LOGS" "$PIDS"
  log "building binaries (cached under $BIN)"
  "$here/k8s/build-binaries.sh" "$D" >"$LOGS/build.log" 2>&1 ||
    die "build failed: $LOGS/build.log"
  record_machine
  make_pki
  make_network
  start_registry
  push_images
  start_etcd
  start_control_plane
  start_containerd
  start_kubelet
  wait_for 120 "node $NODE" node_ready
  wait_for 60 "default service account" kapi GET /api/v1/namespaces/default/serviceaccounts/default
  write_cluster_info
  touch "$D/up"
  log "up: kubeconfig $PKI/admin.kubeconfig, registry $REGISTRY"
}

# ---------------------------------------------------------------- down

# Deleting the pods through the API lets kubelet tear them down the normal
# way (the CNI plugin's DEL frees the veth and the address).
drain_pods() {
  alive kube-apiserver && alive kubelet || return 0
  local pods i
  pods=$(kapi GET /api/v1/pods 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    print(p["metadata"]["namespace"], p["metadata"]["name"])' 2>/dev/null) || return 0
  [[ -n $pods ]] || return 0
  while read -r ns name; do
    kapi DELETE "/api/v1/namespaces/$ns/pods/$name" -H 'Content-Type: application/json' \
      -d '{"gracePeriodSeconds": 1}' >/dev/null 2>&1 || true
  done <<<"$pods"
  for i in $(seq 150); do
    [[ $(kapi GET /api/v1/pods 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))') == 0 ]] &&
      return 0
    sleep 0.2
  done
  log "pods still there after 30s; killing their processes"
}

# Whatever is left in our cgroups (containers of pods not drained) and the
# shims running our shim binary: ours by construction.
kill_leftovers() {
  local pid pids=() cg
  for cg in /sys/fs/cgroup/*/$CGROUP_ROOT; do
    [[ -d $cg ]] || continue
    grep -qx "$cg" "$REC/cgroups" 2>/dev/null && continue
    pids+=($(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null))
  done
  for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/exe" 2>/dev/null) == "$BIN/containerd-shim-runc-v2" ]] && pids+=("${pid#/proc/}")
  done
  ((${#pids[@]})) || return 0
  for pid in $(printf '%s\n' "${pids[@]}" | sort -un); do kill -KILL "$pid" 2>/dev/null || true; done
  sleep 0.5
}

mounts_under() { # deepest first
  awk -v p="$1/" '{ m = $5; gsub(/\\040/, " ", m); if (index(m "/", p) == 1) print m }' \
    /proc/self/mountinfo | sort -r
}

unmount_under() {
  local m
  for m in $(mounts_under "$1"); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}

remove_network() {
  local dev
  for dev in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$dev" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

# Chains kubelet (KUBE-*) and the CNI plugins (CNI-*) added, and the rules
# that jump to them; everybody else's rules stay.
remove_iptables() {
  [[ -f $REC/iptables-chains ]] || return 0
  local fam table chain rule added
  added=$(iptables_chains | grep -E ' (KUBE|CNI)-' | grep -vxFf "$REC/iptables-chains" || true)
  [[ -n $added ]] || return 0
  while read -r fam table chain; do
    while read -r rule; do
      [[ -n $rule ]] && { eval "$fam -t $table ${rule/-A/-D}" 2>/dev/null || true; }
    done < <("$fam" -t "$table" -S 2>/dev/null | grep -E -- "^-A .* -j $chain( |\$)" || true)
    "$fam" -t "$table" -F "$chain" 2>/dev/null || true
  done <<<"$added"
  while read -r fam table chain; do "$fam" -t "$table" -X "$chain" 2>/dev/null || true; done <<<"$added"
}

restore_sysctls() {
  [[ -f $REC/sysctls ]] || return 0
  local key value
  while read -r key value; do
    [[ $(sysctl -n "$key") == "$value" ]] || sysctl -qw "$key=$value" || log "could not restore $key"
  done <"$REC/sysctls"
}

remove_outside_paths() {
  local p
  if [[ -f $REC/absent-paths ]]; then
    while read -r p; do
      [[ -e $p || -L $p ]] || continue
      unmount_under "$p"
      rm -rf --one-file-system "$p"
    done <"$REC/absent-paths"
  fi
  # In directories that were there before: kubelet's log links, libcni's
  # cached results for our network.
  [[ -d /var/log/containers ]] &&
    find /var/log/containers -maxdepth 1 -type l -lname "$D/*" -delete 2>/dev/null || true
  rm -f /var/lib/cni/results/"$CNI_NETWORK"-* 2>/dev/null || true
}

remove_cgroups() {
  local cg
  for cg in /sys/fs/cgroup/*/$CGROUP_ROOT; do
    [[ -d $cg ]] || continue
    grep -qx "$cg" "$REC/cgroups" 2>/dev/null && continue
    find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

down() {
  need_root
  local c i
  drain_pods
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    c=${COMPONENTS[i]}
    [[ $c == containerd ]] && kill_leftovers
    stop "$c"
  done
  kill_leftovers
  unmount_under "$D"
  remove_network
  remove_iptables
  restore_sysctls
  remove_outside_paths
  remove_cgroups
  [[ -z $(mounts_under "$D") ]] || die "mounts left under $D: $(mounts_under "$D" | tr '\n' ' ')"
  # A fresh cluster on each `up`; binaries, certificates and the registry's
  # images are kept.
  rm -rf --one-file-system "$D/etcd" "$D/containerd" "$D/kubelet" "$RUN" "$D/cni/ipam" \
    "$D/up" "$D/cluster.json" "$REC"
  log "down"
}

# ---------------------------------------------------------------- status

status() {
  local c ok=0 pid
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then
      pid=$(cat "$PIDS/$c.pid")
      printf '%-24s running  pid %s\n' "$c" "$pid"
    else
      printf '%-24s stopped\n' "$c"
      ok=1
    fi
  done
  if alive kube-apiserver; then
    if node_ready 2>/dev/null; then echo "node $NODE Ready"; else echo "node $NODE not Ready"; ok=1; fi
    kapi GET /api/v1/pods 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    m = p["metadata"]
    print("pod %s/%s %s" % (m["namespace"], m["name"], p["status"].get("phase")))' || true
  fi
  ip -br link show "$BRIDGE" 2>/dev/null || echo "bridge $BRIDGE absent"
  [[ -f $D/cluster.json ]] && echo "kubeconfig $PKI/admin.kubeconfig, registry $REGISTRY"
  return $ok
}

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
*) echo "usage: $0 up|down|status   (state dir: \$ABX_K8S_DIR, default build/k8s)" >&2; exit 2 ;;
esac
