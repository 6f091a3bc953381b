#!/usr/bin/env bash
# Installs what building and testing need: Debian packages (only those
# missing, so a prepared machine pays nothing) and a Python venv for the tests.
# `--build-only`: just what building, installing and running abx needs
# (scripts/install.sh), no test tools and no venv.
set -euo pipefail
venv=${1:-build/venv}

build_packages=(cmake ninja-build make g++ pkg-config git dpkg-dev file ccache
  libboost-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libseccomp-dev libcap-dev libnl-route-3-dev libnftables-dev libsqlite3-dev libarchive-dev libtomlplusplus-dev libssl-dev zlib1g-dev
  # run time: the base template's build, sandboxes' /proc views, rootless id maps
  # and networking, the SDK's venv, volumes' ext4 images (mkfs.ext4)
  mmdebstrap lxcfs uidmap slirp4netns python3-venv e2fsprogs
  # template push/pull: the OCI registry protocol
  skopeo)
packages=("${build_packages[@]}" clang-format clang libclang-rt-14-dev libgtest-dev
  bubblewrap hyperfine iproute2
  umoci busybox-static docker-registry
  # the server SDK's browser group and the dashboard's browser tests, driven by
  # Playwright (tests/requirements.txt; its own browser download needs the internet)
  chromium
  # tests/net's private internet (tests/net/world.sh) and its checks
  dnsmasq-base microsocks socat iperf3 nftables)
[[ $venv == --build-only ]] && packages=("${build_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[[ $venv == --build-only ]] && exit 0

# CRIU 4.x (Debian's 3.17 fails `criu check` on current kernels); never fails deps.
scripts/install-criu.sh

stamp="$venv/.deps-stamp"
reqs=(tests/requirements.txt tests/compat/python/requirements.txt sdk/python/pyproject.toml
  sdk/python-server/pyproject.toml)
if [[ ! -f $stamp ]] || [[ -n $(find "${reqs[@]}" -newer "$stamp" 2>/dev/null) ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r tests/requirements.txt
  # Both SDK distributions at once: the client requires agent-sandbox-server at its own
  # version, which only this tree has.
  "$venv/bin/pip" install -q -e sdk/python-server -e sdk/python
  touch "$stamp"
fi

# The recipes' agent frameworks (tests/examples), apart: they need newer packages than
# the test venv pins.
examples_venv=$(dirname "$venv")/examples-venv
examples_reqs=(tests/examples/requirements.txt sdk/python/pyproject.toml sdk/python-server/pyproject.toml)
if [[ ! -f $examples_venv/.deps-stamp ]] ||
  [[ -n $(find "${examples_reqs[@]}" -newer "$examples_venv/.deps-stamp" 2>/dev/null) ]]; then
  python3 -m venv "$examples_venv"
  "$examples_venv/bin/pip" install -q -r tests/examples/requirements.txt -e sdk/python-server \
    -e sdk/python
  touch "$examples_venv/.deps-stamp"
fi

# xterm.js, which the build embeds in abx for the dashboard's terminal
# (src/dashboard/assets.cmake), reinstalled when its lock changes.
dash=src/dashboard
if command -v npm >/dev/null && { [[ ! -d $dash/node_modules ]] || [[ $dash/package-lock.json -nt $dash/node_modules ]]; }; then
  npm ci --prefix "$dash" --no-audit --no-fund >/dev/null
  touch "$dash/node_modules"
fi

# The JavaScript E2B SDKs for tests/compat/js, reinstalled when the lock changes.
js=tests/compat/js
if command -v npm >/dev/null && { [[ ! -d $js/node_modules ]] || [[ $js/package-lock.json -nt $js/node_modules ]]; }; then
  npm ci --prefix "$js" --no-audit --no-fund >/dev/null
  touch "$js/node_modules"
fi
