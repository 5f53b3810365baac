// A stand-in opencode plugin for the harness's own tests: it throws on the
// third bash call, so the call does not run and the model reads the message.
import fs from "node:fs"

export const DenyThird = async () => ({
  "tool.execute.before": async (input) => {
    const file = process.env.CLITEST_HOOK_COUNT
    let n = 1
    try { n = Number(fs.readFileSync(file, "utf8")) + 1 } catch {}
    fs.writeFileSync(file, String(n))
    if (n === 3) throw new Error("stand-in hook: call 3 denied")
  },
})
