#!/usr/bin/env bash
# Runs every fuzz target of every module for a while each (default 30s),
# minimizing a failing input for at most 5s so that a run is not spent on
# one input. Failing inputs land in the package's testdata/fuzz, where
# `go test` replays them.
#
#   bash scripts/fuzz.sh          # 30s per target
#   bash scripts/fuzz.sh 2m       # longer
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-30s}
for mod in $(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' | xargs -n1 dirname | sort); do
  (
    cd "$mod"
    for pkg in $(GOWORK=off go list ./...); do
      for target in $(GOWORK=off go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
        echo "=== $pkg $target ($time)"
        GOWORK=off go test -run '^$' -fuzz "^$target\$" -fuzztime "$time" -fuzzminimizetime 5s "$pkg"
      done
    done
  )
done
