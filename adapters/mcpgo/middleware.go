package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// The _meta keys of a result the middleware made for a skipped call, in
// the reverse-DNS form MCP asks for.
const (
	// MetaVerdict holds the verdict: "hint" or "abort".
	MetaVerdict = mcpguard.MetaVerdict
	// MetaReason holds the rule that fired, such as "duplicate" or "budget".
	MetaReason = mcpguard.MetaReason
	// MetaConversation is the request _meta key MetaKey reads by
	// convention: "dev.toolguard/conversation".
	MetaConversation = mcpguard.MetaConversation
)

// Middleware returns a tool handler middleware that guards every call with
// t. A nil t guards nothing.
func Middleware(t *toolguard.Tracker) server.ToolHandlerMiddleware {
	return MiddlewareFunc(func(context.Context, mcp.CallToolRequest) *toolguard.Tracker { return t })
}

// MiddlewareFunc returns a tool handler middleware that guards each call
// with the Tracker that trackerFor returns for it. A call for which
// trackerFor returns nil runs unguarded. trackerFor may be called from many
// goroutines at once.
func MiddlewareFunc(trackerFor func(context.Context, mcp.CallToolRequest) *toolguard.Tracker) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var t *toolguard.Tracker
			if trackerFor != nil {
				t = trackerFor(ctx, req)
			}
			if t == nil {
				return next(ctx, req)
			}
			return guard(ctx, t, next, req)
		}
	}
}

// handler is what mcpguard.Guard needs to know of mcp-go's results.
var handler = mcpguard.Handler[*mcp.CallToolResult]{
	Name:    "mcpgo",
	Skipped: func(d toolguard.Decision) (*mcp.CallToolResult, error) { return skipped(d), nil },
	Pending: func(res *mcp.CallToolResult) bool {
		return res != nil && (res.NeedsInput() || res.InputRequests != nil)
	},
	Outcome:  outcomeOf,
	WithText: withText,
}

// guard checks, runs and records one call.
func guard(ctx context.Context, t *toolguard.Tracker, next server.ToolHandlerFunc, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// A retry that carries the answers to an input-required result
	// continues a call that was already allowed: it is not checked again.
	retry := len(req.Params.InputResponses) > 0 || req.Params.RequestState != ""
	return mcpguard.Guard(ctx, t, callOf(req), retry, func() (*mcp.CallToolResult, error) { return next(ctx, req) }, handler)
}

// callOf builds the toolguard.Call of a request.
func callOf(req mcp.CallToolRequest) toolguard.Call {
	c := toolguard.Call{Tool: req.Params.Name}
	if len(req.Params.RawArguments) > 0 {
		c.Args = req.Params.RawArguments
	} else if req.Params.Arguments != nil {
		if b, err := json.Marshal(req.Params.Arguments); err == nil {
			c.Args = b
		}
	}
	if m := req.Params.Meta; m != nil && m.ProgressToken != nil {
		c.ID = fmt.Sprint(m.ProgressToken)
	}
	return c
}

// outcomeOf turns what the handler returned into an Outcome.
func outcomeOf(res *mcp.CallToolResult, err error) toolguard.Outcome {
	if err != nil {
		return toolguard.Outcome{Err: err}
	}
	if res == nil {
		return toolguard.Outcome{Err: errors.New("mcpgo: the tool returned no result")}
	}
	text := resultText(res)
	if res.IsError {
		if text == "" {
			text = "mcpgo: the tool returned an error result"
		}
		return toolguard.Outcome{Result: text, Err: errors.New(text)}
	}
	return toolguard.Outcome{Result: text}
}

// resultText is the text of a result's content: text items as they are,
// other items as JSON, and the structured content when there is no content.
func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			sb.WriteByte('\n')
		}
		switch tc := c.(type) {
		case mcp.TextContent:
			sb.WriteString(tc.Text)
		case *mcp.TextContent:
			if tc != nil {
				sb.WriteString(tc.Text)
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				sb.Write(b)
			}
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			sb.Write(b)
		}
	}
	return sb.String()
}

// skipped is the result the client gets for a call that did not run: an
// error result whose text tells the model what to do (for an abort, to
// stop). mcp-go adds resultType for clients of protocol 2026-07-28 to
// every result, this one included.
func skipped(d toolguard.Decision) *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		Content: []mcp.Content{mcp.NewTextContent(mcpguard.SkipText(d))},
		IsError: true,
	}
	res.Meta = mcp.NewMetaFromMap(mcpguard.Meta(d))
	return res
}

// withText returns a copy of res with one more text content; a nil res
// stays nil.
func withText(res *mcp.CallToolResult, text string) *mcp.CallToolResult {
	if res == nil {
		return nil
	}
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content)+1)
	out.Content = append(out.Content, res.Content...)
	out.Content = append(out.Content, mcp.NewTextContent(text))
	return &out
}
