#!/usr/bin/env bash
# Runs every fuzz target of every module for a while each (default 30s),
# minimizing a failing input for at most 5s so that a run is not spent on
# one input. Failing inputs land in the package's testdata/fuzz, where
# `go test` replays them. Each module is built in a workspace of its own,
# as scripts/test.sh does (scripts/release.sh work-for): the module and
# the modules of this repository it requires, as they are in the tree.
#
# It fails when a module's packages cannot be listed or built, when a
# target fails, and when no target at all was found.
#
#   bash scripts/fuzz.sh          # 30s per target
#   bash scripts/fuzz.sh 2m       # longer
#   bash scripts/fuzz.sh -list    # only list the targets (each package built)
#
# The fuzzing runs with the release toolchain (scripts/release.sh), not the
# machine's Go: go1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" when -fuzztime ends while a worker is busy
# (go.dev/issue/75804; no input is written, a rerun passes), and go1.27
# has the fix. GOTOOLCHAIN fetches it through the module proxy once.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-30s}
GOTOOLCHAIN=$(sed -n 's/^release_toolchain=//p' scripts/release.sh)
export GOTOOLCHAIN
[ -n "$GOTOOLCHAIN" ] || { echo "fuzz.sh: no release_toolchain in scripts/release.sh"; exit 1; }
echo "fuzz toolchain: $(go version)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

targets=0
for mod in $(bash scripts/release.sh modules | awk '{ print $1 }'); do
  work="$tmp/$(echo "$mod" | tr / _).work"
  bash scripts/release.sh work-for "$mod" > "$work"
  pkgs=$(cd "$mod" && GOWORK="$work" go list ./...)
  for pkg in $pkgs; do
    # go test -list builds the package's tests: a package that does not
    # build fails here, fuzz targets or not.
    list=$(cd "$mod" && GOWORK="$work" go test -list '^Fuzz' "$pkg")
    for target in $(echo "$list" | grep '^Fuzz' || true); do
      targets=$((targets + 1))
      echo "=== $pkg $target ($time)"
      [ "$time" = -list ] && continue
      (cd "$mod" && GOWORK="$work" go test -run '^$' -fuzz "^$target\$" -fuzztime "$time" -fuzzminimizetime 5s "$pkg")
    done
  done
done
echo "fuzz targets: $targets"
[ "$targets" -gt 0 ]
