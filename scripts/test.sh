#!/usr/bin/env bash
# Runs the tests of every module in the repository — the core and each nested
# module — each against its own go.mod (GOWORK=off), as a user who imports it
# gets it. Arguments go to `go test`; without any, -race -count=1.
#
#   bash scripts/test.sh            # every test of every module, with -race
#   bash scripts/test.sh -short     # quicker
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] && set -- -race -count=1
status=0
passed=0
failed=0
for mod in $(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' | xargs -n1 dirname | sort); do
  echo "=== module $mod"
  if (cd "$mod" && GOWORK=off go test "$@" ./...); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    status=1
  fi
done
echo "modules: $passed passed, $failed failed"
exit $status
