#!/usr/bin/env bash
# Release tooling for the modules of this repository. Every module — the root
# and each folder with its own go.mod — is released at the same version (the
# adapters import the root's internal packages, so they move in lock step).
# docs/releasing.md describes the whole procedure.
#
#   scripts/release.sh modules           # each module: folder, module path, go line
#   scripts/release.sh set-version vX.Y.Z
#       every nested go.mod requires the in-repository modules it uses at
#       vX.Y.Z, with no replace directive; then sync-work
#   scripts/release.sh sync-work         # rewrite go.work from the modules found
#   scripts/release.sh work-for DIR      # print a go.work for testing the module
#       in DIR alone with the in-repository modules it needs (scripts/test.sh)
#   scripts/release.sh check [vX.Y.Z]    # no replace, one version, go.work in sync
#   scripts/release.sh version           # the version the nested modules require
#   scripts/release.sh tags vX.Y.Z       # the tag names: vX.Y.Z, <folder>/vX.Y.Z
#   scripts/release.sh tag vX.Y.Z        # create those tags on HEAD
#   scripts/release.sh toolchain         # the Go toolchain release binaries use
#   scripts/release.sh build-cli OUTDIR [os/arch...]
#       the CLI's release binaries, built from the tree with that toolchain:
#       OUTDIR/toolguard-<os>-<arch>[.exe] (default: every release platform)
#
# A module whose go.mod holds the line
#   // toolguard:not-in-workspace <reason>
# is left out of go.work (its dependencies cannot be resolved together with
# the others') and is developed with GOWORK=off on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off GOFLAGS=-mod=mod

root_path=github.com/toolguard/toolguard
exclude_marker='// toolguard:not-in-workspace'

die() { echo "release.sh: $*" >&2; exit 1; }

# The Go toolchain the CLI's release binaries are built with. The modules'
# go lines stay at what their code needs (go1.24 for the core); a binary
# carries the standard library of the toolchain that built it, and the CLI's
# HTML report goes through html/template, whose escaping fixes GO-2026-6599
# and GO-2026-6600 are in go1.26.9 and go1.27.2 but not in go1.26.8.
# go1.27.3 is the newest toolchain the module proxy serves (GOTOOLCHAIN
# downloads it from there). docs/releasing.md says why.
release_toolchain=go1.27.3

# the platforms of the CLI's release binaries
release_platforms="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"

# module folders, "." first, then the nested ones sorted
module_dirs() {
  find . \( -name .git -o -name testdata -o -name node_modules -o -name vendor \) -prune -o \
    -name go.mod -print | xargs -n1 dirname | sed 's|^\./||' | sort |
    awk '$0 == "." { print; next } { rest[++n] = $0 } END { for (i = 1; i <= n; i++) print rest[i] }'
}

mod_path() { awk '$1 == "module" { print $2; exit }' "$1/go.mod"; }
go_line() { awk '$1 == "go" { print $2; exit }' "$1/go.mod"; }
in_workspace() { ! grep -qF "$exclude_marker" "$1/go.mod"; }

