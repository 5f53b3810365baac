package toolguard

import "fmt"

// HintMarker starts every message of a Hint or an Abort, so a harness (and
// a reader of the transcript) can tell a skipped call from a real result.
const HintMarker = "[loop-detected]"

// Every message says that the call was not executed and what to do
// instead; none pretends to be the tool's output.

func turnLimitMessage(tool string, limit int) string {
	return fmt.Sprintf("%s Tool '%s' has reached its execution limit (%d) for this turn. "+
		"This call was not executed. Use the results you already have, change the approach, or answer the user.",
		HintMarker, tool, limit)
}

func quotaMessage(tool, from string, limit, count, used, budget int, unit Unit) string {
	left := "no turn budget"
	if budget > 0 {
		left = fmt.Sprintf("%d of %d tool %s left this turn", max(budget-used, 0), budget, unit)
	}
	return fmt.Sprintf("%s Tool '%s' has reached its session quota (%s quota: %d calls, %d made). "+
		"This call was not executed. Do not call it again: report the progress so far, the budget state (%s) "+
		"and the next narrower action instead.",
		HintMarker, tool, from, limit, count, left)
}

func duplicateMessage(tool string, count int) string {
	return fmt.Sprintf("%s Tool '%s' was already executed with identical parameters (%s without a new result). "+
		"This call was not executed. Use the earlier result, change the approach, or answer the user.",
		HintMarker, tool, times(count))
}

func insistMessage(tool string) string {
	return fmt.Sprintf("%s Tool '%s' was called again with the same arguments after a hint, with nothing changed since. "+
		"This call was not executed. Stop repeating it: use what you have, change the approach, or answer the user.",
		HintMarker, tool)
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func similarMessage(tool string) string {
	return fmt.Sprintf("%s Tool '%s' was already executed with a similar query. "+
		"This call was not executed. Use the earlier results, ask a clearly different question, or answer the user.",
		HintMarker, tool)
}

func failureMessage(tool string, count int) string {
	return fmt.Sprintf("%s Tool '%s' has failed %d times in the same way, with tweaked arguments. "+
		"This call was not executed. Stop retrying: read the full error, look for the real interface, path, "+
		"permission or precondition, then make one evidence-backed attempt; if that fails too, report the blocker to the user.",
		HintMarker, tool, count)
}

func acrossMessage(tool string, turns int) string {
	return fmt.Sprintf("%s Tool '%s' was called with these arguments in each of the last %d turns and failed the same way every time. "+
		"This call was not executed. Tell the user what blocks it and what they could change; "+
		"if something changed since, send the call again and it will run.",
		HintMarker, tool, turns)
}

func cycleMessage(tool string, period, repeats int) string {
	return fmt.Sprintf("%s Tool '%s' would continue a cycle of %d calls that already repeated %d times without new results. "+
		"This call was not executed. Break the cycle: use what the calls returned, change the approach, or answer the user.",
		HintMarker, tool, period, repeats)
}

func churnMessage(tool string, search bool, n, window int) string {
	what := "fetched the same address"
	if search {
		what = "was asked similar queries"
	}
	return fmt.Sprintf("%s Tool '%s' %s %d times in the last %d calls without new results. "+
		"This call was not executed. Use what you already found, narrow the question, or answer the user.",
		HintMarker, tool, what, n, window)
}

func budgetMessage(budget int, unit Unit) string {
	return fmt.Sprintf("%s All %d available tool %s for this turn were used. "+
		"This call was not executed. Summarize your work and answer the user's question.",
		HintMarker, budget, unit)
}

func nudgeMessage(used, budget int, unit Unit) string {
	return fmt.Sprintf("You have used %d of %d tool %s. Start wrapping up.", used, budget, unit)
}

func windDownMessage(budget int, unit Unit) string {
	return fmt.Sprintf("You have used all %d tool %s for this turn. Summarize your work and answer the user's question.",
		budget, unit)
}

func storeDownMessage(tool string) string {
	return fmt.Sprintf("%s Tool '%s' was not executed: its shared quota cannot be checked because the quota store did not answer. "+
		"Continue with other tools or answer the user with what you have.", HintMarker, tool)
}
