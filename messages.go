package toolguard

import (
	"fmt"
	"strconv"
	"strings"
)

// HintMarker starts the message of every Hint or Abort given by a loop
// rule (a repeat, a similar query, a repeated failure, a cycle, churn or a
// tool's limit), so a reader of a transcript can tell a skipped call from a
// real result. The other refusals carry their own markers: a used-up turn
// budget starts with "[budget-exhausted]", a quota store that did not
// answer with "[quota-unavailable]", a call without a tool name with
// "[invalid-call]". A harness tells a skipped call by its Decision (or
// Result.Decision from Run), never by the text.
const HintMarker = "[loop-detected]"

// Markers of the refusals that are not loops.
const (
	budgetMarker  = "[budget-exhausted]"
	storeMarker   = "[quota-unavailable]"
	invalidMarker = "[invalid-call]"
)

// loopMessage is a loop rule's refusal: HintMarker, then the text of format
// and args (that the call was not executed, and what to do instead).
func loopMessage(format string, args ...any) string {
	return HintMarker + " " + fmt.Sprintf(format, args...)
}

func turnLimitMessage(tool string, limit int) string {
	return loopMessage("Tool '%s' has reached its execution limit (%d) for this turn. This call was not executed. "+
		"Use the results you already have, change the approach, or answer the user.", tool, limit)
}

// quotaMessage is the refusal of a call past a quota: from says which
// ("agent", "platform" or "rule" for the tool's session quota, "shared
// NAME" for a store.SharedQuota, which every Tracker that declares it shares).
func quotaMessage(tool, from string, limit, count, used, budget int, unit budgetUnit) string {
	left := "no turn budget"
	if budget > 0 {
		left = fmt.Sprintf("%d of %s left this turn", max(budget-used, 0), plural(budget, toolUnit(unit.String())))
	}
	what := fmt.Sprintf("its session quota (%s quota: %s, %d made)", from, plural(limit, "call"), count)
	if name, ok := strings.CutPrefix(from, "shared "); ok {
		what = fmt.Sprintf("the shared quota '%s' (%s, %d made by every session that shares it)", name, plural(limit, "call"), count)
	}
	return loopMessage("Tool '%s' has reached %s. This call was not executed. Do not call it again: report the "+
		"progress so far, the budget state (%s) and the next narrower action instead.", tool, what, left)
}

func duplicateMessage(tool string, count int) string {
	return loopMessage("Tool '%s' was already executed with identical parameters (%s without a new result). "+
		"This call was not executed. Use the earlier result, change the approach, or answer the user.", tool, times(count))
}

func rewordMessage(tool string, count int) string {
	return loopMessage("Tool '%s' was already executed with these arguments in other words (flags, paths or wording changed), "+
		"returning the same result %s. This call was not executed. Use the earlier result, change the approach, or answer the user.",
		tool, times(count))
}

func revisitMessage(tool string, count int) string {
	return loopMessage("The last %s of this turn each returned what it had returned before: nothing new, nothing changed. "+
		"This call of tool '%s' was not executed. Stop going back over the same results: use what you have, try something new, or answer the user.",
		plural(count, "call"), tool)
}

func insistMessage(tool string) string {
	return loopMessage("Tool '%s' was called again with the same arguments after a hint, with nothing changed since. "+
		"This call was not executed. Stop repeating it: use what you have, change the approach, or answer the user.", tool)
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return plural(n, "time")
}

func similarMessage(tool string) string {
	return loopMessage("Tool '%s' was already executed with a similar query. This call was not executed. "+
		"Use the earlier results, ask a clearly different question, or answer the user.", tool)
}

func failureMessage(tool string, count int) string {
	return loopMessage("Tool '%s' has failed %s in the same way, with tweaked arguments. "+
		"This call was not executed. Stop retrying: read the full error, look for the real interface, path, "+
		"permission or precondition, then make one evidence-backed attempt; if that fails too, report the blocker to the user.",
		tool, times(count))
}

func acrossMessage(tool string, turns int) string {
	return loopMessage("Tool '%s' was called with these arguments in each of the last %s and failed the same way every time. "+
		"This call was not executed. Tell the user what blocks it and what they could change; "+
		"if something changed since, send the call again and it will run.", tool, plural(turns, "turn"))
}

func streakMessage(n int) string {
	return loopMessage("The last %s of this turn all failed, with no success in between. This call was not executed. "+
		"Stop and read the errors: check the real paths, names and interfaces, or tell the user what blocks you; "+
		"sent again, the call runs.", plural(n, "call"))
}

func cycleMessage(tool string, period, repeats int) string {
	return loopMessage("Tool '%s' would continue a cycle of %d calls that already repeated %s without new results. "+
		"This call was not executed. Break the cycle: use what the calls returned, change the approach, or answer the user.",
		tool, period, times(repeats))
}

func churnMessage(tool string, search bool, n, window int) string {
	what := "fetched the same address"
	if search {
		what = "was asked similar queries"
	}
	return loopMessage("Tool '%s' %s %s in the last %s without new results. This call was not executed. "+
		"Use what you already found, narrow the question, or answer the user.", tool, what, times(n), plural(window, "call"))
}

func budgetMessage(budget int, unit budgetUnit) string {
	return fmt.Sprintf("%s All %d available %s for this turn were used. "+
		"This call was not executed. Summarize your work and answer the user's question.",
		budgetMarker, budget, nouns(budget, toolUnit(unit.String())))
}

func nudgeMessage(used, budget int, unit budgetUnit) string {
	return fmt.Sprintf("You have used %d of %s. Start wrapping up.", used, plural(budget, toolUnit(unit.String())))
}

func windDownMessage(budget int, unit budgetUnit) string {
	return fmt.Sprintf("You have used all %s for this turn. Summarize your work and answer the user's question.",
		plural(budget, toolUnit(unit.String())))
}

func storeDownMessage(tool string) string {
	return fmt.Sprintf("%s Tool '%s' was not executed: its shared quota cannot be checked because the quota store did not answer. "+
		"Continue with other tools or answer the user with what you have.", storeMarker, tool)
}

const invalidMessage = invalidMarker +
	" The call was not executed: it has no tool name. Call one of the tools you were given, by name."

// plural returns n and the noun, in the plural unless n is 1: "1 call",
// "2 calls".
func plural(n int, noun string) string { return strconv.Itoa(n) + " " + nouns(n, noun) }

func nouns(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// toolUnit names one unit of the budget, given the plural (budgetUnit's
// String): "tool call" or "tool round".
func toolUnit(units string) string { return "tool " + strings.TrimSuffix(units, "s") }
