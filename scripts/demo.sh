#!/usr/bin/env bash
# The demo, end to end: builds flowdir (debug, shared with scripts/test.sh), lists and checks the shipped
# templates, shows a broken one, then makes an instance and looks at it
# the way a person would: ls, show, an edit in a text editor, history, git;
# then runs workflows, the seed's with its stylize step on a real cog server
# that `flowdir jobserver` starts and supervises.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
# The debug build the test command then reuses (scripts/build.sh); an
# installed, optimized flowdir comes from scripts/install.sh.
bash scripts/build.sh --product flowdir
bin=$(pwd)/.build/debug/flowdir
flowdir() { "$bin" "$@"; }
repo=$(pwd)
run() { echo; echo "\$ $*"; "$@"; }

run flowdir templates
run flowdir check workflows/stylize-with-mask.jsonc workflows/describe-image.json workflows/parallel-variants.yaml workflows/review-and-render.yaml
echo; echo "\$ flowdir check examples/broken.yaml   # a template with several mistakes"
flowdir check examples/broken.yaml || echo "(exit $?: invalid, as expected)"

flows=$(mktemp -d)/flows
mkdir -p "$flows" && cd "$flows"
echo; echo "# instances go in $flows"
run flowdir new "$repo/workflows/stylize-with-mask.jsonc" my-photo --title "My photo" --set stylize1.steps=40
run flowdir ls
run flowdir show my-photo
echo; echo "\$ sed -i 's/cfg: 4.0/cfg: 6.5/' my-photo/nodes/stylize1/params.yaml   # a person edits params"
sed -i 's/cfg: 4.0/cfg: 6.5/' my-photo/nodes/stylize1/params.yaml
run flowdir archive my-photo
run flowdir history my-photo
run flowdir rollback my-photo HEAD~2
run git -C my-photo log --oneline
run git -C my-photo status --short
run git -C my-photo fsck --strict

echo; echo "# Running workflows: real ImageMagick work, every step a commit"
run flowdir new "$repo/examples/variants.yaml" variants
run flowdir run variants
run flowdir show variants
run cat variants/nodes/report/out/report.txt
run flowdir new "$repo/examples/stylize-auto.yaml" stylized
run flowdir run stylized
run git -C stylized log --oneline
run flowdir history stylized stylize1
echo; echo "# The seed's stylize step runs on a GPU box through a job API. Here: flowdir jobserver"
echo "# starts a real cog server (examples/stylize-cog, no Docker) and keeps it running, as endpoint 'gpu'."
venv=${FLOWDIR_COG_VENV:-/opt/flowdir-cog}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
jsport=$(port)
"$bin" jobserver --port "$jsport" --dir "$flows/jobserver" --cog-python "$venv" \
  --model "flowdir/stylize=cog:$repo/examples/stylize-cog" >"$flows/jobserver.log" 2>&1 &
js=$!
# SIGTERM: the job server stops its cog server with it.
trap 'kill $js 2>/dev/null || true; wait $js 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -s "http://127.0.0.1:$jsport/health-check" | grep -q READY && break; sleep 0.2; done
cat "$flows/jobserver.log"
printf 'endpoints:\n  gpu: { url: http://127.0.0.1:%s/v1, pollInterval: 1s }\n' "$jsport" >"$flows/config.yaml"
export FLOWDIR_CONFIG="$flows/config.yaml"
# The job server's token (it keeps one in its folder, mode 0600), handed to flowdir as endpoint gpu's.
FLOWDIR_TOKEN_GPU=$(cat "$flows/jobserver/token")
export FLOWDIR_TOKEN_GPU
run cat "$flows/config.yaml"
echo; echo "# The seed's own template waits for people: a question per step, in inbox/"
run flowdir new "$repo/workflows/stylize-with-mask.jsonc" seed
flowdir run seed || echo "(exit $?: waiting on people)"
run cat seed/inbox/load1.await.yaml
run flowdir inbox
echo; echo "\$ cp $repo/workflows/photo.png /tmp/photo.png && mv /tmp/photo.png seed/inbox/load1.image.png   # answer by dropping a file"
cp "$repo/workflows/photo.png" "$flows/photo.png" && mv "$flows/photo.png" seed/inbox/load1.image.png
flowdir run seed || echo "(exit $?: waiting on people)"
echo; echo "\$ convert ... mask.png   # a person draws a mask"
convert -size 240x180 xc:black -fill white -draw "ellipse 120,90 80,60 0,360" "$flows/mask.png"
run flowdir answer seed/mask1 "$flows/mask.png"
run flowdir run seed
run flowdir show seed
run git -C seed log --oneline
run cat seed/nodes/mask1/runs/1/run.yaml
run cat seed/nodes/stylize1/state.yaml
run cat seed/nodes/stylize1/runs/1/log.txt
echo; echo "Results are in $flows"
