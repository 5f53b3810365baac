package anthropicguard_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/anthropicguard"
	"github.com/toolguard/toolguard/otelguard"
)

// TestOneSpanPerToolCall runs the tool runner with the SDK's own spans on:
// with WithToolSpanFromContext, toolguard annotates the SDK's span of each
// tool call instead of adding one.
func TestOneSpanPerToolCall(t *testing.T) {
	for _, annotate := range []bool{true, false} {
		t.Run(map[bool]string{true: "annotate", false: "own spans"}[annotate], func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			opts := []otelguard.Option{otelguard.WithTracerProvider(tp)}
			if annotate {
				opts = append(opts, otelguard.WithToolSpanFromContext())
			}
			obs, err := otelguard.NewObserver(opts...)
			require.NoError(t, err)

			model := &runnerServer{calls: []string{"Paris"}}
			srv := httptest.NewServer(model)
			defer srv.Close()
			client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"),
				option.WithMaxRetries(0), option.WithTracerProvider(tp))
			var ran []string
			var mu sync.Mutex
			tool := weatherTool(t, func(string) string { return "sunny" }, &ran, &mu)
			tracker := toolguard.NewTracker(toolguard.Policy{OnEvent: obs.OnEvent})
			runner := anthropicguard.NewToolRunner(tracker, &client.Beta.Messages, []anthropic.BetaTool{tool},
				anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
					Model: "claude-test", MaxTokens: 1024,
					Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Weather?"))},
				}})
			_, err = runner.RunToCompletion(context.Background())
			require.ErrorIs(t, err, toolguard.ErrLoop)

			var sdkTool, ours []string
			for _, s := range spans.GetSpans() {
				verdict := ""
				for _, kv := range s.Attributes {
					if kv.Key == otelguard.AttrVerdict {
						verdict = kv.Value.AsString()
					}
				}
				switch {
				case s.Name == "anthropic.custom_tool_use get_weather":
					sdkTool = append(sdkTool, verdict)
				case s.InstrumentationScope.Name == otelguard.ScopeName:
					ours = append(ours, s.Name+" "+verdict)
				}
			}
			if annotate {
				assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, sdkTool, "the SDK's tool spans carry the verdicts")
				assert.Empty(t, ours, "no second span per call")
			} else {
				assert.Equal(t, []string{"", "", "", ""}, sdkTool)
				assert.Equal(t, []string{"execute_tool get_weather allow", "execute_tool get_weather allow",
					"toolguard.skip get_weather hint", "toolguard.skip get_weather abort"}, ours)
			}
		})
	}
}
