#!/bin/bash
# Issue 33 trial: checkpoint a live local sandbox with CRIU and try to restore
# it under the same id. A research aid, not product code; what it does and
# where it stops is written up in docs/design/criu-checkpoint.md.
#
# Usage (as root, CRIU 4.x installed, abx built in build/):
#   scripts/criu-trial.sh dump    DATA_DIR SANDBOX_ID IMAGE_DIR
#   scripts/criu-trial.sh restore DATA_DIR SANDBOX_ID IMAGE_DIR TEMPLATE_ROOTFS
#   scripts/criu-trial.sh clean   IMAGE_DIR
#
# Before `dump`: the sandbox's daemon must be stopped (SIGTERM) so that init
# has dropped its daemon connection, and the daemon must have been started
# with a sandbox user namespace owned by host root when the host lacks
# CAP_SYS_RESOURCE (see the doc: CRIU's prlimit of init fails otherwise).
# `dump` closes init's control listener with gdb (a stand-in for an agent
# request that the runtime would add), saves the writable layer, the mount
# table and the keys of init's host files beside the images, and dumps.
# `restore` rebuilds the staging tmpfs and the overlay root on the host,
# joins the sandbox's cgroups and runs `criu restore`. With CRIU 4.1.1 and
# abx-init exec'd from a memfd it stopped at "No entry for reg-file-ID 0x1";
# init now runs from a file (ae33bfb) and per-sandbox uid ranges changed the
# mounts (ef390cd): not re-tried since, see the doc's open problems.
set -euo pipefail

CRIU=${CRIU:-criu}
INIT_BIN=${INIT_BIN:-$(dirname "$0")/../build/abx-init}

die() { echo "criu-trial: $*" >&2; exit 1; }

# The host pid of the sandbox's init: first field of <data>/sandboxes/<id>/init.
init_pid() { cut -d' ' -f1 "$1/sandboxes/$2/init"; }

# --external mnt[<mountpoint>]:m<id> for every mount of the sandbox that is
# a bind of something outside it (host dirs, lxcfs views, device nodes, the
# staging tmpfs). proc, devpts and whole tmpfs mounts CRIU makes itself.
external_mounts() {
  local mode=$1 mountinfo=$2 data=$3 stage=${4:-}
  local id parent dev root mp rest fstype src
  while read -r id parent dev root mp rest; do
    fstype=$(sed 's/.* - \([^ ]*\) .*/\1/' <<<"$rest")
    [ "$mp" = / ] && continue
    case "$fstype" in proc | devpts | mqueue | sysfs) continue ;; esac
    [ "$root" != / ] || [ "$fstype" = fuse.lxcfs ] || [ "$fstype" = ext4 ] || continue
    if [ "$mode" = dump ]; then
      echo "--external" "mnt[$mp]:m$id"
      continue
    fi
    case "$fstype" in
      ext4) src=$root ;;  # a host path: /usr, the template's layers
      # lxcfs refuses open_tree from the restored user namespace (EACCES):
      # the kernel's own file for now, as when lxcfs is absent.
      fuse.lxcfs) src=$root ;;
      devtmpfs) src=/dev$root ;;
      tmpfs) src=$stage$root ;;  # /dev, /boot_id, /empty of the staging tmpfs
      *) die "no restore source for $mp ($fstype)" ;;
    esac
    echo "--external" "mnt[m$id]:$src"
  done <"$mountinfo"
}

# file[<mnt_id hex>:<inode hex>]: CRIU's key for a file on a mount outside
# the sandbox (init's /dev/null stdio, its workload cgroup.procs, fd 250).
file_key() {
  local pid=$1 fd=$2 mnt ino
  mnt=$(awk '/^mnt_id:/ {print $2}' "/proc/$pid/fdinfo/$fd")
  ino=$(stat -L -c %i "/proc/$pid/fd/$fd")
  printf 'file[%x:%x]' "$mnt" "$ino"
}

