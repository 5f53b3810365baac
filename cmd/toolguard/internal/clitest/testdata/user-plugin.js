// The user's own opencode plugin in the scratch homes of the end-to-end
// tests: it notes each tool call that ran, and so shows that toolguard's
// install kept it working.
import fs from "node:fs"

export const Mine = async () => ({
  "tool.execute.after": async () => {
    fs.appendFileSync(process.env.CLITEST_USER_HOOK_LOG, "user plugin ran\n")
  },
})
