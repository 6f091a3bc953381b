#!/bin/bash
# Issue 33 trial: checkpoint a live local sandbox with CRIU and restore it
# under the same id. A research aid, not product code; what it does, what it
# stands in for and what the runtime must change are in
# docs/design/criu-checkpoint.md.
#
# Usage (as root, CRIU 4.x installed, abx and abx-init built in build/):
#   scripts/criu-trial.sh dump    DATA_DIR SANDBOX_ID IMAGE_DIR
#   scripts/criu-trial.sh restore DATA_DIR SANDBOX_ID IMAGE_DIR TEMPLATE_ROOTFS
#   scripts/criu-trial.sh clean   IMAGE_DIR   (once the restored tree has ended)
# Env: INIT_PID (dump a restored tree: its init's host pid), STORED_ID (the
# host uid layers are stored as), CRIU, INIT_BIN.
#
# Before `dump`: stop the sandbox's daemon (`abx daemon stop`) so that init
# has dropped its daemon connection; on a host whose root lacks
# CAP_SYS_RESOURCE the sandbox must have been created by a daemon that makes
# its user namespace owned by host root (a one-line trial patch, see the doc),
# else CRIU stops at "Can't get rlimit 0: Operation not permitted".
# `dump` makes init dumpable and closes its control listener with gdb (a
# stand-in for an agent request the runtime would add), saves the writable
# layer, the mount table, the keys of init's host files and its executable's
# path beside the images, and dumps: the processes end, their memory is freed.
# `restore` rebuilds the staging tmpfs, the idmapped lower layer and the
# overlay root on the host, joins the sandbox's cgroups, takes a new cgroup
# namespace and runs `criu restore`: init, its children and their memory come
# back (network: an empty namespace). Tried with CRIU 4.1.1 on bae61fc;
# the same tree can be dumped and restored again (INIT_PID=<restored pid>).
set -euo pipefail

CRIU=${CRIU:-criu}
# The host id the daemon stores layers as (root's /etc/subuid start, else 100000).
STORED_ID=${STORED_ID:-$(awk -F: '$1 == "root" {print $2; exit}' /etc/subuid 2>/dev/null)}
STORED_ID=${STORED_ID:-100000}
INIT_BIN=${INIT_BIN:-$(dirname "$0")/../build/abx-init}

die() { echo "criu-trial: $*" >&2; exit 1; }

# The host pid of the sandbox's init: first field of <data>/sandboxes/<id>/init.
# INIT_PID= overrides it: a restored init has a new host pid that no record
# holds yet (the runtime would rewrite that file).
init_pid() {
  if [ -n "${INIT_PID:-}" ]; then echo "$INIT_PID"; else cut -d' ' -f1 "$1/sandboxes/$2/init"; fi
}

# --external mnt[<mountpoint>]:m<id> for every mount of the sandbox that is
# a bind of something outside it (host dirs, lxcfs views, device nodes, the
# staging tmpfs). proc, devpts and whole tmpfs mounts CRIU makes itself.
external_mounts() {
  local mode=$1 mountinfo=$2 data=$3 stage=${4:-}
  local id parent dev root mp rest fstype src proc_dev
  # A restored sandbox's lxcfs stand-ins are binds of the host's proc (a
  # different superblock from the sandbox's own /proc): external too.
  proc_dev=$(awk '$5 == "/proc" {print $3; exit}' "$mountinfo")
  while read -r id parent dev root mp rest; do
    fstype=$(sed 's/.* - \([^ ]*\) .*/\1/' <<<"$rest")
    [ "$mp" = / ] && continue
    [ "$fstype" = proc ] && [ "$dev" != "$proc_dev" ] && fstype=hostproc
    case "$fstype" in proc | devpts | mqueue | sysfs) continue ;; esac
    [ "$root" != / ] || [ "$fstype" = fuse.lxcfs ] || [ "$fstype" = ext4 ] ||
      [ "$fstype" = hostproc ] || continue
    if [ "$mode" = dump ]; then
      echo "--external" "mnt[$mp]:m$id"
      continue
    fi
    case "$fstype" in
      ext4) src=$root ;;  # a host path: /usr, the template's layers
      # lxcfs refuses open_tree from the restored user namespace (EACCES):
      # the kernel's own file for now, as when lxcfs is absent.
      # lxcfs's files, through a bind outside the state dir (0700: sandbox
      # root, which CRIU's mount restore runs as, cannot traverse it:
      # "Failed to open_tree <data>/lxcfs/proc/meminfo: Permission denied");
      # the kernel's own file when lxcfs is gone, as bind_proc_views does.
      fuse.lxcfs) if [ -n "${LXCFS_SRC:-}" ]; then src=$LXCFS_SRC$root; else src=$root; fi ;;
      hostproc) src=/proc$root ;;
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

