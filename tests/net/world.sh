#!/usr/bin/env bash
# The networking tests' private internet: two network namespaces that never
# route anywhere else.
#
#   world.sh up [NAME]     make the world NAME (default abxw<pid>); prints its state dir
#   world.sh down [NAME]   remove every trace of it: processes, namespaces, files
#   world.sh exec NAME -- CMD...
#                          run CMD in the daemon namespace as a daemon would see it
#                          there (its own /sys, /etc/resolv.conf from the world)
#
# NAME-d, "the daemon's machine": lo, and wan0 = 192.0.2.2/24 with its default route via
#   192.0.2.1. /etc/netns/NAME-d/resolv.conf says nameserver 8.8.8.8.
# NAME-i, "the internet": isp0 = 192.0.2.1/24 (its only route out is back to 192.0.2.0/24),
#   its own resolv.conf (8.8.8.8) for the SOCKS servers,
#   and the servers' /32s on its lo (no dummy driver needed):
#     1.1.1.1, 8.8.8.8   DNS (dnsmasq) and httpbin-like HTTP/HTTPS (/ redirects 301 / 302, as
#                        E2B's own network tests expect of them)
#     203.0.113.10       www.example.test, example.test: HTTP, HTTPS, TCP echo on 7, iperf3 on 5201;
#                        also connectivitycheck.gstatic.com (/generate_204 answers 204), the
#                        name E2B's internet access tests ask for
#     203.0.113.11       api.example.test, *.wild.example.test: HTTP, HTTPS
#     203.0.113.20       SOCKS5: :1080 open, :1081 user abx password secret (microsocks)
#     10.99.0.1          private.example.test (RFC 1918, served: only a policy stops it)
#     169.254.169.254    metadata.example.test (link-local, served)
#     100.64.0.1         CGNAT (served)
#   Every address serves HTTP on 80 and HTTPS on 443 (world_server.py) with a certificate
#   of the world's own CA, STATE/ca.crt.
#
# Every process started is in NAME-i, recorded in STATE/pids and killed by pid on down.
# `up` also removes the worlds of owners that are gone (STATE/owner: the pid that ran `up`,
# or $ABX_NET_WORLD_OWNER), so an interrupted test run leaves nothing for long.
# STATE is $ABX_NET_WORLD_DIR/NAME (default /run/abx-net-world/NAME).
set -eEuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${ABX_NET_WORLD_DIR:-/run/abx-net-world}
servers=(1.1.1.1 8.8.8.8 203.0.113.10 203.0.113.11 203.0.113.20 10.99.0.1 169.254.169.254 100.64.0.1
  192.0.0.8 198.18.0.1)
python=/usr/bin/python3  # not a pyenv shim: it runs as root in the world

die() { echo "world.sh: $*" >&2; exit 1; }

names() {
  name=$1
  [[ $name =~ ^[a-z][a-z0-9]{0,12}$ ]] || die "NAME must be 1-13 lower-case letters and digits, a letter first: $name"
  dns="$name-d" ins="$name-i" state="$root/$name"
}

netns_inode() { stat -L -c %i "/run/netns/$1" 2>/dev/null; }

# Starts a world process in NAME-i, in its own session, stdin closed, output to a log;
# `setsid` and `ip netns exec` both exec, so $! is the server's own pid.
spawn() {
  local log=$1; shift
  setsid ip netns exec "$ins" "$@" </dev/null >>"$state/$log.log" 2>&1 &
  echo "$! $log" >>"$state/pids"
}

make_namespaces() {
  ip netns add "$dns"
  ip netns add "$ins"
  ip -n "$dns" link set lo up
  ip -n "$ins" link set lo up
  ip link add wan0 netns "$dns" type veth peer name isp0 netns "$ins"
  ip -n "$dns" addr add 192.0.2.2/24 dev wan0
  ip -n "$dns" link set wan0 up
  ip -n "$dns" route add default via 192.0.2.1
  ip -n "$ins" addr add 192.0.2.1/24 dev isp0
  ip -n "$ins" link set isp0 up
  local a
  for a in "${servers[@]}"; do ip -n "$ins" addr add "$a/32" dev lo; done
  # The internet answers NAT-ed sandboxes through the daemon's address only.
  ip netns exec "$ins" sysctl -qw net.ipv4.ip_forward=0
  # ip netns exec binds these over /etc/resolv.conf: the world's names, for the daemon and
  # for the SOCKS servers (clients may hand them names).
  mkdir -p "/etc/netns/$dns" "/etc/netns/$ins"
  echo "nameserver 8.8.8.8" >"/etc/netns/$dns/resolv.conf"
  echo "nameserver 8.8.8.8" >"/etc/netns/$ins/resolv.conf"
}

make_certificates() {
  local d=$state
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
    -subj "/CN=abx test world CA $name" -keyout "$d/ca.key" -out "$d/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=www.example.test" -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
  cat >"$d/server.ext" <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer
subjectAltName=DNS:*.example.test,DNS:*.wild.example.test,DNS:example.test,DNS:www.example.test,DNS:api.example.test,DNS:connectivitycheck.gstatic.com,IP:1.1.1.1,IP:8.8.8.8,IP:203.0.113.10,IP:203.0.113.11
EOF
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 7 -extfile "$d/server.ext" \
    -out "$d/server.crt" 2>/dev/null
  rm -f "$d/server.csr" "$d/ca.key"  # nothing signs again
  chmod 0644 "$d/ca.crt"
}

