package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

// leakTemplates are transcripts of every format whose arguments and
// results hold ARG and RES (inside JSON strings: the placeholder is
// replaced by a JSON-quoted secret, or, to reach the error paths, by the
// secret with its quotes broken). Calls repeat so that rules fire and
// their messages are written.
var leakTemplates = []string{
	// episodes
	`{"episode":"e","calls":[{"turn":0,"tool":"search","args":{"q":ARG},"result":RES},{"turn":1,"tool":"search","args":{"q":ARG},"result":RES},{"turn":2,"tool":"search","args":{"q":ARG},"result":RES,"is_error":true}]}`,
	// OpenAI messages
	`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"web_search","arguments":ARG}}]},{"role":"tool","tool_call_id":"a","content":RES},{"role":"assistant","tool_calls":[{"id":"b","type":"function","function":{"name":"web_search","arguments":ARG}}]},{"role":"tool","tool_call_id":"b","content":RES},{"role":"assistant","function_call":{"name":"web_search","arguments":ARG}},{"role":"function","name":"web_search","content":RES}]}`,
	// Anthropic messages with server tools
	`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"fetch","input":{"url":ARG}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":RES,"is_error":true}]},{"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":ARG}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[{"type":"text","text":RES}]}]}]}`,
	// Claude Code
	`{"type":"user","sessionId":"s","uuid":"u1","cwd":"/w","message":{"role":"user","content":"go"}}
{"type":"assistant","sessionId":"s","uuid":"u2","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":ARG}}],"usage":{"input_tokens":10,"output_tokens":5}}}
{"type":"user","sessionId":"s","uuid":"u3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":RES,"is_error":true}]}}
{"type":"assistant","sessionId":"s","uuid":"u4","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":ARG}}],"usage":{"input_tokens":30,"output_tokens":5}}}
{"type":"user","sessionId":"s","uuid":"u5","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":RES,"is_error":true}]}}`,
	// Codex
	`{"type":"session_meta","payload":{"id":"c","cwd":"/w"}}
{"type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":ARG,"call_id":"c1"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":RES}}
{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":ARG,"call_id":"c2"}}
{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c2","output":RES}}`,
	// Gemini
	`{"sessionId":"g","projectHash":"p"}
{"id":"1","type":"user","content":"go"}
{"id":"2","type":"gemini","toolCalls":[{"id":"r1","name":"read_file","args":{"path":ARG},"result":[{"functionResponse":{"id":"r1","name":"read_file","response":{"output":RES}}}],"status":"error"}]}
{"id":"3","type":"gemini","toolCalls":[{"id":"r2","name":"read_file","args":{"path":ARG},"result":[{"functionResponse":{"id":"r2","name":"read_file","response":{"output":RES}}}],"status":"error"}]}`,
	// Responses API
	`{"input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"f1","name":"lookup","arguments":ARG},{"type":"function_call_output","call_id":"f1","output":RES},{"type":"function_call","call_id":"f2","name":"lookup","arguments":ARG},{"type":"function_call_output","call_id":"f2","output":RES}]}`,
	// chat.completion
	`{"object":"chat.completion","id":"x","choices":[{"message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"get","arguments":ARG}}]}}]}
{"object":"chat.completion","id":"y","choices":[{"message":{"role":"assistant","tool_calls":[{"id":"b","type":"function","function":{"name":"get","arguments":ARG}}]}}]}`,
	// Vercel AI SDK
	`[{"role":"user","parts":[{"type":"text","text":"go"}]},{"role":"assistant","parts":[{"type":"tool-get","toolCallId":"a","state":"output-available","input":{"q":ARG},"output":RES},{"type":"step-start"},{"type":"tool-get","toolCallId":"b","state":"output-error","input":{"q":ARG},"errorText":RES}]}]`,
	// OTLP
	`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"t","spanId":"1","name":"execute_tool x","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"x"}},{"key":"gen_ai.tool.call.arguments","value":{"stringValue":ARG}},{"key":"gen_ai.tool.call.result","value":{"stringValue":RES}}]},{"traceId":"t","spanId":"2","name":"execute_tool x","startTimeUnixNano":"3","endTimeUnixNano":"4","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"x"}},{"key":"gen_ai.tool.call.arguments","value":{"stringValue":ARG}},{"key":"gen_ai.tool.call.result","value":{"stringValue":RES}}]}]}]}]}`,
}

// FuzzAuditNoLeak runs every reader and every report on transcripts whose
// arguments and results hold a secret, well-formed or broken, and checks
// that the secret appears in no report and no error message.
func FuzzAuditNoLeak(f *testing.F) {
	for i := range leakTemplates {
		f.Add(uint8(i), "live4f9a8b7c6d5e", false)
		f.Add(uint8(i), "hunter2hunter2", true)
	}
	f.Fuzz(func(t *testing.T, which uint8, secret string, broken bool) {
		secret = strings.TrimSpace(secret)
		// A secret short or common enough to occur in the report's own words
		// ("calls", a tool name, a digit) proves nothing.
		if len(secret) < 10 || strings.ContainsAny(secret, "\x00") {
			t.Skip()
		}
		if broken && strings.ContainsAny(secret, `"\`) {
			t.Skip() // a quote would close the broken string: not broken
		}
		if !broken {
			// A report shows redacted previews of the arguments and results
			// of refused calls: a secret of a kind the redaction knows (here
			// a provider's key) never shows. A broken input's errors never
			// quote it, whatever it is.
			secret = "sk-" + strings.Map(func(r rune) rune {
				if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
					return r
				}
				return -1
			}, secret)
			if len(secret) < 11 {
				t.Skip()
			}
		}
		tmpl := leakTemplates[int(which)%len(leakTemplates)]
		quoted, _ := json.Marshal(secret)
		arg, res := string(quoted), string(quoted)
		if broken {
			arg = `"` + secret // an unterminated string: a parse error
		}
		// A string argument that is itself JSON holding the secret, as
		// OpenAI's arguments are.
		inner, _ := json.Marshal(map[string]string{"q": secret})
		argJSON, _ := json.Marshal(string(inner))
		in := strings.ReplaceAll(tmpl, `"arguments":ARG`, `"arguments":`+string(argJSON))
		if broken {
			in = strings.ReplaceAll(tmpl, `"arguments":ARG`, `"arguments":`+arg)
		}
		in = strings.ReplaceAll(strings.ReplaceAll(in, "ARG", arg), "RES", res)
		for _, format := range []string{"text", "json", "html"} {
			var out, errOut bytes.Buffer
			Main([]string{"--format", format, "--allow-no-calls", "-"},
				Env{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errOut})
			for _, leaked := range []string{secret, string(quoted), strings.ToLower(secret)} {
				if strings.Contains(out.String(), leaked) || strings.Contains(errOut.String(), leaked) {
					t.Fatalf("template %d, %s report: the secret %q leaked\nstdout:\n%s\nstderr:\n%s",
						int(which)%len(leakTemplates), format, secret, out.String(), errOut.String())
				}
			}
		}
	})
}
