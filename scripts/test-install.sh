#!/usr/bin/env bash
# scripts/install.sh, for real, into a temporary prefix, with an already
# built flowdir (nothing of flowdir is built here; generate-manual is, once,
# in seconds): the binary runs, man shows its pages, bash completes
# `flowdir ru<TAB>` to run, zsh and fish files parse (when those shells are
# here), a second install replaces the first, and --uninstall removes every
# file the manifest lists and nothing else. Run by scripts/test.sh.
#
#   scripts/test-install.sh [BINDIR]   BINDIR holds flowdir (default .build/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
bindir="${1:-.build/debug}"
[ -x "$bindir/flowdir" ] || { echo "test-install: no $bindir/flowdir; build it first: swift build --product flowdir" >&2; exit 1; }
command -v man >/dev/null || { echo "test-install: man is not installed; get it with: apt-get install man-db (scripts/setup.sh does)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
checks=0
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }
ok() { checks=$((checks + 1)); }

# Someone else's files in two folders the install also writes into: they must outlive --uninstall.
mkdir -p "$prefix/bin" "$prefix/share/man/man1"
echo '#!/bin/sh' >"$prefix/bin/other-tool"
echo '.Dd x' >"$prefix/share/man/man1/other.1"

bash scripts/install.sh --prefix "$prefix" --from "$bindir" >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log" >&2; fail "scripts/install.sh --from $bindir failed (its output is above)"; }
manifest="$prefix/share/flowdir/install-manifest.txt"
[ -s "$manifest" ] || fail "no manifest at $manifest"; ok
grep -q "install: writing man pages .* s$" "$tmp/install.log" || fail "install did not report its stages with their time"; ok
[ "$(grep -o '3 completion scripts, [0-9]* man pages' "$tmp/install.log")" = "3 completion scripts, $(ls "$prefix"/share/man/man1/flowdir*.1 | wc -l) man pages" ] \
  || fail "install did not count the man pages it installed: $(tail -n 5 "$tmp/install.log")"; ok

# The binary.
[ "$("$prefix/bin/flowdir" --version)" = "$("$bindir/flowdir" --version)" ] || fail "$prefix/bin/flowdir --version differs from $bindir's"; ok

# Man pages: the main one and one a subcommand, found by man through MANPATH, rendered without a groff warning.
[ -f "$prefix/share/man/man1/flowdir-run.1" ] || fail "no page flowdir-run.1"; ok
page=$(MANPATH="$prefix/share/man" MANWIDTH=100 man -P cat flowdir 2>"$tmp/man.err") || fail "man flowdir: $(cat "$tmp/man.err")"
grep -q '^NAME' <<<"$page" && grep -q 'flowdir — Run AI and media workflows' <<<"$page" || fail "man flowdir has no NAME section: $page"; ok
grep -q 'flowdir-run(1)' <<<"$page" || fail "man flowdir's SEE ALSO does not name flowdir-run(1)"; ok
page=$(MANPATH="$prefix/share/man" man -P cat flowdir run 2>/dev/null) || fail "man flowdir run found nothing"
grep -q 'flowdir run — ' <<<"$page" || fail "man flowdir run is not the page of flowdir run"; ok
for f in "$prefix"/share/man/man1/flowdir*.1; do
  warnings=$(man -l -P cat "$f" 2>&1 >/dev/null) || fail "man -l $f failed: $warnings"
  [ -z "$warnings" ] || fail "man -l $f warns: $warnings"
done; ok

# bash: the completion loads, registers _flowdir, and completes subcommands.
complete_bash() {  # complete_bash WORD… : what bash offers for the last word
  PATH="$prefix/bin:$PATH" bash -c '
    source "$0" || exit 1
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _flowdir flowdir "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' "$prefix/share/bash-completion/completions/flowdir" "$@"
}
PATH="$prefix/bin:$PATH" bash -c 'source "$0" && complete -p flowdir' "$prefix/share/bash-completion/completions/flowdir" \
  | grep -q -- '-F _flowdir flowdir' || fail "sourcing the bash completion does not register flowdir"; ok
[ "$(complete_bash flowdir ru)" = run ] || fail "bash completes 'flowdir ru' to '$(complete_bash flowdir ru)', not 'run'"; ok
[ "$(complete_bash flowdir storage ver)" = verify ] || fail "bash completes 'flowdir storage ver' to '$(complete_bash flowdir storage ver)', not 'verify'"; ok

# zsh and fish: there, and parsed by the shell when it is installed.
zshfile="$prefix/share/zsh/site-functions/_flowdir"; fishfile="$prefix/share/fish/vendor_completions.d/flowdir.fish"
grep -q '^#compdef flowdir' "$zshfile" || fail "$zshfile is not a zsh completion (#compdef flowdir)"; ok
grep -q "^complete -c 'flowdir'" "$fishfile" || fail "$fishfile is not a fish completion"; ok
if command -v zsh >/dev/null; then zsh -n "$zshfile" || fail "zsh cannot parse $zshfile"; ok; else echo "test-install: zsh is not installed; its file is checked by content only"; fi
if command -v fish >/dev/null; then fish --no-execute "$fishfile" || fail "fish cannot parse $fishfile"; ok; else echo "test-install: fish is not installed; its file is checked by content only"; fi

