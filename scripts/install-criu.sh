#!/usr/bin/env bash
# CRIU 4.x, for pauses that free memory (checkpoint to disk, restore on resume).
# Debian bookworm's CRIU 3.17 fails `criu check` on current kernels ("Unexpected
# rt vDSO area bounds"). When no installed criu passes `criu check`, this builds
# 4.1.1 from Debian's source (the orig tarball of trixie's package, checked by
# its sha256) with bookworm's build dependencies and installs it as
# /usr/local/sbin/criu (about 20 s on 2 cores). Never fails the caller: without
# a working CRIU, pause stays freeze-only and the daemon says so.
set -uo pipefail
version=4.1.1
sha256=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe
url=http://deb.debian.org/debian/pool/main/c/criu/criu_${version}.orig.tar.xz
build_deps=(libbsd-dev libcap-dev libgnutls28-dev libnet1-dev libnftables-dev libnl-3-dev
  libprotobuf-c-dev libprotobuf-dev pkgconf protobuf-c-compiler protobuf-compiler uuid-dev
  python3-protobuf curl xz-utils)

works() { command -v criu >/dev/null && criu check >/dev/null 2>&1; }
skip() {
  echo "install-criu: $1; pause stays freeze-only (memory is kept while paused)" >&2
  exit 0
}

works && exit 0
[[ $(id -u) -eq 0 ]] || skip "needs root to build and install CRIU $version"
missing=()
for p in "${build_deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null || skip "could not install CRIU's build dependencies (${missing[*]})"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL -o "$work/criu.tar.xz" "$url" || skip "could not download $url"
echo "$sha256  $work/criu.tar.xz" | sha256sum -c --quiet || skip "CRIU's tarball does not match its sha256"
tar -C "$work" -xf "$work/criu.tar.xz" || skip "could not unpack CRIU $version"
echo "building CRIU $version (log: $work/make.log, removed after)"
make -C "$work/criu-$version" -j"$(nproc)" criu >"$work/make.log" 2>&1 ||
  { tail -20 "$work/make.log" >&2; skip "CRIU $version did not build"; }
install -m 0755 "$work/criu-$version/criu/criu" /usr/local/sbin/criu
hash -r
works || skip "CRIU $version does not pass 'criu check' on this kernel ($(uname -r))"
echo "installed CRIU $version as /usr/local/sbin/criu"