# The same key for init's executable (<state dir>/sandboxes/abx-init-<hex>,
# on a host mount): its exe link and text mappings, handed back on restore as
# an fd of the file. /proc/PID/exe has no fdinfo: open it and read ours.
exe_key() {
  local pid=$1 mnt ino
  exec {fd}<"/proc/$pid/exe"
  mnt=$(awk '/^mnt_id:/ {print $2}' "/proc/$BASHPID/fdinfo/$fd")
  ino=$(stat -L -c %i "/proc/$pid/exe")
  exec {fd}<&-
  printf 'file[%x:%x]' "$mnt" "$ino"
}

do_dump() {
  local data=$1 sb=$2 img=$3 pid listen
  pid=$(init_pid "$data" "$sb")
  mkdir -p "$img"
  # Stand-in for an agent request "prepare for checkpoint": close the control
  # listener (a socket of the host's network namespace) and make init
  # dumpable. A restored init's mm belongs to the host's user namespace, so
  # while it is undumpable CRIU's namespace check from inside the sandbox's
  # user namespace cannot open its /proc/PID/ns/net (EACCES); a first
  # generation init exec'd inside its namespace has no such problem.
  local calls=(-ex "call (int)prctl(4, 1, 0, 0, 0)")  # PR_SET_DUMPABLE
  for listen in $(find "/proc/$pid/fd" -lname 'socket:*' -printf '%f\n'); do
    calls+=(-ex "call (int)close($listen)")
  done
  gdb -batch -ex "file $INIT_BIN" -ex "attach $pid" "${calls[@]}" >/dev/null 2>&1
  [ -z "$(find "/proc/$pid/fd" -lname 'socket:*')" ] || die "init still holds a host socket"
  printf '%s\n' "$(file_key "$pid" 0)" "$(file_key "$pid" 7)" "$(file_key "$pid" 250)" \
    "$(exe_key "$pid")" >"$img.files"
  readlink "/proc/$pid/exe" >"$img.exe"
  awk '$1 == 0 {print $2}' "/proc/$pid/uid_map" >"$img.uid"  # host uid of sandbox root
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

# attach_idmapped SRC DEST STORED_ID SANDBOX_ID: what the runtime hands init
# since ef390cd (id_ranges.cc idmapped_tree): a read-only clone of SRC whose
# files, stored as STORED_ID.. (the daemon's shared range), show as
# SANDBOX_ID.. (the sandbox's range), attached at DEST (on the rebuilt
# staging tmpfs, as mnt.cc's layer_path attaches /layerN). The translation
# user namespace is made by a short-lived child, as user::translating_namespace.
attach_idmapped() {
  python3 - "$@" <<'PY'
import ctypes, os, sys
src, dest, stored, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
def check(ret, what):
    if ret < 0:
        e = ctypes.get_errno()
        sys.exit(f"attach_idmapped: {what}: {os.strerror(e)}")
    return ret
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(w)
    check(libc.unshare(0x10000000), "unshare user")  # CLONE_NEWUSER
    os.read(r, 1)  # held until the parent has taken the namespace
    os._exit(0)
os.close(r)
import time
for _ in range(100):  # until the child has unshared
    if os.readlink(f"/proc/{child}/ns/user") != os.readlink("/proc/self/ns/user"):
        break
    time.sleep(0.01)
for f in ("uid_map", "gid_map"):
    with open(f"/proc/{child}/{f}", "w") as m:
        m.write(f"{stored} {target} 65536\n")
ns = os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
os.write(w, b"x"); os.waitpid(child, 0)
SYS_open_tree, SYS_move_mount, SYS_mount_setattr = 428, 429, 442
tree = check(libc.syscall(SYS_open_tree, -100, src.encode(), 1 | 0o2000000 | 0x100), "open_tree")
class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]
attr = MountAttr(0x00100000 | 1, 0, 0, ns)  # MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY
check(libc.syscall(SYS_mount_setattr, tree, b"", 0x1000, ctypes.byref(attr),
                   ctypes.sizeof(attr)), "mount_setattr idmap")  # AT_EMPTY_PATH
check(libc.syscall(SYS_move_mount, tree, b"", -100, dest.encode(), 4), "move_mount")
PY
}

