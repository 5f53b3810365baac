#!/bin/sh
# A stand-in hook for the harness's own tests: it counts its invocations in
# $CLITEST_HOOK_COUNT and denies the third in the agent's way
# ($CLITEST_HOOK_FORMAT): exit 2 with the reason on stderr (Claude Code,
# Codex, Gemini CLI), a permissionDecision on stdout (Copilot CLI), or an
# overrideInput that replaces the command with one printing the reason
# (Cline, which has no deny the model reads).
cat >/dev/null
n=$(( $(cat "$CLITEST_HOOK_COUNT" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$CLITEST_HOOK_COUNT"
[ "$n" -eq 3 ] || exit 0
reason="stand-in hook: call 3 denied"
case "$CLITEST_HOOK_FORMAT" in
copilot) printf '{"permissionDecision":"deny","permissionDecisionReason":"%s"}\n' "$reason" ;;
cline) printf '{"overrideInput":{"commands":["echo %s"]}}\n' "'$reason'" ;;
*) echo "$reason" >&2; exit 2 ;;
esac
exit 0
