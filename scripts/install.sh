#!/usr/bin/env bash
# Installs flowdir: the binary, its bash/zsh/fish completions and its man
# pages, under one prefix, with a manifest of every file so --uninstall
# removes exactly those (docs/install.md).
#
#   scripts/install.sh [--prefix DIR]             build (release, static Swift runtime) once, then install
#   scripts/install.sh [--prefix DIR] --from BIN  install BIN/flowdir, already built (e.g. .build/release)
#   scripts/install.sh [--prefix DIR] --uninstall remove what the last install put there
#
# PREFIX defaults to /usr/local for root, else ~/.local. Files go to
#   PREFIX/bin/flowdir
#   PREFIX/share/bash-completion/completions/flowdir
#   PREFIX/share/zsh/site-functions/_flowdir
#   PREFIX/share/fish/vendor_completions.d/flowdir.fish
#   PREFIX/share/man/man1/flowdir.1, flowdir-run.1, … (one page a command)
#   PREFIX/share/flowdir/install-manifest.txt
# The watcher as a systemd user service is one command more, said at the end
# (`flowdir service install`); this script never starts anything.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "install: error: $*" >&2; exit 1; }

prefix=""; from=""; mode=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a folder, e.g. --prefix ~/.local"; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --from) [ $# -ge 2 ] || die "--from needs the folder holding a built flowdir, e.g. --from .build/release"; from="$2"; shift 2 ;;
    --from=*) from="${1#*=}"; shift ;;
    --uninstall) mode=uninstall; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install: error: unknown argument '$1'" >&2; usage >&2; exit 64 ;;
  esac
done
if [ -z "$prefix" ]; then
  if [ "$(id -u)" -eq 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi
prefix=$(realpath -m -- "$prefix")
manifest="$prefix/share/flowdir/install-manifest.txt"
# The unit `flowdir service install` writes (Sources/FlowdirCommands/ServiceCommand.swift).
unit="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/flowdir.service"

# The manifest: one absolute path a line, files first, then the folders the
# install made (ending in /), deepest first. Removes each file listed, then
# each such folder if it is empty; never anything outside PREFIX.
remove_installed() {  # remove_installed VERBOSE
  local path removed=0 pages=0 paths=() dirs=()
  mapfile -t paths <"$manifest"
  for path in "${paths[@]}"; do
    case "$path" in
      */../*) echo "install: skipping '$path' in the manifest: it has a '..'" >&2 ;;
      "$prefix"/|"$prefix"/*/) dirs+=("$path") ;;
      "$prefix"/?*)
        if ! [ -e "$path" ] && ! [ -L "$path" ]; then continue; fi
        if ! rm -f -- "$path"; then echo "install: could not remove $path (above); the manifest stays for another try" >&2; return 1; fi
        removed=$((removed + 1))
        # One line a file, except the man pages: one line for all of them.
        case "$path" in */man1/flowdir*.1) pages=$((pages + 1)) ;; *) [ "$1" = 1 ] && echo "  removed $path" ;; esac ;;
      *) echo "install: skipping '$path' in the manifest: not under $prefix" >&2 ;;
    esac
  done
  # The manifest last of the files (an interrupted uninstall can run again),
  # before the folders, so its own is empty by then.
  rm -f -- "$manifest"
  rmdir -- "$(dirname "$manifest")" 2>/dev/null || true
  for path in "${dirs[@]}"; do
    if rmdir -- "$path" 2>/dev/null && [ "$1" = 1 ]; then echo "  removed folder $path"; fi
  done
  if [ "$1" = 1 ] && [ "$pages" -gt 0 ]; then echo "  removed $pages man pages from $prefix/share/man/man1"; fi
  if [ "$1" = 1 ]; then echo "install: removed $removed files (and the manifest) from $prefix"; fi
  return 0
}