# The staging tmpfs init built at create (mnt.cc), rebuilt on the host: the
# writable layer, the overlay root and what the external binds point at.
make_stage() {
  local img=$1 lower=$2 s=$1.root root_id
  root_id=$(cat "$img.uid")
  mkdir -p "$s"
  mountpoint -q "$s" || mount -t tmpfs -o "size=1g,mode=0755,uid=$root_id,gid=$root_id" tmpfs "$s"
  mkdir -p "$s"/{upper,work,dev/pts,dev/shm,empty,newroot}
  tar -C "$s/upper" --numeric-owner -xpf "$img.upper.tar"
  for f in null zero full random urandom tty; do : >"$s/dev/$f"; done
  ln -sfn pts/ptmx "$s/dev/ptmx"
  ln -sfn /proc/self/fd "$s/dev/fd"
  ln -sfn /proc/self/fd/0 "$s/dev/stdin"
  ln -sfn /proc/self/fd/1 "$s/dev/stdout"
  ln -sfn /proc/self/fd/2 "$s/dev/stderr"
  ln -sfn /proc/kcore "$s/dev/core"
  cat /proc/sys/kernel/random/uuid >"$s/boot_id"
  # Owned by sandbox root as init made them; upper's contents keep theirs.
  chown -h "$root_id:$root_id" "$s"/{upper,work,empty,newroot,boot_id} "$s"/dev "$s"/dev/*
  mkdir -p "$s/layer0"
  mountpoint -q "$s/layer0" || attach_idmapped "$lower" "$s/layer0" "$STORED_ID" "$root_id"
  mountpoint -q "$s/newroot" || mount -t overlay overlay \
    -o "lowerdir=$s/layer0,upperdir=$s/upper,workdir=$s/work,userxattr" "$s/newroot"
}

do_restore() {
  local data=$1 sb=$2 img=$3 lower=$4 stage=$3.root cg
  make_stage "$img" "$lower"
  cg=$(find /sys/fs/cgroup/memory -maxdepth 3 -type d -name "$sb" -printf '%P\n' | head -1)
  [ -n "$cg" ] || die "no memory cgroup named $sb"
  if mountpoint -q "$data/lxcfs"; then
    mkdir -p "$img.lxcfs"
    mountpoint -q "$img.lxcfs" || mount --bind "$data/lxcfs" "$img.lxcfs"
    LXCFS_SRC=$img.lxcfs
  fi
  local ext=() keys
  mapfile -t ext < <(external_mounts restore "$img.mountinfo" "$data" "$stage" | xargs -n1)
  mapfile -t keys <"$img.files"
  (
    # Init's host files, handed back in the order they were taken. CRIU
    # reopens an external file through /proc/self/fd/N as the restored task
    # (sandbox root), which may not open root's cgroup.procs for writing:
    # keyed by its restore-side name (the key minus its first letter,
    # files-reg.c) the inherited fd itself is used, not reopened. So for fd
    # 250 (O_PATH, whose reopen through the magic link with O_NOFOLLOW
    # yields the link: "bad mode 0120500").
    exec 30<>/dev/null 31>"/sys/fs/cgroup/memory/$cg/work/cgroup.procs" 32<"$stage/upper" \
      33<"$(cat "$img.exe")"
    # Restored processes are created by this one: join the sandbox's cgroups.
    for c in cpu cpuacct cpuset memory freezer pids; do
      echo $BASHPID >"/sys/fs/cgroup/$c/$cg/cgroup.procs"
    done
    start=$EPOCHREALTIME
    # --manage-cgroups=ignore restores no cgroup namespace (cgroup.c:
    # prepare_cgroup_namespace): the tasks would inherit the host's and see
    # host cgroup paths. A new one rooted at the sandbox's cgroups instead.
    unshare --cgroup "$CRIU" restore -D "$img" -o restore.log -v4 --root "$stage/newroot" \
      --manage-cgroups=ignore --empty-ns net -d --pidfile "$img/restored.pid" "${ext[@]}" \
      --inherit-fd "fd[30]:${keys[0]}" --inherit-fd "fd[31]:${keys[1]#f}" \
      --inherit-fd "fd[32]:${keys[2]#f}" --inherit-fd "fd[33]:${keys[3]}" ||
      { grep Error "$img/restore.log" >&2; exit 1; }
    echo "restored in $(bc <<<"$EPOCHREALTIME - $start") s: init is pid $(cat "$img/restored.pid")"
  )
}

do_clean() {
  local s=$1.root
  mountpoint -q "$s/newroot" && umount "$s/newroot"
  mountpoint -q "$s/layer0" && umount "$s/layer0"
  mountpoint -q "$s" && umount "$s"
  if mountpoint -q "$1.lxcfs"; then umount "$1.lxcfs"; fi
  rm -rf "$1" "$1.root" "$1.files" "$1.upper.tar" "$1.mountinfo" "$1.exe" "$1.uid" "$1.lxcfs"
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