# The manifest lists every file the install wrote, and only those.
find "$prefix" -type f ! -name other-tool ! -name other.1 ! -name install-manifest.txt | sort >"$tmp/found"
grep -v '/$' "$manifest" | sort >"$tmp/listed"
diff "$tmp/found" "$tmp/listed" >&2 || fail "the manifest and the installed files differ (above: < installed, > listed)"; ok

# Installing again replaces the first install.
bash scripts/install.sh --prefix "$prefix" --from "$bindir" >"$tmp/install2.log" 2>&1 \
  || { cat "$tmp/install2.log" >&2; fail "a second install over the first failed"; }
grep -v '/$' "$manifest" | sort | diff "$tmp/listed" - >&2 || fail "a second install listed other files"; ok

# The watcher's unit from the installed binary, enabled as `systemctl --user enable` would.
export XDG_CONFIG_HOME="$tmp/config"
units="$XDG_CONFIG_HOME/systemd/user"
mkdir -p "$tmp/flows" "$units/default.target.wants"
FLOWDIR_CONFIG= "$prefix/bin/flowdir" service install --root "$tmp/flows" >"$tmp/service.log" 2>&1 \
  || { cat "$tmp/service.log" >&2; fail "flowdir service install failed"; }
grep -q "^ExecStart=$prefix/bin/flowdir watch" "$units/flowdir.service" || fail "the unit does not run the installed binary: $(grep ExecStart "$units/flowdir.service")"; ok
ln -s ../flowdir.service "$units/default.target.wants/flowdir.service"
# Uninstall removes it first (flowdir service uninstall) and says how to stop it.
cp "$manifest" "$tmp/manifest"
bash scripts/install.sh --prefix "$prefix" --uninstall >"$tmp/uninstall.log" 2>&1 \
  || { cat "$tmp/uninstall.log" >&2; fail "--uninstall failed"; }
while IFS= read -r path; do
  case "$path" in */) [ ! -d "$path" ] || [ "$path" = "$prefix/bin/" ] || [ "$path" = "$prefix/share/man/man1/" ] \
                      || fail "--uninstall left the folder $path it made" ;;
                  *) [ ! -e "$path" ] || fail "--uninstall left $path" ;; esac
done <"$tmp/manifest"; ok
[ ! -e "$prefix/bin/flowdir" ] && [ ! -e "$manifest" ] || fail "--uninstall left the binary or the manifest"; ok
# Exactly what was there before: the other files and their folders; the folders the install made are gone.
left=$(cd "$prefix" && find . | sort | tr '\n' ' ')
[ "$left" = ". ./bin ./bin/other-tool ./share ./share/man ./share/man/man1 ./share/man/man1/other.1 " ] \
  || fail "--uninstall did not leave exactly what was there before: $left"; ok
[ ! -e "$units/flowdir.service" ] && [ ! -L "$units/default.target.wants/flowdir.service" ] \
  || fail "--uninstall left the systemd unit or its enabling link: $(find "$units" | tr '\n' ' ')"; ok
grep -q 'systemctl --user stop flowdir.service && systemctl --user daemon-reload' "$tmp/uninstall.log" || fail "--uninstall did not say how to stop the watcher's service"; ok
grep -q "removed $(grep -c '/man1/[^/]*\.1$' "$tmp/manifest") man pages" "$tmp/uninstall.log" || fail "--uninstall did not report the man pages it removed"; ok
if bash scripts/install.sh --prefix "$prefix" --uninstall >/dev/null 2>&1; then fail "a second --uninstall found something to remove"; fi; ok

# Into a prefix that does not exist yet: --uninstall removes it too, and what it made above it stays.
# A unit that runs another flowdir is not this install's: it stays.
fresh="$tmp/fresh/prefix"
bash scripts/install.sh --prefix "$fresh" --from "$bindir" >"$tmp/install3.log" 2>&1 \
  || { cat "$tmp/install3.log" >&2; fail "an install into a new folder failed"; }
printf '# Written by `flowdir service install`.\n[Service]\nExecStart=/opt/other/bin/flowdir watch /srv\n' >"$units/flowdir.service"
bash scripts/install.sh --prefix "$fresh" --uninstall >"$tmp/uninstall3.log" 2>&1 \
  || { cat "$tmp/uninstall3.log" >&2; fail "--uninstall of an install into a new folder failed"; }
[ -f "$units/flowdir.service" ] && grep -q "of another flowdir is left in place" "$tmp/uninstall3.log" \
  || fail "--uninstall removed, or did not name, the unit of another flowdir: $(cat "$tmp/uninstall3.log")"; ok
[ ! -e "$fresh" ] && [ -d "$tmp/fresh" ] || fail "--uninstall left $fresh, or removed its parent: $(find "$tmp/fresh" | tr '\n' ' ')"; ok

echo "test-install: ok ($checks checks; installed and removed $(grep -vc '/$' "$tmp/manifest") files in $prefix)"