valid_version() {
  [[ "$1" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "not a semantic version: $1"
  [[ "$1" =~ ^v[01]\. ]] || die "$1: a major version ≥ 2 needs /vN module paths"
}

# the in-repository module paths that a go.mod requires: "path version" lines
repo_requires() {
  go mod edit -print "$1/go.mod" | awk -v root="$root_path" '
    $1 == "require" && $2 == "(" { inreq = 1; next }
    inreq && $1 == ")" { inreq = 0; next }
    $1 == "require" { $1 = "" ; sub(/^ /, "") }
    (inreq || $0 ~ /^[^ \t]/) && ($1 == root || index($1, root "/") == 1) && $2 ~ /^v/ { print $1, $2 }'
}

cmd_modules() {
  local d
  for d in $(module_dirs); do
    printf '%-26s %-52s go %s%s\n' "$d" "$(mod_path "$d")" "$(go_line "$d")" \
      "$(in_workspace "$d" || echo ' (not in go.work)')"
  done
}

cmd_set_version() {
  local v=$1 d p req
  valid_version "$v"
  local paths=()
  for d in $(module_dirs); do paths+=("$(mod_path "$d")"); done
  for d in $(module_dirs); do
    [ "$d" = . ] && continue
    local args=()
    for p in "${paths[@]}"; do args+=("-dropreplace=$p"); done
    while read -r req _; do
      [ -n "$req" ] && args+=("-require=$req@$v")
    done < <(repo_requires "$d")
    go mod edit "${args[@]}" "$d/go.mod"
  done
  cmd_sync_work
  echo "every nested module requires the in-repository modules at $v"
}

# the in-repository modules a module needs, itself first, then what it
# requires from the repository, transitively
needs() {
  local seen=" " queue=("$1") d p dir out=()
  while [ ${#queue[@]} -gt 0 ]; do
    d=${queue[0]}; queue=("${queue[@]:1}")
    case "$seen" in *" $d "*) continue ;; esac
    seen="$seen$d "; out+=("$d")
    while read -r p _; do
      [ -z "$p" ] && continue
      dir=$(dir_of "$p") || die "$d requires $p, which is not in the repository"
      queue+=("$dir")
    done < <(repo_requires "$d")
  done
  printf '%s\n' "${out[@]}"
}

dir_of() {
  local d
  for d in $(module_dirs); do
    [ "$(mod_path "$d")" = "$1" ] && { echo "$d"; return 0; }
  done
  return 1
}

# join PREFIX DIR: the folder DIR seen from where PREFIX points
join() {
  if [ "$2" = . ]; then
    if [ "$1" = ./ ]; then echo .; else echo "${1%/}"; fi
  else
    echo "$1$2"
  fi
}

# write_work PREFIX DIR... prints a go.work that uses the given module folders
# (PREFIX joins the folders to where the file lives: "./" or an absolute
# path). Nested modules require in-repository modules at a released version;
# in the workspace that version is the folder in the tree (a go.work replace,
# for that version only: the go command reads the requirements of the
# required version's go.mod even when the module is in the workspace).
write_work() {
  local prefix=$1 d p v max=1.0; shift
  for d in "$@"; do max=$(printf '%s\n%s\n' "$max" "$(go_line "$d")" | sort -V | tail -1); done
  echo "go $max"
  echo
  echo "use ("
  for d in "$@"; do echo "	$(join "$prefix" "$d")"; done
  echo ")"
  local reps
  reps=$(for d in "$@"; do repo_requires "$d"; done | sort -u |
    while read -r p v; do echo "	$p $v => $(join "$prefix" "$(dir_of "$p")")"; done)
  if [ -n "$reps" ]; then
    echo
    echo "replace ("
    echo "$reps"
    echo ")"
  fi
}

cmd_work_for() {
  local d=${1%/}; d=${d#./}; [ -z "$d" ] && d=.
  [ -f "$d/go.mod" ] || die "no module in $1"
  # shellcheck disable=SC2046
  write_work "$PWD/" $(needs "$d")
}

cmd_sync_work() {
  local d uses=() left=()
  for d in $(module_dirs); do
    if in_workspace "$d"; then uses+=("$d"); else left+=("$d"); fi
  done
  local body
  body=$(write_work ./ "${uses[@]}")
  {
    echo "${body%%$'\n'*}"
    echo
    echo "// The workspace for developing the modules of the repository together: each"
    echo "// builds against the others as they are in the tree. Written by"
    echo "// scripts/release.sh sync-work: the go line is the highest of the modules',"
    echo "// and the replaces map the version the nested modules require to the tree."
    echo "// A user of a published module never sees this file. The core's examples"
    echo "// run in the root module alone: GOWORK=off go run ./examples/quickstart."
    if [ ${#left[@]} -gt 0 ]; then
      echo "// Not listed (\"$exclude_marker\" in their go.mod): ${left[*]};"
      echo "// scripts/test.sh tests every module in a workspace of its own."
    fi
    echo "${body#*$'\n'}"
  } > go.work
}

cmd_check() {
  local want=${1:-} d line bad=0 req ver
  for d in $(module_dirs); do
    if grep -nE '^[[:space:]]*replace\b|=>' "$d/go.mod" >/dev/null; then
      echo "$d/go.mod: has a replace directive" >&2; bad=1
    fi
    [ "$d" = . ] && continue
    while read -r req ver; do
      [ -z "$req" ] && continue
      [ -z "$want" ] && want=$ver
      if [ "$ver" != "$want" ]; then
        echo "$d/go.mod: requires $req $ver, not $want" >&2; bad=1
      fi
      [[ "$ver" =~ ^v0\.0\.0-0001 ]] && { echo "$d/go.mod: $req $ver is not a release" >&2; bad=1; }
    done < <(repo_requires "$d")
  done
  local before
  before=$(cat go.work 2>/dev/null || true)
  cmd_sync_work
  if [ "$before" != "$(cat go.work)" ]; then
    echo "go.work was out of date with the modules found (rewritten; see git diff go.work)" >&2
    bad=1
  fi
  [ $bad -eq 0 ] || die "check failed"
  echo "release layout ok: $(module_dirs | wc -l) modules, in-repository requirements at ${want:-(none)}"
}

lockstep_version() {
  local d
  for d in $(module_dirs); do repo_requires "$d"; done | awk '{ print $2 }' | sort -u | head -1
}

tag_names() {
  local v=$1 d
  valid_version "$v"
  for d in $(module_dirs); do
    if [ "$d" = . ]; then echo "$v"; else echo "$d/$v"; fi
  done
}

cmd_tag() {
  local v=$1 t
  cmd_check "$v" >/dev/null
  git diff --quiet HEAD -- || die "commit first: the working tree differs from HEAD"
  for t in $(tag_names "$v"); do
    git tag -a -m "toolguard $t" "$t"
    echo "tagged $t"
  done
}

# The CLI's release binaries, built from the tree (the workspace of
# cmd/toolguard and the in-repository modules it needs) with the release
# toolchain, reproducibly (-trimpath, no VCS stamp).
cmd_build_cli() {
  local out=$1 p os arch bin work platforms
  shift
  platforms=${*:-$release_platforms}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  work=$(mktemp)
  cmd_work_for cmd/toolguard > "$work"
  for p in $platforms; do
    os=${p%/*} arch=${p#*/}
    bin="$out/toolguard-$os-$arch"
    [ "$os" = windows ] && bin="$bin.exe"
    (cd cmd/toolguard && GOWORK="$work" GOFLAGS= GOTOOLCHAIN=$release_toolchain \
      CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false -o "$bin" .) ||
      { rm -f "$work"; die "build $p failed"; }
  done
  rm -f "$work"
  GOTOOLCHAIN=$release_toolchain go version "$out"/toolguard-*
}

case "${1:-}" in
  modules) cmd_modules ;;
  set-version) [ $# -eq 2 ] || die "usage: set-version vX.Y.Z"; cmd_set_version "$2" ;;
  sync-work) cmd_sync_work ;;
  work-for) [ $# -eq 2 ] || die "usage: work-for DIR"; cmd_work_for "$2" ;;
  check) cmd_check "${2:-}" ;;
  version) cmd_check >/dev/null && lockstep_version ;;
  tags) [ $# -eq 2 ] || die "usage: tags vX.Y.Z"; tag_names "$2" ;;
  tag) [ $# -eq 2 ] || die "usage: tag vX.Y.Z"; cmd_tag "$2" ;;
  toolchain) echo "$release_toolchain" ;;
  build-cli) [ $# -ge 2 ] || die "usage: build-cli OUTDIR [os/arch...]"; shift; cmd_build_cli "$@" ;;
  *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
