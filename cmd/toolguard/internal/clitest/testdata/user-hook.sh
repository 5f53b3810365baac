#!/bin/sh
# The user's own hook in the scratch homes of the end-to-end tests: it
# notes that it ran (in $CLITEST_USER_HOOK_LOG), answers nothing, and so
# shows that toolguard's install kept it working.
cat >/dev/null
echo "user hook ran" >> "$CLITEST_USER_HOOK_LOG"
exit 0
