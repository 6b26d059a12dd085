#!/usr/bin/env bash
# Fuzzing of flowdir's parsers with libFuzzer and AddressSanitizer: one
# target per input format, each one file in Fuzz/Targets/ (see Fuzz/README.md).
# Built apart from `swift build`, with swiftc, into .build-fuzz/: only the
# modules a target names (FlowdirCore, FlowdirTemplates and libyaml; never
# swift-nio, Hummingbird or BoringSSL). A crash, a hang (-timeout) or an
# out-of-memory (-rss_limit_mb) in any target fails the run.
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [TARGET…]   build, then run each target N s (default 20), J at a time (default 2)
#   scripts/fuzz.sh --keep-going …                        go on after a crash (libFuzzer's fork mode), counting findings by kind
#   scripts/fuzz.sh --build-only [TARGET…]                build only
#   scripts/fuzz.sh --list                                the targets
#   scripts/fuzz.sh --reproduce TARGET FILE               run one input (a finding) through TARGET
#   scripts/fuzz.sh --minimize TARGET FILE                shrink a finding to FILE.min
#
# The corpus each target grows is kept in .build-fuzz/corpus/<target>/ (the
# seeds, from the repository's own files, are assembled afresh each run into
# .build-fuzz/seeds/<target>/); findings go to .build-fuzz/findings/<target>/.
# Benchmarks/reliability/fuzz.sh is the long form (600 s a target).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${FLOWDIR_FUZZ_OUT:-.build-fuzz}"  # another folder keeps a second run apart
SECONDS_EACH=20
JOBS=2
MODE=run
KEEP_GOING=
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --keep-going) KEEP_GOING=1; shift ;;
    --build-only) MODE=build; shift ;;
    --list) MODE=list; shift ;;
    --reproduce|--minimize) MODE="${1#--}"; TARGETS=("$2"); FILE="$3"; shift 3 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done

