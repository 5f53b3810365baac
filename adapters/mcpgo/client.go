package mcpgo

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// Client guards the tool calls an agent harness makes through an mcp-go
// client, with the Tracker of one conversation. The harness sees the whole
// conversation, so this is the side where a Tracker is simplest to key:
// make one Client (and one Tracker) per conversation, over the client of
// each server it uses. A Client is safe for concurrent use.
type Client struct {
	client  *client.Client
	tracker *toolguard.Tracker
}

// NewClient returns a Client that guards the calls through c with t.
// Build t's Policy with PolicyFor, so that the server's own annotations
// say which tools only read.
func NewClient(c *client.Client, t *toolguard.Tracker) *Client {
	return &Client{client: c, tracker: t}
}

// Tracker returns the Client's Tracker.
func (c *Client) Tracker() *toolguard.Tracker { return c.tracker }

// CallTool checks the call with the Tracker, calls the tool through the
// client when it is allowed, and records what it returned. A hint comes
// back as the tool result to hand the model (IsError, the hint's text, the
// verdict under MetaVerdict in _meta), and the server is not called. An
// abort comes back as the Decision's error: a *toolguard.LoopError
// (errors.Is(err, toolguard.ErrLoop)) or a *toolguard.BudgetError; the
// harness ends the turn. When the call moves the turn into the nudge or
// wind-down phase, the phase's guidance is one more text content of the
// result.
func (c *Client) CallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcpguard.Guard(ctx, c.tracker, callOf(req), false, func() (*mcp.CallToolResult, error) {
		return c.client.CallTool(ctx, req)
	}, clientHandler)
}

// clientHandler is what mcpguard.Guard needs on the client side: a hint
// is the result, an abort the error.
var clientHandler = mcpguard.Handler[*mcp.CallToolResult]{
	Name: "mcpgo",
	Skipped: func(d toolguard.Decision) (*mcp.CallToolResult, error) {
		if d.Verdict == toolguard.Abort {
			return nil, d.Err
		}
		return skipped(d), nil
	},
	Pending:  handler.Pending,
	Outcome:  outcomeOf,
	WithText: withText,
}

// PolicyFor lists the tools of the client's server (every page) and
// returns p with their annotations applied, as ReadOnlyHints does:
// readOnlyHint marks a tool ToolPolicy.ReadOnly. idempotentHint changes
// nothing: an identical repeat of any tool is already no new information
// to the Tracker, and an idempotent tool that changes the world (a PUT)
// still counts as progress for other calls.
func PolicyFor(ctx context.Context, c *client.Client, p toolguard.Policy) (toolguard.Policy, error) {
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return p, fmt.Errorf("mcpgo: listing tools: %w", err)
	}
	return ReadOnlyHints(p, res.Tools...), nil
}
