package einoguard

import (
	"context"
	"sync"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/toolguard/toolguard"
)

// AgentMiddleware returns an adk.ChatModelAgentMiddleware that guards a
// ChatModelAgent with t. Add it to adk.ChatModelAgentConfig.Handlers:
//
//   - BeforeAgent: each run of the agent (a new user input) starts a new
//     turn, t.Reset.
//   - Tool calls: every tool call of the run, invokable, streamable and
//     enhanced alike, is checked as toolguard.Call{ID: the tool call's id,
//     Tool, Args} with the tool's context, as Middleware does: a hint is
//     the tool's result, an abort fails the tool call, which ends the run
//     with an event whose Err wraps the *toolguard.LoopError or
//     *toolguard.BudgetError (WithAbortAsResult makes it a result instead).
//   - BeforeModelRewriteState: when the turn enters the nudge or the
//     wind-down phase, the tracker's Guidance text is added to the
//     conversation once, as a user message; from the wind-down on the
//     model is sent no tools. A tool the model calls anyway is refused by
//     the tracker with the budget's own message.
//
// One Tracker holds one conversation: the agent must not run two
// conversations at once with the same middleware. WithoutGuidance stops
// the guidance messages; the tools are removed in the wind-down either
// way. A nil t gives a middleware that changes nothing.
func AgentMiddleware(t *toolguard.Tracker, opts ...Option) adk.ChatModelAgentMiddleware {
	if t == nil {
		return &adk.BaseChatModelAgentMiddleware{}
	}
	g := newGuard(t, opts)
	m := &agentMiddleware{g: g, noGuidance: g.opts.noGuidance}
	// The phase text goes to the model as a message of its own, not
	// appended to a tool result.
	g.opts.noGuidance = true
	return m
}

type agentMiddleware struct {
	*adk.BaseChatModelAgentMiddleware
	g          *guard
	noGuidance bool

	mu   sync.Mutex
	told toolguard.Phase // the last phase whose guidance was added
}

func (m *agentMiddleware) BeforeAgent(ctx context.Context, rc *adk.ChatModelAgentContext) (context.Context, *adk.ChatModelAgentContext, error) {
	m.g.t.Reset()
	m.mu.Lock()
	m.told = toolguard.PhaseNormal
	m.mu.Unlock()
	return ctx, rc, nil
}

func (m *agentMiddleware) BeforeModelRewriteState(ctx context.Context, st *adk.ChatModelAgentState, _ *adk.ModelContext) (context.Context, *adk.ChatModelAgentState, error) {
	gd := m.g.t.Guidance()
	if gd.StripTools {
		st.ToolInfos = nil
		st.DeferredToolInfos = nil
	}
	m.mu.Lock()
	tell := gd.Message != "" && gd.Phase > m.told && m.told < toolguard.PhaseWindDown
	if tell {
		m.told = gd.Phase
	}
	m.mu.Unlock()
	if tell && !m.noGuidance {
		st.Messages = append(st.Messages, schema.UserMessage(gd.Message))
	}
	return ctx, st, nil
}

func (m *agentMiddleware) WrapInvokableToolCall(_ context.Context, endpoint adk.InvokableToolCallEndpoint, tc *adk.ToolContext) (adk.InvokableToolCallEndpoint, error) {
	guarded := m.g.invokable(func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		res, err := endpoint(ctx, in.Arguments, in.CallOptions...)
		return &compose.ToolOutput{Result: res}, err
	})
	return func(ctx context.Context, args string, opts ...tool.Option) (string, error) {
		out, err := guarded(ctx, toolInput(tc, args, opts))
		if err != nil || out == nil {
			return "", err
		}
		return out.Result, nil
	}, nil
}

func (m *agentMiddleware) WrapStreamableToolCall(_ context.Context, endpoint adk.StreamableToolCallEndpoint, tc *adk.ToolContext) (adk.StreamableToolCallEndpoint, error) {
	guarded := m.g.streamable(func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		sr, err := endpoint(ctx, in.Arguments, in.CallOptions...)
		return &compose.StreamToolOutput{Result: sr}, err
	})
	return func(ctx context.Context, args string, opts ...tool.Option) (*schema.StreamReader[string], error) {
		out, err := guarded(ctx, toolInput(tc, args, opts))
		if err != nil || out == nil {
			return nil, err
		}
		return out.Result, nil
	}, nil
}

func (m *agentMiddleware) WrapEnhancedInvokableToolCall(_ context.Context, endpoint adk.EnhancedInvokableToolCallEndpoint, tc *adk.ToolContext) (adk.EnhancedInvokableToolCallEndpoint, error) {
	guarded := m.g.enhancedInvokable(func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
		res, err := endpoint(ctx, &schema.ToolArgument{Text: in.Arguments}, in.CallOptions...)
		return &compose.EnhancedInvokableToolOutput{Result: res}, err
	})
	return func(ctx context.Context, arg *schema.ToolArgument, opts ...tool.Option) (*schema.ToolResult, error) {
		out, err := guarded(ctx, toolInput(tc, argText(arg), opts))
		if err != nil || out == nil {
			return nil, err
		}
		return out.Result, nil
	}, nil
}

func (m *agentMiddleware) WrapEnhancedStreamableToolCall(_ context.Context, endpoint adk.EnhancedStreamableToolCallEndpoint, tc *adk.ToolContext) (adk.EnhancedStreamableToolCallEndpoint, error) {
	guarded := m.g.enhancedStreamable(func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
		sr, err := endpoint(ctx, &schema.ToolArgument{Text: in.Arguments}, in.CallOptions...)
		return &compose.EnhancedStreamableToolOutput{Result: sr}, err
	})
	return func(ctx context.Context, arg *schema.ToolArgument, opts ...tool.Option) (*schema.StreamReader[*schema.ToolResult], error) {
		out, err := guarded(ctx, toolInput(tc, argText(arg), opts))
		if err != nil || out == nil {
			return nil, err
		}
		return out.Result, nil
	}, nil
}

func toolInput(tc *adk.ToolContext, args string, opts []tool.Option) *compose.ToolInput {
	in := &compose.ToolInput{Arguments: args, CallOptions: opts}
	if tc != nil {
		in.Name, in.CallID = tc.Name, tc.CallID
	}
	return in
}

func argText(a *schema.ToolArgument) string {
	if a == nil {
		return ""
	}
	return a.Text
}
