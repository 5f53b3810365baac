package copilotguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	copilot "github.com/github/copilot-sdk/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/copilotguard"
)

// session starts a real copilot.Client against the stub runtime and
// creates a session with the guard's hooks (chained to next).
func session(t *testing.T, r *stubRuntime, guard *copilotguard.Guard, next *copilot.SessionHooks) *copilot.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := copilot.NewClient(&copilot.ClientOptions{Connection: copilot.URIConnection{URL: r.addr()}})
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() { _ = client.Stop() })
	s, err := client.CreateSession(ctx, &copilot.SessionConfig{
		Hooks:               guard.Hooks(next),
		OnPermissionRequest: copilot.PermissionHandler.ApproveAll,
	})
	require.NoError(t, err)
	return s
}

func send(t *testing.T, s *copilot.Session, prompt string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := s.SendAndWait(ctx, copilot.MessageOptions{Prompt: prompt})
	require.NoError(t, err)
	if ev != nil {
		if d, ok := ev.Data.(*copilot.AssistantMessageData); ok {
			return d.Content
		}
	}
	return ""
}

func bash(cmd string) *toolCall {
	return &toolCall{Tool: "bash", Args: map[string]any{"command": cmd}}
}

// A model that runs the same failing-free command forever: two runs, a
// hint in the permission denial, then an abort that Err reports.
func TestLoopIsHintedThenAborted(t *testing.T) {
	r := newStubRuntime(t)
	denials := 0
	r.model = func(last toolOutcome) (*toolCall, string) {
		if last.Denied {
			denials++
		}
		if denials == 2 { // it ignored the hint once, then read the abort
			return nil, "I stopped."
		}
		return bash("make test"), ""
	}
	r.run = func(toolCall) (string, string) { return "ok 12 tests", "" }
	guard := copilotguard.New(toolguard.Policy{})
	s := session(t, r, guard, nil)

	assert.Equal(t, "I stopped.", send(t, s, "run the tests"))
	assert.EqualValues(t, 2, r.runs.Load(), "the third and fourth calls did not run")
	out := r.outcomesSoFar()
	require.Len(t, out, 4)
	assert.Equal(t, "ok 12 tests", out[1].Result)
	assert.True(t, out[2].Denied)
	assert.True(t, strings.HasPrefix(out[2].Reason, toolguard.HintMarker), out[2].Reason)
	assert.True(t, out[3].Denied)
	assert.NotEqual(t, out[2].Reason, out[3].Reason, "the abort says more than the hint")
	assert.ErrorIs(t, guard.Err(s.SessionID), toolguard.ErrLoop)
	var le *toolguard.LoopError
	require.ErrorAs(t, guard.Err(s.SessionID), &le)
	assert.Equal(t, "bash", le.Tool)

	// The next prompt is a new turn: the abort is cleared and the call runs.
	r.model = func(last toolOutcome) (*toolCall, string) {
		if last.Call.Tool != "" {
			return nil, "done"
		}
		return bash("make test"), ""
	}
	assert.Equal(t, "done", send(t, s, "once more"))
	assert.NoError(t, guard.Err(s.SessionID))
	assert.EqualValues(t, 3, r.runs.Load())
}

// The turn budget: the nudge and the wind-down reach the model as the
// post-tool hook's additional context, and a call past the budget is
// denied with the budget's message.
func TestBudget(t *testing.T) {
	r := newStubRuntime(t)
	n := 0
	r.model = func(last toolOutcome) (*toolCall, string) {
		if last.Denied {
			return nil, "summary"
		}
		n++
		return bash("step " + string(rune('0'+n))), ""
	}
	r.run = func(c toolCall) (string, string) { return "done " + c.Args["command"].(string), "" }
	guard := copilotguard.New(toolguard.Policy{MaxCallsPerTurn: 2, NudgeRatio: 0.5})
	s := session(t, r, guard, nil)

	assert.Equal(t, "summary", send(t, s, "work"))
	out := r.outcomesSoFar()
	require.Len(t, out, 3)
	assert.Equal(t, "You have used 1 of 2 tool calls. Start wrapping up.", out[0].AdditionalContext)
	assert.Contains(t, out[1].AdditionalContext, "Summarize your work")
	assert.True(t, out[2].Denied)
	assert.ErrorIs(t, guard.Err(s.SessionID), toolguard.ErrBudgetExhausted)
	assert.EqualValues(t, 2, r.runs.Load())
}

// Failures are recorded as failures: the same failing command retried
// blindly is stopped.
func TestRepeatedFailure(t *testing.T) {
	r := newStubRuntime(t)
	r.model = func(last toolOutcome) (*toolCall, string) {
		if last.Denied {
			return nil, "giving up"
		}
		return bash("go build ./..."), ""
	}
	r.run = func(toolCall) (string, string) { return "", "exit status 1: undefined: Foo" }
	guard := copilotguard.New(toolguard.Policy{})
	s := session(t, r, guard, nil)

	assert.Equal(t, "giving up", send(t, s, "build"))
	out := r.outcomesSoFar()
	require.NotEmpty(t, out)
	assert.True(t, out[0].Failed)
	last := out[len(out)-1]
	assert.True(t, last.Denied)
	assert.True(t, strings.HasPrefix(last.Reason, toolguard.HintMarker), last.Reason)
	ledger := guard.Tracker(s.SessionID).Ledger()
	require.NotEmpty(t, ledger)
	assert.True(t, ledger[0].Done && ledger[0].Failed)
}

// A hook of the harness that denies a call first: the call is not checked
// (it does not run, so it is not counted), and the harness's other hooks
// still run.
func TestChainedHooks(t *testing.T) {
	r := newStubRuntime(t)
	r.model = func(last toolOutcome) (*toolCall, string) {
		if last.Call.Tool != "" {
			return nil, "ok"
		}
		return bash("rm -rf /"), ""
	}
	r.run = func(toolCall) (string, string) { return "gone", "" }
	var prompts int
	next := &copilot.SessionHooks{
		OnPreToolUse: func(in copilot.PreToolUseHookInput, _ copilot.HookInvocation) (*copilot.PreToolUseHookOutput, error) {
			return &copilot.PreToolUseHookOutput{PermissionDecision: "deny", PermissionDecisionReason: "not here"}, nil
		},
		OnUserPromptSubmitted: func(copilot.UserPromptSubmittedHookInput, copilot.HookInvocation) (*copilot.UserPromptSubmittedHookOutput, error) {
			prompts++
			return nil, nil
		},
	}
	guard := copilotguard.New(toolguard.Policy{})
	s := session(t, r, guard, next)

	assert.Equal(t, "ok", send(t, s, "clean up"))
	out := r.outcomesSoFar()
	require.Len(t, out, 1)
	assert.Equal(t, "not here", out[0].Reason)
	assert.Empty(t, guard.Tracker(s.SessionID).Ledger())
	assert.Equal(t, 1, prompts)
	assert.EqualValues(t, 0, r.runs.Load())
}
