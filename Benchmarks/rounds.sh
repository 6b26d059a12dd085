# Sourced by the benchmarks that time flowdir and make in rounds
# (engine.sh, busy.sh, phases.sh); `aside` and `filesystem` act on the
# current folder, the benchmark's work folder.

# Seconds a command takes, its output dropped.
secs() { local s=$(date +%s%N); "$@" >/dev/null 2>&1; local e=$(date +%s%N); echo "scale=3; ($e - $s) / 1000000000" | bc; }

median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }

# A round's leftovers are moved aside (into .old/, removed with the work
# folder at the end), not deleted between rounds: an ext4 without a journal
# (this VM's root file system, /tmp) does not reuse an inode freed in the
# last minute or more, so a file made after a large `rm -rf` waits on a scan
# past the freed ones. Seen here: 1,000-step runs of 9-11 s instead of
# ~1.2 s, perf finding the kernel in `recently_deleted` and
# `find_get_block_common`.
aside() {
  local p
  mkdir -p .old
  for p in "$@"; do
    if [ -e "$p" ]; then mv "$p" ".old/$p.$RANDOM$RANDOM"; fi
  done
}

# The work folder's file system, which the figures depend on (README:
# a step's files cost several times more on ext4 than on tmpfs).
filesystem() { findmnt -n -o FSTYPE -T "${1:-.}" 2>/dev/null || stat -f -c %T "${1:-.}"; }