ALL=()
for f in Fuzz/Targets/*.swift; do ALL+=("$(basename "$f" .swift)"); done
if [ "$MODE" = list ]; then printf '%s\n' "${ALL[@]}"; exit 0; fi
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
for t in "${TARGETS[@]}"; do
  [ -f "Fuzz/Targets/$t.swift" ] || { echo "fuzz.sh: no target '$t' (Fuzz/Targets/$t.swift); targets: ${ALL[*]}" >&2; exit 2; }
done

# Optimised (as a release build runs) with debug info for the reports;
# -enable-testing so a harness can compare an internal fast path with the
# full one (FlatYAML, RunRecordLines).
FLAGS=(-swift-version 6 -parse-as-library -O -g -sanitize=fuzzer,address -enable-testing -use-ld=lld)
mkdir -p "$OUT/modules" "$OUT/bin" "$OUT/logs"

# A header line of a target: `// fuzz-<key>: value…`.
header() { sed -n "s|^// fuzz-$2: ||p" "Fuzz/Targets/$1.swift" | head -1; }

# Sources, dependencies and flags of the modules a target may name.
module_sources() {
  case "$1" in
    FlowdirCore) find Sources/FlowdirCore -name '*.swift' | sort ;;
    FlowdirTemplates) find Sources/FlowdirTemplates -name '*.swift' | sort ;;
    *) echo "fuzz.sh: unknown module $1 (add it to module_sources in scripts/fuzz.sh)" >&2; exit 2 ;;
  esac
}
module_deps() { case "$1" in FlowdirTemplates) echo FlowdirCore ;; esac; }
module_flags() { case "$1" in FlowdirTemplates) echo "-I Sources/CYaml" ;; esac; }
link_flags() { case "$1" in FlowdirTemplates) echo "-lyaml" ;; esac; }

# A digest of files and flags: a module or a target is rebuilt only when it changes.
digest() { { printf '%s\n' "${FLAGS[*]}" "$@"; cat "$@"; } | sha1sum | cut -d' ' -f1; }

BUILT=" "
build_module() {
  local m="$1" dep
  case "$BUILT" in *" $m "*) return ;; esac
  for dep in $(module_deps "$m"); do build_module "$dep"; done
  local sources; mapfile -t sources < <(module_sources "$m")
  local key; key="$(digest "${sources[@]}" $(for dep in $(module_deps "$m"); do echo "$OUT/modules/$dep.stamp"; done))"
  if [ "$(cat "$OUT/modules/$m.stamp" 2>/dev/null)" != "$key" ]; then
    echo "fuzz.sh: building module $m (${#sources[@]} files)"
    local start=$SECONDS
    # shellcheck disable=SC2046
    if ! nice -n 10 swiftc "${FLAGS[@]}" $(module_flags "$m") -I "$OUT/modules" -module-name "$m" \
        -emit-module -emit-module-path "$OUT/modules/$m.swiftmodule" -emit-library -static -o "$OUT/modules/lib$m.a" \
        "${sources[@]}" >"$OUT/logs/module-$m.log" 2>&1; then
      grep -E 'error' "$OUT/logs/module-$m.log" | head -20 >&2; echo "fuzz.sh: module $m failed to build ($OUT/logs/module-$m.log)" >&2; exit 1
    fi
    echo "$key" >"$OUT/modules/$m.stamp"
    echo "fuzz.sh: module $m built in $((SECONDS - start)) s"
  fi
  BUILT="$BUILT$m "
}

# Every module a target needs, dependencies first.
target_modules() {
  local seen=" " m
  add() { local d; for d in $(module_deps "$1"); do add "$d"; done; case "$seen" in *" $1 "*) ;; *) seen="$seen$1 " ;; esac; }
  for m in $(header "$1" modules); do add "$m"; done
  echo $seen
}

build_target() {
  local t="$1" m modules sources link=()
  modules="$(target_modules "$t")"
  for m in $modules; do build_module "$m"; done
  # shellcheck disable=SC2207
  sources=(Fuzz/Support/Fuzzing.swift $(header "$t" sources) "Fuzz/Targets/$t.swift")
  # Dependents link before what they depend on.
  for m in $(echo "$modules" | tr ' ' '\n' | tac); do link+=("-l$m"); done
  for m in $modules; do read -r -a more <<<"$(link_flags "$m")"; link+=("${more[@]}"); done
  local key; key="$(digest "${sources[@]}" $(for m in $modules; do echo "$OUT/modules/$m.stamp"; done))"
  if [ "$(cat "$OUT/bin/$t.stamp" 2>/dev/null)" != "$key" ] || ! [ -x "$OUT/bin/$t" ]; then
    local start=$SECONDS
    # shellcheck disable=SC2046
    if ! nice -n 10 swiftc "${FLAGS[@]}" -module-name FuzzTarget -I "$OUT/modules" -L "$OUT/modules" \
        $(for m in $modules; do module_flags "$m"; done) "${sources[@]}" "${link[@]}" -o "$OUT/bin/$t" >"$OUT/logs/build-$t.log" 2>&1; then
      grep -E 'error' "$OUT/logs/build-$t.log" | head -20 >&2; echo "fuzz.sh: target $t failed to build ($OUT/logs/build-$t.log)" >&2; exit 1
    fi
    echo "$key" >"$OUT/bin/$t.stamp"
    echo "fuzz.sh: target $t built in $((SECONDS - start)) s"
  fi
}

# The seeds of a target, from the repository's own files: the globs of its
# `fuzz-seeds:` header, `docs:yaml` / `docs:json` for the fenced examples in
# README.md and docs/, and whatever is in Fuzz/Seeds/<target>/.
assemble_seeds() {
  local t="$1" dir="$OUT/seeds/$1" pattern f n=0
  rm -rf "$dir"; mkdir -p "$dir"
  shopt -s nullglob
  for pattern in $(header "$t" seeds) "Fuzz/Seeds/$t/*"; do
    case "$pattern" in
      docs:*)
        awk -v lang="${pattern#docs:}" -v dir="$dir" '
          $0 ~ "^```" lang "$" { on = 1; n++; file = dir "/docs-" n; next }
          /^```/ { on = 0; next }
          on { print > file }' README.md docs/*.md ;;
      *)
        # shellcheck disable=SC2086
        for f in $pattern; do
          [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1048576 ] || continue
          n=$((n + 1)); cp "$f" "$dir/$(printf '%04d' $n)-$(basename "$f")"
        done ;;
    esac
  done
  shopt -u nullglob
}

for t in "${TARGETS[@]}"; do build_target "$t"; done
[ "$MODE" = build ] && exit 0

t="${TARGETS[0]}"
case "$MODE" in
  reproduce) SWIFT_BACKTRACE=enable=no exec "$OUT/bin/$t" -timeout=10 -rss_limit_mb=2048 "$FILE" ;;
  minimize) SWIFT_BACKTRACE=enable=no exec "$OUT/bin/$t" -minimize_crash=1 -runs=200000 -timeout=10 -rss_limit_mb=2048 -exact_artifact_path="$FILE.min" "$FILE" ;;
esac

command_of() {
  local t="$1" dict
  dict="$(header "$t" dict)"
  echo "SWIFT_BACKTRACE=enable=no nice -n 10 $OUT/bin/$t -max_total_time=$SECONDS_EACH -timeout=10 -rss_limit_mb=2048" \
    "-print_final_stats=1${KEEP_GOING:+ -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1}" \
    "-artifact_prefix=$OUT/findings/$t/${dict:+ -dict=Fuzz/Dictionaries/$dict.dict} $OUT/corpus/$t $OUT/seeds/$t"
}

run_target() {
  local t="$1"
  assemble_seeds "$t"
  mkdir -p "$OUT/corpus/$t" "$OUT/findings/$t"
  ls "$OUT/findings/$t" | sort >"$OUT/logs/$t.before"
  local status=0
  # shellcheck disable=SC2046
  env $(command_of "$t") >"$OUT/logs/$t.log" 2>&1 || status=$?
  echo "$status" >"$OUT/logs/$t.status"
}

# What broke, and where, for one finding: its input run through the target
# again, the property or Swift runtime failure (a trap) it stops at, else
# libFuzzer's or ASan's words; then the first Swift frame outside Fuzzing.swift.
classify() {
  local t="$1" file="$2" out why site
  out="$(SWIFT_BACKTRACE=enable=no "$OUT/bin/$t" -timeout=10 -rss_limit_mb=2048 "$file" 2>&1 || true)"
  why="$(grep -m1 -oE 'fuzz property broken: .{0,160}' <<<"$out" || grep -m1 -oE 'Swift runtime failure: [^/]*' <<<"$out" \
    || grep -m1 -oE 'ERROR: (libFuzzer|AddressSanitizer): [a-z -]+' <<<"$out" || echo "no failure when run again (${file##*/})")"
  site="$(grep -E '^ +#[0-9]+ ' <<<"$out" | grep -oE '[^ ]+\.swift:[0-9]+' | grep -v 'Fuzz/Support/Fuzzing.swift' | head -1 \
    | sed -E 's#^.*/(Sources|Fuzz)/#\1/#' || true)"
  echo "${why% }${site:+ at $site}"
}

