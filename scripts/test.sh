#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test and
# scripts/install.sh into a temporary prefix (scripts/test-install.sh), then
# a short form of the reliability suite (Benchmarks/reliability/) against
# the built binary: kill -9 of run and watch (with local and with remote
# jobs, Slurm jobs, ssh jobs), git gc and repack beside it, two machines syncing,
# large files' content under kill -9 on two machines, hostile inputs to
# both servers, the webhook receiver, files and the CLI; and every fuzz target for a few seconds (scripts/fuzz.sh; the long form
# is Benchmarks/reliability/fuzz.sh).
#
#   bash scripts/test.sh           all of it; every component (Slurm, sshd, chromium, cog, giftless)
#                                  is installed first, and a test whose component is still missing fails
#   bash scripts/test.sh --quick   the small and medium tests only (no installs, no component, no
#                                  reliability runs): a minute or so after a build, while you work
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
  # The tiers are tags in the tests (ARCHITECTURE.md, "Tests"); FLOWDIR_TEST_TIER=quick skips the
  # large ones and those needing a component, each saying why.
  command -v node >/dev/null && bash scripts/check-pages.sh
  bash scripts/build.sh --build-tests
  start=$(date +%s)
  FLOWDIR_TEST_TIER=quick swift test --skip-build 2>&1 | tee .build/test-quick.log | grep -v -E '^(➜|◇|↳|✔ Test [a-z])' || true
  rc=${PIPESTATUS[0]}
  echo "test.sh --quick: $(grep -c '^✔ Test [a-z]' .build/test-quick.log) passed, $(grep -c '^➜ Test' .build/test-quick.log) skipped (large or needing a component) in $(( $(date +%s) - start )) s; the whole log: .build/test-quick.log"
  exit "$rc"
fi
[ $# -eq 0 ] || { echo "usage: bash scripts/test.sh [--quick]" >&2; exit 64; }
# Every component is installed below: a test that still finds one missing fails rather than skips.
export FLOWDIR_REQUIRE_COMPONENTS=1
bash scripts/setup.sh
# The pages' scripts parse (node --check), before anything is built: a syntax error fails here, with its file and line.
bash scripts/check-pages.sh
# A real single-node Slurm for the run.slurm tests (root: it installs and starts daemons).
if [ "$(id -u)" -eq 0 ]; then bash scripts/slurm-local.sh; else sudo bash scripts/slurm-local.sh; fi
# sshd for the sync tests over ssh (they start their own on a loopback port).
if ! [ -x /usr/sbin/sshd ]; then
  echo "test.sh: installing openssh-server (apt)"
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null
  else sudo apt-get update -qq >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null; fi
fi
# The build the demo started, finished with the tests (scripts/build.sh: a progress line every 20 s).
bash scripts/build.sh --build-tests
# A hang fails its step, naming it, instead of holding a CI until the CI's own
# limit: each step has a bound far above its time on a loaded 2-core machine
# (FLOWDIR_TEST_LIMIT scales them; 2 doubles them). The bound fails a hang, it
# times nothing: no test asserts a wall-clock figure.
limit="${FLOWDIR_TEST_LIMIT:-1}"
step() {  # step MINUTES COMMAND… — the command, stopped (its process group) after MINUTES×limit
  local minutes=$(( $1 * limit )); shift
  local rc=0
  timeout -k 60 "${minutes}m" "$@" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "test.sh: stopped after ${minutes} min, not ended: $*" >&2
  fi
  return "$rc"
}
mkdir -p .build
rc=0
step 50 swift test 2>&1 | tee .build/test.log || rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then python3 scripts/unfinished-tests.py .build/test.log >&2; fi
[ "$rc" -eq 0 ] || exit "$rc"
bin=.build/debug/flowdir
step 5 bash scripts/test-install.sh .build/debug
step 20 python3 Benchmarks/reliability/kill.py --mode run --kills 40 --nodes 24 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/kill.py --mode watch --kills 20 --nodes 24 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/gitgc.py --trials 4 --nodes 40 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/remotekill.py --mode run --kills 30 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/remotekill.py --mode watch --kills 30 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/slurmkill.py --mode run --kills 20 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/slurmkill.py --mode watch --kills 20 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/sshkill.py --mode run --kills 15 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/sshkill.py --mode watch --kills 15 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/synckill.py --steps 200 --flowdir "$bin"
step 20 python3 Benchmarks/reliability/lfskill.py --kills 16 --transport both --no-extras --flowdir "$bin"
step 20 python3 Benchmarks/reliability/hostile.py --quick --flowdir "$bin"
step 30 bash scripts/fuzz.sh --seconds 5
