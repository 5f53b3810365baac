#!/usr/bin/env bash
# Runs the tests of every module in the repository — the core and each nested
# module — each in a workspace of its own: the module, and the modules of this
# repository it requires as they are in the tree (scripts/release.sh
# work-for). So a module is built with the dependency versions of its own
# go.mod, as a user who `go get`s it gets them, not with the newest version
# any module of the repository asks for. Arguments go to `go test`.
#
# Without arguments it is the quick run the README gives a newcomer:
# -short -count=1, no race detector. -short skips the large-input memory
# and allocation pins of the core and compiles only the core's
# documentation snippets (README.md lists what it skips). The full suite
# is `bash scripts/test.sh -race -count=1` (.ci/run runs it), with the
# pins run once more without -race.
#
# Every `go test` gets -timeout 10m unless the arguments give one; a package
# that times out is reported as failed with its panic.
#
# Every skipped test is listed with its reason (some tests need
# redis-server, some `npm ci` in internal/mcpnode; see README.md); failed
# tests print their whole output.
#
#   bash scripts/test.sh                    # quick: every module, -short
#   bash scripts/test.sh -race -count=1     # the full suite, with -race
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
[ $# -eq 0 ] && set -- -short -count=1
case " $* " in
  *" -timeout"*) ;;
  *) set -- "$@" -timeout 10m ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! GOWORK=off go build -o "$tmp/testreport" ./scripts/testreport; then
  echo "cannot build scripts/testreport" >&2
  exit 1
fi

status=0
passed=0
failed=0
for mod in $(bash scripts/release.sh modules | awk '{ print $1 }'); do
  echo "=== module $mod"
  work="$tmp/$(echo "$mod" | tr / _).work"
  bash scripts/release.sh work-for "$mod" > "$work" || { failed=$((failed + 1)); status=1; continue; }
  (cd "$mod" && GOWORK="$work" go test -json "$@" ./... 2>&1) | "$tmp/testreport" -module "$mod"
  codes=("${PIPESTATUS[@]}")
  if [ "${codes[0]}" -eq 0 ] && [ "${codes[1]}" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    status=1
  fi
done
echo "modules: $passed passed, $failed failed"
exit $status
