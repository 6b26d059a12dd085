#!/usr/bin/env bash
# Builds flowdir (and flowdir-bench) for release with the Swift runtime and
# Foundation linked in (`--static-swift-stdlib`, the way Swift suggests
# deploying on Linux): one binary to map instead of ~35 libraries to load
# and bind, so every command starts ~8 ms sooner (`flowdir --version`:
# 22 → 14 ms). Prints the folder holding the binaries.
#
#   bin=$(bash scripts/release-build.sh [--split-debug] [--product flowdir])
#
# --split-debug: the folder printed is .build/release-split/, with each
# binary stripped (flowdir: 174 → 87 MB) and its debug info beside it as
# NAME.debug, which gdb finds through the binary's .gnu_debuglink. For
# shipping: start-up is the same either way (Benchmarks/README.md, "Build:
# time, size, start-up"), so the benchmarks run the unstripped build.
# SwiftPM links release builds with --gc-sections already.
set -euo pipefail
cd "$(dirname "$0")/.."
split=
args=()
for a in "$@"; do
  if [ "$a" = --split-debug ]; then split=1; else args+=("$a"); fi
done
# Quiet unless it fails: callers print figures, not build logs.
if ! log=$(swift build -c release --static-swift-stdlib "${args[@]}" 2>&1); then echo "$log" >&2; exit 1; fi
bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
if [ -z "$split" ]; then echo "$bin"; exit 0; fi
out=.build/release-split
mkdir -p "$out"
for name in flowdir flowdir-bench; do
  # Only what is built and newer than its split copy: stripping 174 MB takes seconds.
  [ -x "$bin/$name" ] && [ "$bin/$name" -nt "$out/$name" ] || continue
  objcopy --only-keep-debug "$bin/$name" "$out/$name.debug"
  strip -o "$out/$name" "$bin/$name"
  # The link names the file without its folder; gdb looks beside the binary.
  (cd "$out" && objcopy --add-gnu-debuglink="$name.debug" "$name")
done
echo "$(pwd)/$out"
