#!/usr/bin/env bash
# The long form of scripts/fuzz.sh: every fuzz target (or those named) for
# 600 s, two at a time, niced; prints per target the executions, exec/s,
# coverage (libFuzzer's cov: and ft:), corpus, findings and the command.
# The corpus grows in .build-fuzz/corpus/ from one run to the next.
# Results of a run are in Benchmarks/reliability/README.md ("Fuzzing").
#
#   Benchmarks/reliability/fuzz.sh [--seconds N] [--keep-going] [TARGET…]
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/../.."
exec scripts/fuzz.sh --seconds 600 --jobs 2 "$@"
