#!/usr/bin/env bash
# The demo, end to end: builds flowdir, lists the shipped templates, checks
# them, then shows what a broken template looks like to a person.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build -c release --product flowdir
flowdir=$(swift build -c release --show-bin-path)/flowdir

echo; echo "\$ flowdir templates"
"$flowdir" templates
echo; echo "\$ flowdir check workflows/*"
"$flowdir" check workflows/*.jsonc workflows/*.json workflows/*.yaml
echo; echo "\$ flowdir check examples/broken.yaml   # a template with several mistakes"
"$flowdir" check examples/broken.yaml || echo "(exit $?: invalid, as expected)"