if [ "$mode" = uninstall ]; then
  [ -z "$from" ] || die "--from has no meaning with --uninstall"
  [ -f "$manifest" ] || die "no install manifest at $manifest: nothing was installed under $prefix by scripts/install.sh. Pass --prefix with the folder you installed into."
  echo "install: removing flowdir from $prefix (the files listed in $manifest)"
  # The watcher's unit first, while the binary it runs is still there to
  # remove it (`flowdir service uninstall`); only a unit that runs this
  # prefix's binary: another install's unit is left as it is.
  if [ -f "$unit" ]; then
    runs=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
    if [ "$(realpath -m -- "$runs")" = "$(realpath -m -- "$prefix/bin/flowdir")" ] && [ -x "$prefix/bin/flowdir" ]; then
      "$prefix/bin/flowdir" service uninstall | sed 's/^/install: /' || die "flowdir service uninstall failed (above); the files under $prefix are left in place"
    else
      echo "install: a systemd user unit of another flowdir is left in place: $unit (it runs $runs)"
    fi
  fi
  remove_installed 1 || die "uninstall stopped; fix what is said above and run scripts/install.sh --uninstall --prefix $prefix again."
  exit 0
fi

# ---- install ----------------------------------------------------------------
stage=$(mktemp -d)
heartbeat=""
cleanup() { [ -z "$heartbeat" ] || kill "$heartbeat" 2>/dev/null || true; rm -rf "$stage"; }
trap cleanup EXIT

# timed LABEL CMD…: runs CMD with its output in $stage/out and $stage/log
# (shown if it fails), a line a minute while it runs, then "LABEL … N s".
# CMD runs where `set -e` does not apply (it is tested), so the functions
# below return on their first failure themselves.
timed() {
  local label="$1" start=$SECONDS rc=0; shift
  # sleep's output goes nowhere so a caller reading ours is not held open after the kill.
  ( n=0; while sleep 60 >/dev/null 2>&1; do n=$((n + 60)); echo "install:   … still $label ($n s)"; done ) &
  heartbeat=$!
  "$@" >"$stage/out" 2>"$stage/log" || rc=$?
  kill "$heartbeat" 2>/dev/null || true; wait "$heartbeat" 2>/dev/null || true; heartbeat=""
  if [ "$rc" -ne 0 ]; then tail -n 40 "$stage/log" >&2; echo "install: $label failed (exit $rc; its output is above)" >&2; return "$rc"; fi
  echo "install: $label … $((SECONDS - start)) s"
}

if [ -n "$from" ]; then
  bin="$(realpath -m -- "$from")/flowdir"
  [ -x "$bin" ] || die "no flowdir in $from. Build it first (swift build --product flowdir, or bash scripts/release-build.sh --product flowdir), or leave out --from to build a release one here."
  echo "install: installing flowdir into $prefix"
  echo "install: using $bin (--from; nothing is built)"
else
  command -v swift >/dev/null || die "swift is not on PATH: install Swift 6 (https://www.swift.org/install/linux/), or pass --from BINDIR with a flowdir built elsewhere."
  echo "install: installing flowdir into $prefix"
  echo "install: building flowdir (release, static Swift runtime) once; this may take several minutes"
  timed "building flowdir (release)" bash "$repo/scripts/release-build.sh" --product flowdir \
    || die "the build failed. scripts/setup.sh installs what it needs (libgit2-dev, libyaml-dev); run it, then this again."
  bin="$(tail -n 1 "$stage/out")/flowdir"
fi
mkdir -p "$stage/files"
cp "$bin" "$stage/files/flowdir"
bin="$stage/files/flowdir"
version=$("$bin" --version 2>"$stage/log") \
  || { cat "$stage/log" >&2; die "$bin does not run here. It needs libgit2 and libyaml (apt-get install libgit2-1.5 libyaml-0-2, or bash scripts/setup.sh)."; }

# Completions: each shell's script, as the binary itself writes it (swift-argument-parser).
completions() {
  local sh
  for sh in bash zsh fish; do
    "$bin" --generate-completion-script "$sh" >"$stage/files/completion.$sh" && [ -s "$stage/files/completion.$sh" ] || return 1
  done
}
timed "writing bash, zsh and fish completions" completions

# Man pages: swift-argument-parser's generate-manual, run on this binary.
# The package plugin (`swift package generate-manual`) would build every
# product in release again first; the tool alone builds in seconds, into
# .build-manual/, from the checkout SwiftPM already resolved.
ap="$repo/.build/checkouts/swift-argument-parser"
if ! [ -d "$ap/Tools/generate-manual" ]; then
  command -v swift >/dev/null || die "the man pages need swift (to build swift-argument-parser's generate-manual); put it on PATH and run this again."
  timed "resolving packages (for swift-argument-parser)" swift package --package-path "$repo" resolve \
    || die "swift package resolve failed; see above."
