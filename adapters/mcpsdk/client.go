package mcpsdk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// Client guards the tool calls an agent harness makes through an MCP
// ClientSession, with the Tracker of one conversation. The harness sees
// the whole conversation, so this is the side where a Tracker is simplest
// to key: make one Client (and one Tracker) per conversation, over the
// session of each server it uses. A Client is safe for concurrent use.
type Client struct {
	session *mcp.ClientSession
	tracker *toolguard.Tracker
}

// NewClient returns a Client that guards the calls through cs with t.
// Build t's Policy with PolicyFor, so that the server's own annotations
// say which tools only read.
func NewClient(cs *mcp.ClientSession, t *toolguard.Tracker) *Client {
	return &Client{session: cs, tracker: t}
}

// Tracker returns the Client's Tracker.
func (c *Client) Tracker() *toolguard.Tracker { return c.tracker }

// CallTool checks the call with the Tracker, calls the tool through the
// session when it is allowed, and records what it returned. A hint comes
// back as the tool result to hand the model (IsError, the hint's text, the
// verdict under MetaVerdict in _meta), and the server is not called. An
// abort comes back as the Decision's error: a *toolguard.LoopError
// (errors.Is(err, toolguard.ErrLoop)) or a *toolguard.BudgetError; the
// harness ends the turn. When the call moves the turn into the nudge or
// wind-down phase, the phase's guidance is one more text content of the
// result.
func (c *Client) CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	call := toolguard.Call{Tool: params.Name}
	if params.Arguments != nil {
		raw, err := jsonArgs(params.Arguments)
		if err != nil {
			return nil, err
		}
		call.Args = raw
	}
	if tok := params.GetProgressToken(); tok != nil {
		call.ID = fmt.Sprint(tok)
	}
	return mcpguard.Guard(ctx, c.tracker, call, false, func() (*mcp.CallToolResult, error) {
		return c.session.CallTool(ctx, params)
	}, clientHandler)
}

// clientHandler is what mcpguard.Guard needs on the client side: a hint
// is the result, an abort the error.
var clientHandler = mcpguard.Handler[*mcp.CallToolResult]{
	Name: "mcpsdk",
	Skipped: func(d toolguard.Decision) (*mcp.CallToolResult, error) {
		if d.Verdict == toolguard.Abort {
			return nil, d.Err
		}
		return skipped(d), nil
	},
	Pending: func(res *mcp.CallToolResult) bool { return res != nil && res.NeedsInput() },
	Outcome: outcomeOf,
	WithText: func(res *mcp.CallToolResult, text string) *mcp.CallToolResult {
		if res == nil {
			return nil
		}
		return withText(res, text)
	},
}

// jsonArgs is the JSON of a call's arguments.
func jsonArgs(args any) ([]byte, error) {
	if raw, ok := args.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("mcpsdk: the arguments are not JSON: %w", err)
	}
	return b, nil
}

// PolicyFor lists the tools of the session (every page) and returns p with
// their annotations applied, as ReadOnlyHints does: readOnlyHint marks a
// tool ToolPolicy.ReadOnly. idempotentHint changes nothing: an identical
// repeat of any tool is already no new information to the Tracker, and an
// idempotent tool that changes the world (a PUT) still counts as progress
// for other calls.
func PolicyFor(ctx context.Context, cs *mcp.ClientSession, p toolguard.Policy) (toolguard.Policy, error) {
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return p, fmt.Errorf("mcpsdk: listing tools: %w", err)
		}
		tools = append(tools, tool)
	}
	return ReadOnlyHints(p, tools...), nil
}