echo "fuzz.sh: running ${#TARGETS[@]} target(s) for ${SECONDS_EACH} s each, $JOBS at a time${KEEP_GOING:+, going on after crashes}"
running=0
for t in "${TARGETS[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  run_target "$t" &
  running=$((running + 1))
done
wait

# Per target: executions, exec/s, coverage (libFuzzer's cov: edges and ft:
# features, from its last status line), corpus, findings; then the commands
# and what each finding is (same kinds counted together).
failed=0
printf '\n%-15s %12s %8s %6s %7s %7s %8s  %s\n' target executions exec/s cov ft corpus findings result
for t in "${TARGETS[@]}"; do
  log="$OUT/logs/$t.log"
  status="$(cat "$OUT/logs/$t.status")"
  comm -13 "$OUT/logs/$t.before" <(ls "$OUT/findings/$t" | sort) >"$OUT/logs/$t.found"
  found="$(wc -l <"$OUT/logs/$t.found")"
  last="$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)"
  cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  if [ -z "$execs" ] && [ -n "$last" ]; then  # fork mode: its status lines only
    execs="$(sed -E 's/^#([0-9]+).*/\1/' <<<"$last")"
    rate=$((execs / SECONDS_EACH))
  fi
  corpus="$(ls "$OUT/corpus/$t" | wc -l)"
  result=ok
  if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then result="FAILED (exit $status; $log)"; failed=1; fi
  printf '%-15s %12s %8s %6s %7s %7s %8s  %s\n' "$t" "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "$corpus" "$found" "$result"
done
echo
for t in "${TARGETS[@]}"; do echo "$t: $(command_of "$t")"; done
if [ "$failed" -ne 0 ]; then
  echo
  for t in "${TARGETS[@]}"; do
    if ! [ -s "$OUT/logs/$t.found" ] && [ "$(cat "$OUT/logs/$t.status")" -eq 0 ]; then continue; fi
    echo "== $t:"
    [ -s "$OUT/logs/$t.found" ] || { echo "   exit $(cat "$OUT/logs/$t.status") with no finding kept; see $OUT/logs/$t.log"; continue; }
    while read -r f; do classify "$t" "$OUT/findings/$t/$f"; done <"$OUT/logs/$t.found" | sort | uniq -c | sed 's/^ */   /'
    head -3 "$OUT/logs/$t.found" | sed "s|^|   $OUT/findings/$t/|"
  done
  echo "fuzz.sh: findings above; run one again with: scripts/fuzz.sh --reproduce TARGET FILE; shrink it with --minimize" >&2
  exit 1
fi
