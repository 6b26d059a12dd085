#!/usr/bin/env bash
# The pages' scripts parse: `node --check` on every .js file under
# Sources/*/Pages/ (the pages `flowdir serve` ships; no build step turns
# them into anything else). A syntax error fails with the file and line.
# Run by scripts/test.sh before anything is built.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null; then
  echo "check-pages: node is not installed; get it with: apt-get install nodejs (scripts/setup.sh does)" >&2
  exit 1
fi
shopt -s nullglob
files=(Sources/*/Pages/*.js)
[ ${#files[@]} -gt 0 ] || { echo "check-pages: no page scripts found under Sources/*/Pages/" >&2; exit 1; }
failed=0
for f in "${files[@]}"; do
  # node prints "FILE:LINE", the line, a caret under the error, and the error.
  if ! out=$(node --check "$f" 2>&1); then
    echo "$out" | sed -n '1,5p' >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || { echo "check-pages: a page script does not parse (above)" >&2; exit 1; }
echo "check-pages: ${#files[@]} page scripts parse"
