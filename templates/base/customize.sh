#!/bin/sh
# mmdebstrap customize hook: $1 is the new root filesystem.
set -eu
root=$1
# The user every sandbox command runs as by default.
chroot "$root" useradd --uid 1000 --user-group --create-home --home-dir /home/user \
  --shell /bin/bash user
# As in E2B's base image: `user` may run anything as root with sudo, no
# password asked (spec.toml's allow_setid lets set-uid sudo work).
chroot "$root" usermod --append --groups sudo user
chroot "$root" passwd --delete user >/dev/null
printf 'user ALL=(ALL:ALL) NOPASSWD: ALL\n' >"$root/etc/sudoers.d/user"
chmod 0440 "$root/etc/sudoers.d/user"
# pip refuses to install into Debian's Python without this; sandboxes are disposable.
printf '[global]\nbreak-system-packages = true\n' >"$root/etc/pip.conf"
# Sandboxes have no network unless created with internet access; the runtime
# then provides a resolver configuration.
printf '# no network by default\n' >"$root/etc/resolv.conf"
printf 'sandbox\n' >"$root/etc/hostname"
# Downloaded package lists and archives only make the template larger.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