start_servers() {
  spawn http "$python" "$here/world_server.py" --cert "$state/server.crt" --key "$state/server.key" \
    --echo 203.0.113.10:7 "${servers[@]}"
  spawn dnsmasq dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --no-poll \
    --bind-interfaces --listen-address=8.8.8.8 --listen-address=1.1.1.1 --pid-file= --user=root \
    --log-queries --log-facility=- --local=/test/ \
    --host-record=www.example.test,203.0.113.10 --host-record=example.test,203.0.113.10 \
    --host-record=connectivitycheck.gstatic.com,203.0.113.10 \
    --host-record=api.example.test,203.0.113.11 --host-record=private.example.test,10.99.0.1 \
    --host-record=metadata.example.test,169.254.169.254 --address=/wild.example.test/203.0.113.11
  # Outgoing connections from the SOCKS address, so a server can tell a proxied client.
  spawn socks microsocks -i 203.0.113.20 -p 1080 -b 203.0.113.20
  spawn socks-auth microsocks -i 203.0.113.20 -p 1081 -b 203.0.113.20 -u abx -P secret
  spawn iperf3 iperf3 -s -B 203.0.113.10 -p 5201
}

listening() {  # ADDR:PORT is listening (TCP) in the internet namespace
  ip netns exec "$ins" ss -Hltn "src $1" | grep -q .
}

wait_for_servers() {
  local want=(1.1.1.1:80 8.8.8.8:443 203.0.113.10:7 203.0.113.20:1080 203.0.113.20:1081
    203.0.113.10:5201 100.64.0.1:443 8.8.8.8:53) i w
  for ((i = 0; i < 100; i++)); do
    for w in "${want[@]}"; do listening "$w" || { sleep 0.1; continue 2; }; done
    return 0
  done
  die "the world's servers did not start; see $state/*.log"
}

# Worlds whose owner (the process that ran `up`, e.g. a pytest run) is gone: an interrupted
# run's leftovers. A world whose owner pid is alive, or was reused, is left alone.
reap_orphans() {
  local dir owner
  for dir in "$root"/*/; do
    [[ -f $dir/owner ]] || continue
    owner=$(<"$dir/owner")
    [[ -n $owner && ! -e /proc/$owner ]] || continue
    echo "world.sh: removing $(basename "$dir"), whose owner $owner is gone" >&2
    (down "$(basename "$dir")")
  done
}

up() {
  reap_orphans
  names "${1:-abxw$$}"
  if [[ -e $state || -e /run/netns/$dns || -e /run/netns/$ins || -e /etc/netns/$dns || -e /etc/netns/$ins ]]; then
    echo "world.sh: cleaning a stale world $name" >&2
    down "$name"
  fi
  mkdir -p "$state"
  chmod 0755 "$root" "$state"
  : >"$state/pids"
  echo "${ABX_NET_WORLD_OWNER:-$PPID}" >"$state/owner"
  trap 'down "$name" >/dev/null 2>&1 || true' ERR
  make_namespaces
  make_certificates
  start_servers
  wait_for_servers
  trap - ERR
  echo "$state"
}

# Kills a recorded pid only while it is still a process in the world's internet namespace,
# so a pid reused by an unrelated process since is never touched.
kill_world_pid() {
  local pid=$1 inode=$2
  [[ -n $inode && $(readlink "/proc/$pid/ns/net" 2>/dev/null) == "net:[$inode]" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
}

down() {
  names "${1:?usage: world.sh down NAME}"
  local ns inode pid _ i
  for ns in "$ins" "$dns"; do
    inode=$(netns_inode "$ns") || continue
    # The recorded servers, then whatever else still runs in the namespace (a daemon a
    # test started there, its helpers): every one of them was started for this world.
    if [[ $ns == "$ins" && -f $state/pids ]]; then
      while read -r pid _; do kill_world_pid "$pid" "$inode"; done <"$state/pids"
    fi
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill_world_pid "$pid" "$inode"; done
    for ((i = 0; i < 50; i++)); do
      [[ -z $(ip netns pids "$ns" 2>/dev/null) ]] && break
      sleep 0.1
    done
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      [[ $(readlink "/proc/$pid/ns/net" 2>/dev/null) == "net:[$inode]" ]] && kill -KILL "$pid" 2>/dev/null
    done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "/etc/netns/$dns" "/etc/netns/$ins" "$state"
  rmdir "$root" /etc/netns 2>/dev/null || true  # when no other world uses them
}

# As `ip netns exec`, with what it drops kept: it mounts a fresh /sys for the namespace,
# which hides /sys/fs/cgroup and the rest, so they are moved onto the new /sys here.
# Mount changes stay in a mount namespace of CMD's own; nsenter, unshare and sh all exec,
# so CMD keeps the pid this script was started with.
exec_in() {
  names "${1:?usage: world.sh exec NAME -- CMD...}"; shift
  [[ ${1:-} == -- ]] && shift
  (($#)) || die "exec: no command"
  [[ -e /run/netns/$dns ]] || die "no world $name"
  exec nsenter --net="/run/netns/$dns" unshare --mount --propagation slave -- sh -ec '
    resolv=$1; shift
    keep=$(mktemp -d /tmp/abx-world-sys.XXXXXX)
    mount --rbind /sys/fs/cgroup "$keep"
    mount -t sysfs sysfs /sys
    mount --move "$keep" /sys/fs/cgroup
    rmdir "$keep"
    mount --bind "$resolv" /etc/resolv.conf
    exec "$@"' sh "/etc/netns/$dns/resolv.conf" "$@"
}

case ${1:-} in
  up) up "${2:-}" ;;
  down) down "${2:-}" ;;
  exec) shift; exec_in "$@" ;;
  *) die "usage: world.sh up|down [NAME] | exec NAME -- CMD..." ;;
esac
