#!/usr/bin/env bash
# Installs what flowdir needs on a fresh Debian 12 machine with Swift, once.
# Safe to run again: it installs only what is missing.
#
#   bash scripts/setup.sh           everything the tests use
#   bash scripts/setup.sh --demo    only what scripts/demo.sh uses (the build, ImageMagick, the cog venv)
set -euo pipefail
demo=0
[ "${1:-}" = "--demo" ] && demo=1
# To build flowdir and run the demo's workflows.
packages=(pkg-config python3 python3-venv curl git libgit2-dev libyaml-dev imagemagick)
# The tests also need: Git LFS, video thumbnails, editors and process tools, sshd, chromium, node (page scripts),
# man-db (scripts/test-install.sh reads the installed man pages with man; a slim image has none).
[ "$demo" -eq 1 ] || packages+=(bsdutils git-lfs ffmpeg make rsync vim-nox procps strace openssh-server openssh-client chromium chromium-driver nodejs man-db)
# apt and pip print nothing with -q, and on a fresh machine they take
# minutes: a line every 20 s says they are still at it (on fd 3, the
# script's own stdout, whatever the step's output is sent to).
exec 3>&1
step() {
  local what=$1 t=$(date +%s); shift
  # sleep holds none of our output open, so no reader waits for it after the kill.
  ( while sleep 20 >/dev/null 2>&1 3>&-; do echo "setup: still $what ($(( $(date +%s) - t )) s)" >&3; done ) &
  local beat=$!
  local rc=0
  "$@" || rc=$?
  kill "$beat" 2>/dev/null || true; wait "$beat" 2>/dev/null || true
  return "$rc"
}
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} (apt; a minute or two)"
  t=$(date +%s)
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  step "updating apt's lists" $SUDO apt-get update -qq
  step installing $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  echo "setup: installed in $(( $(date +%s) - t )) s"
fi
command -v swift >/dev/null || { echo "setup: swift is not on PATH; install Swift 6 first (https://www.swift.org/install/linux/)" >&2; exit 1; }
# Remote jobs: a venv with cog and coglet (a real cog server without Docker,
# for examples/stylize-cog), Pillow for its image work, and Replicate's own
# Python client (the tests check the job server's API with it).
venv=${FLOWDIR_COG_VENV:-/opt/flowdir-cog}
if ! "$venv/bin/python" -c 'import cog, coglet, PIL, replicate' 2>/dev/null; then
  echo "setup: making the cog venv $venv (pip; about a minute)"
  t=$(date +%s)
  python3 -m venv "$venv"
  step "making the cog venv" "$venv/bin/pip" install -q cog==0.23.1 coglet==0.23.1 pillow==13.0.0 replicate==1.0.7
  echo "setup: made in $(( $(date +%s) - t )) s"
fi
[ "$demo" -eq 0 ] || exit 0
# The browser tests of `flowdir serve`: Selenium driving Debian's chromium,
# Pillow to read the masks the pages write, and axe-core (Deque's
# accessibility checker, as packaged on PyPI) for the accessibility pass.
# A venv of its own: Selenium's dependencies change how Replicate's client reads outputs.
browser=${FLOWDIR_BROWSER_VENV:-/opt/flowdir-browser}
if ! "$browser/bin/python" -c 'import selenium, PIL, axe_core_python.selenium' 2>/dev/null; then
  echo "setup: making the browser-test venv $browser"
  python3 -m venv "$browser"
  step "making the browser-test venv" "$browser/bin/pip" install -q selenium==4.38.0 pillow==13.0.0 axe-core-python==0.1.0
fi
# Large files over https: giftless, a real Git LFS server (its package lists
# none of its dependencies, so they are named here), for the storage tests.
lfs=${FLOWDIR_LFS_VENV:-/opt/flowdir-lfs}
if ! "$lfs/bin/python" -c 'import giftless.wsgi_entrypoint' 2>/dev/null; then
  echo "setup: making the Git LFS server venv $lfs"
  python3 -m venv "$lfs"
  step "making the Git LFS server venv" "$lfs/bin/pip" install -q giftless==0.6.2 flask==3.1.3 flask-classful==0.16.0 flask-marshmallow==1.5.0 marshmallow==4.4.0 \
    webargs==8.7.1 werkzeug==3.1.9 figcan==0.0.4 pyjwt==2.15.1 pyyaml==6.0.4 python-dotenv==1.2.4 python-dateutil==4.0.0 \
    cachetools==8.0.2 typing-extensions==4.16.0 requests==2.34.2 cryptography==50.0.2
fi