do_dump() {
  local data=$1 sb=$2 img=$3 pid listen
  pid=$(init_pid "$data" "$sb")
  mkdir -p "$img"
  listen=$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%f\n' | head -1)
  if [ -n "$listen" ]; then
    gdb -batch -ex "file $INIT_BIN" -ex "attach $pid" -ex "call (int)close($listen)" >/dev/null
  fi
  [ -z "$(find "/proc/$pid/fd" -lname 'socket:*')" ] || die "init still holds a host socket"
  printf '%s\n' "$(file_key "$pid" 0)" "$(file_key "$pid" 7)" "$(file_key "$pid" 250)" >"$img.files"
  tar -C "/proc/$pid/fd/250/" -cf "$img.upper.tar" .
  cp "/proc/$pid/mountinfo" "$img.mountinfo"
  local ext=() key
  mapfile -t ext < <(external_mounts dump "$img.mountinfo" "$data" | xargs -n1)
  while read -r key; do ext+=(--external "$key"); done <"$img.files"
  local start=$EPOCHREALTIME
  "$CRIU" dump -t "$pid" -D "$img" -o dump.log -v4 --manage-cgroups=ignore --empty-ns net \
    "${ext[@]}"
  echo "dumped in $(bc <<<"$EPOCHREALTIME - $start") s, $(du -sh "$img" | cut -f1)"
}

# The staging tmpfs init built at create (mnt.cc), rebuilt on the host: the
# writable layer, the overlay root and what the external binds point at.
make_stage() {
  local img=$1 lower=$2 s=$1.root
  mkdir -p "$s"
  mountpoint -q "$s" || mount -t tmpfs -o size=1g,mode=0755 tmpfs "$s"
  mkdir -p "$s"/{upper,work,dev/pts,dev/shm,empty,newroot}
  tar -C "$s/upper" -xpf "$img.upper.tar"
  for f in null zero full random urandom tty; do : >"$s/dev/$f"; done
  ln -sfn pts/ptmx "$s/dev/ptmx"
  ln -sfn /proc/self/fd "$s/dev/fd"
  ln -sfn /proc/self/fd/0 "$s/dev/stdin"
  ln -sfn /proc/self/fd/1 "$s/dev/stdout"
  ln -sfn /proc/self/fd/2 "$s/dev/stderr"
  ln -sfn /proc/kcore "$s/dev/core"
  cat /proc/sys/kernel/random/uuid >"$s/boot_id"
  chown -R 100000:100000 "$s"
  mountpoint -q "$s/newroot" || mount -t overlay overlay \
    -o "lowerdir=$lower,upperdir=$s/upper,workdir=$s/work,userxattr" "$s/newroot"
}

do_restore() {
  local data=$1 sb=$2 img=$3 lower=$4 stage=$3.root cg
  make_stage "$img" "$lower"
  cg=$(find /sys/fs/cgroup/memory -maxdepth 3 -type d -name "$sb" -printf '%P\n' | head -1)
  [ -n "$cg" ] || die "no memory cgroup named $sb"
  local ext=() keys
  mapfile -t ext < <(external_mounts restore "$img.mountinfo" "$data" "$stage" | xargs -n1)
  mapfile -t keys <"$img.files"
  (
    # Init's host files, handed back in the order they were taken.
    exec 30<>/dev/null 31>"/sys/fs/cgroup/memory/$cg/work/cgroup.procs" 32<"$stage/upper"
    # Restored processes are created by this one: join the sandbox's cgroups.
    for c in cpu cpuacct cpuset memory freezer pids; do
      echo $BASHPID >"/sys/fs/cgroup/$c/$cg/cgroup.procs"
    done
    start=$EPOCHREALTIME
    "$CRIU" restore -D "$img" -o restore.log -v4 --root "$stage/newroot" \
      --manage-cgroups=ignore --empty-ns net -d --pidfile "$img/restored.pid" "${ext[@]}" \
      --inherit-fd "fd[30]:${keys[0]}" --inherit-fd "fd[31]:${keys[1]}" \
      --inherit-fd "fd[32]:${keys[2]}" ||
      { grep Error "$img/restore.log" >&2; exit 1; }
    echo "restored in $(bc <<<"$EPOCHREALTIME - $start") s: init is pid $(cat "$img/restored.pid")"
  )
}

do_clean() {
  local s=$1.root
  mountpoint -q "$s/newroot" && umount "$s/newroot"
  mountpoint -q "$s" && umount "$s"
  rm -rf "$1" "$1.root" "$1.files" "$1.upper.tar" "$1.mountinfo"
}

case "${1:-}" in
  dump) [ $# -eq 4 ] || die "usage: $0 dump DATA_DIR SANDBOX_ID IMAGE_DIR"; do_dump "$2" "$3" "$4" ;;
  restore)
    [ $# -eq 5 ] || die "usage: $0 restore DATA_DIR SANDBOX_ID IMAGE_DIR TEMPLATE_ROOTFS"
    do_restore "$2" "$3" "$4" "$5"
    ;;
  clean) [ $# -eq 2 ] || die "usage: $0 clean IMAGE_DIR"; do_clean "$2" ;;
  *) die "usage: $0 dump|restore|clean ..." ;;
esac