fi
command -v swift >/dev/null || die "the man pages need swift (to build swift-argument-parser's generate-manual); put it on PATH and run this again."
timed "building generate-manual (swift-argument-parser's tool)" \
  swift build --package-path "$ap" --scratch-path "$repo/.build-manual" --product generate-manual \
  || die "generate-manual did not build; see above."
manual() {
  mkdir -p "$stage/man" || return 1
  # Dated by the last commit, so the same source gives the same pages.
  local date; date=$(git -C "$repo" log -1 --format=%cs 2>/dev/null || date +%F)
  "$repo/.build-manual/debug/generate-manual" "$bin" --multi-page --date "$date" --output-directory "$stage/man" || return 1
  # flowdir.run.1 → flowdir-run.1 (and in the title and SEE ALSO), as git
  # names its pages: man-db then finds `man flowdir run` too. An empty line
  # is a paragraph break: mdoc's is .Pp (groff warns about empty lines).
  local f name
  for f in "$stage"/man/*.1; do
    sed -i -e '/^\.\(Dt\|Xr\) /{s/\./-/g;s/^-/./}' -e 's/^$/.Pp/' "$f" || return 1
    name=$(basename "$f" .1)
    [ "$name" = flowdir ] || mv "$f" "$stage/man/${name//./-}.1" || return 1
  done
  [ -s "$stage/man/flowdir.1" ]
}
timed "writing man pages (generate-manual --multi-page)" manual

# Into PREFIX: the previous install's files out first (a page of a command
# since removed must not stay), then each file, noting the folders made.
if [ -f "$manifest" ]; then remove_installed 0 || die "could not remove the previous install (above)."; fi
new="$stage/manifest"; : >"$new"; : >"$stage/dirs"
place() {  # place MODE SOURCE DEST
  local dir d; dir=$(dirname "$3"); d="$dir"
  # Only folders in PREFIX (or PREFIX itself) are the install's to remove later.
  while ! [ -d "$d" ] && [ "${d#"$prefix"}" != "$d" ]; do echo "$d/" >>"$stage/dirs"; d=$(dirname "$d"); done
  mkdir -p "$dir" && install -m "$1" "$2" "$3" && echo "$3" >>"$new"
}
copy_all() {
  place 0755 "$bin" "$prefix/bin/flowdir" || return 1
  place 0644 "$stage/files/completion.bash" "$prefix/share/bash-completion/completions/flowdir" || return 1
  place 0644 "$stage/files/completion.zsh" "$prefix/share/zsh/site-functions/_flowdir" || return 1
  place 0644 "$stage/files/completion.fish" "$prefix/share/fish/vendor_completions.d/flowdir.fish" || return 1
  local f
  for f in "$stage"/man/*.1; do place 0644 "$f" "$prefix/share/man/man1/$(basename "$f")" || return 1; done
  local d; d=$(dirname "$manifest")
  while ! [ -d "$d" ] && [ "${d#"$prefix"}" != "$d" ]; do echo "$d/" >>"$stage/dirs"; d=$(dirname "$d"); done
  mkdir -p "$(dirname "$manifest")" || return 1
  # Folders deepest first, so each is empty when uninstall reaches it.
  awk '{ print length($0) "\t" $0 }' "$stage/dirs" | sort -rn | cut -f2- >>"$new"
  install -m 0644 "$new" "$manifest"
}
timed "copying files into $prefix" copy_all \
  || die "could not write into $prefix. Pick a folder you can write (--prefix ~/.local), or run as root for /usr/local."

pages=$(grep -c '/man1/[^/]*\.1$' "$manifest" || true)
echo "install: installed flowdir $version into $prefix: the binary, 3 completion scripts, $pages man pages (each file listed in $manifest)"
case ":$PATH:" in
  *":$prefix/bin:"*) echo "install: flowdir is on your PATH: try 'flowdir --version' and 'man flowdir'" ;;
  *) echo "install: $prefix/bin is not on your PATH; add it (man finds the pages from it too):"
     echo "  echo 'export PATH=\"$prefix/bin:\$PATH\"' >> ~/.bashrc   # then open a new shell" ;;
esac
echo "install: to run the watcher as a systemd user service: flowdir service install --root DIR (docs/install.md)"
echo "install: to remove it all: scripts/install.sh --uninstall --prefix $prefix"
