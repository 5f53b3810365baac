package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

const methodCallTool = "tools/call"

// Middleware returns a receiving middleware that guards every tools/call
// with t. A nil t guards nothing.
func Middleware(t *toolguard.Tracker) mcp.Middleware {
	return MiddlewareFunc(func(context.Context, *mcp.CallToolRequest) *toolguard.Tracker { return t })
}

// MiddlewareFunc returns a receiving middleware that guards each tools/call
// with the Tracker that trackerFor returns for it. A call for which
// trackerFor returns nil runs unguarded. trackerFor may be called from many
// goroutines at once.
func MiddlewareFunc(trackerFor func(context.Context, *mcp.CallToolRequest) *toolguard.Tracker) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != methodCallTool || trackerFor == nil {
				return next(ctx, method, req)
			}
			ctr, ok := req.(*mcp.CallToolRequest)
			if !ok || ctr == nil || ctr.Params == nil {
				return next(ctx, method, req)
			}
			t := trackerFor(ctx, ctr)
			if t == nil {
				return next(ctx, method, req)
			}
			return guard(ctx, t, next, method, ctr)
		}
	}
}

// handler is what mcpguard.Guard needs to know of the SDK's results.
var handler = mcpguard.Handler[mcp.Result]{
	Name:    "mcpsdk",
	Skipped: func(d toolguard.Decision) (mcp.Result, error) { return skipped(d), nil },
	Pending: func(res mcp.Result) bool {
		ctr, _ := res.(*mcp.CallToolResult)
		return ctr != nil && (ctr.NeedsInput() || ctr.InputRequests != nil)
	},
	Outcome: func(res mcp.Result, err error) toolguard.Outcome {
		ctr, _ := res.(*mcp.CallToolResult)
		return outcomeOf(ctr, err)
	},
	WithText: func(res mcp.Result, text string) mcp.Result {
		if ctr, _ := res.(*mcp.CallToolResult); ctr != nil {
			return withText(ctr, text)
		}
		return res
	},
}

// guard checks, runs and records one call.
func guard(ctx context.Context, t *toolguard.Tracker, next mcp.MethodHandler, method string, req *mcp.CallToolRequest) (mcp.Result, error) {
	// A retry that carries the answers to an input-required result
	// continues a call that was already allowed: it is not checked again.
	retry := len(req.Params.InputResponses) > 0 || req.Params.RequestState != ""
	h := handler
	if speaksStateless(req) {
		h.Skipped = func(d toolguard.Decision) (mcp.Result, error) { return complete(skipped(d)), nil }
	}
	return mcpguard.Guard(ctx, t, callOf(req.Params), retry, func() (mcp.Result, error) { return next(ctx, method, req) }, h)
}

// speaksStateless reports whether the client of req speaks protocol
// 2026-07-28 or later, which requires resultType in every result: the
// revision in the request's _meta or, as the SDK decides, the session's
// negotiated revision (the latest when there was no initialize).
func speaksStateless(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.GetMeta()[mcpguard.MetaProtocolVersion].(string); ok {
		return mcpguard.IsStateless(v)
	}
	if req.Session == nil {
		return false
	}
	if ip := req.Session.InitializeParams(); ip != nil {
		return mcpguard.IsStateless(ip.ProtocolVersion)
	}
	return true
}

// complete returns res with resultType "complete". The SDK sets it below
// the receiving middleware, in the tool call handler that a skipped call
// never reaches, and keeps the field unexported; its own JSON decoding is
// the one way to set it.
func complete(res *mcp.CallToolResult) *mcp.CallToolResult {
	b, err := json.Marshal(res)
	if err != nil {
		return res
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return res
	}
	fields["resultType"] = json.RawMessage(`"complete"`)
	if b, err = json.Marshal(fields); err != nil {
		return res
	}
	var out mcp.CallToolResult
	if json.Unmarshal(b, &out) != nil {
		return res
	}
	return &out
}

// callOf builds the toolguard.Call of a request.
func callOf(p *mcp.CallToolParamsRaw) toolguard.Call {
	c := toolguard.Call{Tool: p.Name, Args: p.Arguments}
	if tok := p.GetProgressToken(); tok != nil {
		c.ID = fmt.Sprint(tok)
	}
	return c
}

// outcomeOf turns what the handler returned into an Outcome.
func outcomeOf(res *mcp.CallToolResult, err error) toolguard.Outcome {
	if err != nil {
		return toolguard.Outcome{Err: err}
	}
	if res == nil {
		return toolguard.Outcome{Err: errors.New("mcpsdk: the tool returned no result")}
	}
	text := resultText(res)
	if res.IsError {
		err := res.GetError()
		if err == nil {
			if text == "" {
				text = "mcpsdk: the tool returned an error result"
			}
			err = errors.New(text)
		}
		return toolguard.Outcome{Result: text, Err: err}
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
		if tc, ok := c.(*mcp.TextContent); ok {
			if tc != nil {
				sb.WriteString(tc.Text)
			}
			continue
		}
		if c == nil {
			continue
		}
		if b, err := json.Marshal(c); err == nil {
			sb.Write(b)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			sb.Write(b)
		}
	}
	return sb.String()
}

// skipped is the result the client gets for a call that did not run.
func skipped(d toolguard.Decision) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:    mcp.Meta(mcpguard.Meta(d)),
		Content: []mcp.Content{&mcp.TextContent{Text: mcpguard.SkipText(d)}},
		IsError: true,
	}
}

// withText returns a copy of res with one more text content.
func withText(res *mcp.CallToolResult, text string) *mcp.CallToolResult {
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content)+1)
	out.Content = append(out.Content, res.Content...)
	out.Content = append(out.Content, &mcp.TextContent{Text: text})
	return &out
}
