#!/bin/sh
# A stand-in hook for the harness's own test: it counts its invocations in
# $CLITEST_HOOK_COUNT and denies the third (exit 2, the reason on stderr),
# the way Claude Code and Codex read a deny.
cat >/dev/null
n=$(( $(cat "$CLITEST_HOOK_COUNT" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$CLITEST_HOOK_COUNT"
if [ "$n" -eq 3 ]; then
  echo "stand-in hook: call 3 denied" >&2
  exit 2
fi
exit 0
