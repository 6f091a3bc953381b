#!/bin/sh
# Installs abx on Debian 12: the build dependencies from Debian
# (scripts/install-deps.sh --build-only), a stripped Release build, `make install`
# into $PREFIX, and the Python SDK into a venv. Safe to run again: it installs
# only missing packages, rebuilds only what changed and overwrites the install.
#
#   From a checkout:  scripts/install.sh
#   Without one:      curl -fsSL <raw URL of this file> | ABX_REPO=<git URL> sh
#                     (clones $ABX_REPO at $ABX_REF into $ABX_SRC, then runs from there)
#
# Environment (defaults in brackets):
#   PREFIX       where abx goes [/usr/local]
#   ABX_REPO     git URL to clone when not run from a checkout [none: the project has
#                no published URL yet, so it must be given]
#   ABX_REF      branch or tag to check out [the repo's default branch]
#   ABX_SRC      where to clone it [~/.local/src/agent-sandbox]
#   ABX_SDK_VENV the venv the SDK goes into, unless one is active [~/.local/share/abx/venv]
#   ABX_NO_SDK=1 skip the SDK;  ABX_JOBS=N  build with N jobs [all cores]
set -eu

PREFIX=${PREFIX:-/usr/local}
ABX_SRC=${ABX_SRC:-$HOME/.local/src/agent-sandbox}
ABX_SDK_VENV=${ABX_SDK_VENV:-$HOME/.local/share/abx/venv}

die() {
  echo "install.sh: $*" >&2
  exit 1
}
step() { echo "==> $*"; }

is_checkout() { [ -f "$1/CMakeLists.txt" ] && grep -q 'project(agent_sandbox' "$1/CMakeLists.txt"; }

# Root runs things itself; anyone else through sudo, when it is there.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "need root for: $* (run as root or install sudo)"
  fi
}

command -v apt-get >/dev/null && command -v dpkg-query >/dev/null ||
  die "this installer needs Debian (apt-get, dpkg); elsewhere see the README's 'From source'"

# 1. The source: this checkout, the current dir, or a clone.
src=
case $0 in */scripts/install.sh) is_checkout "${0%/scripts/install.sh}" && src=${0%/scripts/install.sh} ;; esac
[ -z "$src" ] && is_checkout . && src=.
if [ -z "$src" ]; then
  [ -n "${ABX_REPO:-}" ] || die "not run from an abx checkout: set ABX_REPO to the git URL to clone"
  if [ -d "$ABX_SRC/.git" ]; then
    step "updating $ABX_SRC"
    git -C "$ABX_SRC" fetch -q origin || die "git fetch in $ABX_SRC failed"
    git -C "$ABX_SRC" checkout -q "${ABX_REF:-origin/HEAD}" || die "no ref ${ABX_REF:-origin/HEAD} in $ABX_REPO"
  else
    command -v git >/dev/null || as_root apt-get install -y -qq git >/dev/null || die "cannot install git"
    step "cloning $ABX_REPO into $ABX_SRC"
    git clone -q ${ABX_REF:+--branch "$ABX_REF"} "$ABX_REPO" "$ABX_SRC" || die "git clone $ABX_REPO failed"
  fi
  src=$ABX_SRC
fi
cd "$src" || die "cannot enter $src"

# 2. Build dependencies from Debian (only the missing ones).
step "Debian packages"
command -v bash >/dev/null || die "bash is missing (apt-get install bash)"
scripts/install-deps.sh --build-only || die "installing the build dependencies failed (see above)"

# 3. A stripped Release build, installed into $PREFIX.
step "building abx (Release; a few minutes the first time)"
make -s release ${ABX_JOBS:+JOBS=$ABX_JOBS} || die "the build failed (see above)"
step "installing into $PREFIX"
if [ -w "$PREFIX" ] || { [ ! -e "$PREFIX" ] && [ -w "$(dirname "$PREFIX")" ]; }; then
  cmake --install build-release --prefix "$PREFIX" --strip >/dev/null || die "cmake --install failed"
else
  as_root cmake --install build-release --prefix "$PREFIX" --strip >/dev/null || die "cmake --install failed"
fi

# 4. The Python SDK: into the active venv, else into a venv of its own
# (Debian's system Python refuses pip installs).
sdk_python=
if [ "${ABX_NO_SDK:-}" != 1 ]; then
  if [ -n "${VIRTUAL_ENV:-}" ]; then
    sdk_python=$VIRTUAL_ENV/bin/python
  else
    [ -x "$ABX_SDK_VENV/bin/python" ] || python3 -m venv "$ABX_SDK_VENV" || die "python3 -m venv $ABX_SDK_VENV failed"
    sdk_python=$ABX_SDK_VENV/bin/python
  fi
  step "installing the Python SDK (agent-sandbox-client, agent-sandbox-server) with $sdk_python"
  "$sdk_python" -m pip install -q ./sdk/python-server ./sdk/python ||
    die "pip install ./sdk/python-server ./sdk/python failed (see above)"
fi

# 5. What we have and what to do next.
abx=$PREFIX/bin/abx
"$abx" --version || die "$abx does not run"
cat <<NEXT

Next:
  abx create --template host          # a first sandbox (starts the local daemon)
  abx exec <id> -- uname -a
  abx --help                          # every command; man abx
  systemctl enable --now abx          # or run the daemon as a service (as root; data in /var/lib/abx)
NEXT
[ -n "$sdk_python" ] && echo "  $sdk_python -c 'import agent_sandbox'   # the SDK"
case ":$PATH:" in *":$PREFIX/bin:"*) ;; *) echo "  (add $PREFIX/bin to PATH)" ;; esac
exit 0
