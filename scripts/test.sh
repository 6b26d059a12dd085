#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test, then
# a short form of the reliability suite (Benchmarks/reliability/) against
# the built binary: kill -9 of run and watch (with local and with remote
# jobs, Slurm jobs, ssh jobs), git gc and repack beside it, two machines syncing,
# large files' content under kill -9 on two machines, hostile inputs to
# both servers, the webhook receiver, files and the CLI; and every fuzz target for a few seconds (scripts/fuzz.sh; the long form
# is Benchmarks/reliability/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The pages' scripts parse (node --check), before anything is built: a syntax error fails here, with its file and line.
bash scripts/check-pages.sh
# A real single-node Slurm for the run.slurm tests (root: it installs and starts daemons).
if [ "$(id -u)" -eq 0 ]; then bash scripts/slurm-local.sh; else sudo bash scripts/slurm-local.sh; fi
# sshd for the sync tests over ssh (they start their own on a loopback port).
if ! [ -x /usr/sbin/sshd ]; then
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null
  else sudo apt-get update -qq >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null; fi
fi
swift build --build-tests
swift test
bin=.build/debug/flowdir
python3 Benchmarks/reliability/kill.py --mode run --kills 40 --nodes 24 --flowdir "$bin"
python3 Benchmarks/reliability/kill.py --mode watch --kills 20 --nodes 24 --flowdir "$bin"
python3 Benchmarks/reliability/gitgc.py --trials 4 --nodes 40 --flowdir "$bin"
python3 Benchmarks/reliability/remotekill.py --mode run --kills 30 --flowdir "$bin"
python3 Benchmarks/reliability/remotekill.py --mode watch --kills 30 --flowdir "$bin"
python3 Benchmarks/reliability/slurmkill.py --mode run --kills 20 --flowdir "$bin"
python3 Benchmarks/reliability/slurmkill.py --mode watch --kills 20 --flowdir "$bin"
python3 Benchmarks/reliability/sshkill.py --mode run --kills 15 --flowdir "$bin"
python3 Benchmarks/reliability/sshkill.py --mode watch --kills 15 --flowdir "$bin"
python3 Benchmarks/reliability/synckill.py --steps 200 --flowdir "$bin"
python3 Benchmarks/reliability/lfskill.py --kills 16 --transport both --no-extras --flowdir "$bin"
python3 Benchmarks/reliability/hostile.py --quick --flowdir "$bin"
bash scripts/fuzz.sh --seconds 5
