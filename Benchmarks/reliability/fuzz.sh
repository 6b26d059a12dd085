#!/usr/bin/env bash
# The long form of scripts/fuzz.sh: every fuzz target (or those named) for
# 600 s, two at a time, niced; prints per target the executions, exec/s,
# coverage (libFuzzer's cov: and ft:), corpus, findings and the command.
# The corpus grows in .build-fuzz/corpus/ from one run to the next.
# Results of a run are in Benchmarks/README.md ("Fuzzing").
#
#   Benchmarks/reliability/fuzz.sh [--seconds N] [--keep-going] [TARGET…]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec scripts/fuzz.sh --seconds 600 --jobs 2 "$@"
