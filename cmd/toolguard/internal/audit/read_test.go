package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard"
)

const fixtures = "../../testdata"

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// shape is what a parsed episode looks like: per call "tool round turn",
// with "!" for a recorded failure.
type shape struct {
	name, label string
	calls       []string
}

func shapeOf(ep Episode) shape {
	s := shape{name: ep.Name, label: ep.Label}
	for _, c := range ep.Calls {
		x := c.Tool + " " + itoa(c.Round) + " " + itoa(c.Turn)
		if c.Failed {
			x += " !"
		}
		s.calls = append(s.calls, x)
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file   string
		format Format
		want   []shape
	}{
		{"episodes.jsonl", FormatEpisodes, []shape{
			{"clean-success", "success", []string{"get_user_details 1 1", "search_direct_flight 2 1", "search_direct_flight 2 1", "book_reservation 3 1"}},
			{"click-loop", "failure", []string{"search 1 1", "click 2 1 !", "click 3 1 !", "click 4 1 !", "click 5 1 !", "click 6 1 !"}},
			{"17", "unknown", []string{"list_dir 1 1", "read_file 1 1", "read_file 2 1"}},
		}},
		{"openai.json", FormatOpenAI, []shape{
			{"line 1", "", []string{"get_reservation_details 1 1", "get_user_details 1 1",
				"search_direct_flight 2 1", "search_direct_flight 3 1", "search_direct_flight 4 1",
				"update_reservation_flights 5 1 !", "search_direct_flight 6 2"}},
		}},
		{"openai.jsonl", FormatOpenAI, []shape{
			{"weather-ok", "success", []string{"get_weather 1 1", "get_weather 1 1"}},
			{"weather-retry", "failure", []string{"get_weather 1 1 !", "get_weather 2 1 !", "get_weather 3 1 !",
				"get_weather 4 1 !", "get_weather 5 1 !", "get_weather 6 1 !"}},
		}},
		{"anthropic.json", FormatAnthropic, []shape{
			{"fix-test", "failure", []string{"bash 1 1 !", "read_file 2 1", "read_file 2 1", "bash 3 1 !", "bash 4 1 !", "bash 5 2"}},
		}},
		{"anthropic_array.json", FormatAnthropic, []shape{
			{"line 1", "", []string{"web_search 1 1", "web_fetch 2 1"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			format, eps, err := Parse(tt.file, readFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if format != tt.format {
				t.Errorf("format = %s, want %s", format, tt.format)
			}
			if len(eps) != len(tt.want) {
				t.Fatalf("%d episodes, want %d", len(eps), len(tt.want))
			}
			for i, ep := range eps {
				if ep.File != tt.file {
					t.Errorf("episode %d: file %q", i, ep.File)
				}
				got := shapeOf(ep)
				if strings.Join(got.calls, "|") != strings.Join(tt.want[i].calls, "|") || got.name != tt.want[i].name || got.label != tt.want[i].label {
					t.Errorf("episode %d:\n got %+v\nwant %+v", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestParseContent(t *testing.T) {
	_, eps, err := Parse("openai.json", readFixture(t, "openai.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := eps[0].Calls
	if c[0].ID != "call_1" || string(c[0].Args) != `{"reservation_id": "NO6JO3"}` {
		t.Errorf("call 1 = %q %s", c[0].ID, c[0].Args)
	}
	if c[2].Result != "[]" || c[6].Result != "[]" {
		t.Errorf("results %q %q: a string and a list of text parts both read as text", c[2].Result, c[6].Result)
	}
	if c[5].Result != "Error: payment method not found" || !c[5].Failed {
		t.Errorf("call 6 = %q failed %v", c[5].Result, c[5].Failed)
	}

	_, eps, err = Parse("anthropic.json", readFixture(t, "anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	c = eps[0].Calls
	if c[2].Result != "package parse\nfunc TestParse(t *testing.T) {}" {
		t.Errorf("text blocks joined: %q", c[2].Result)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, c[0].Args); err != nil || compact.String() != `{"command":"go test ./..."}` {
		t.Errorf("input = %s (%v)", c[0].Args, err)
	}

	_, eps, err = Parse("openai.jsonl", readFixture(t, "openai.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(eps[1].Calls[5].Args); got != `{"_raw":"{city: Atlantis"}` {
		t.Errorf("arguments that are not JSON: %s", got)
	}
}

func TestParseInline(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		format Format
		calls  []string // per episode: tools joined by ","
	}{
		{"bom and blank lines", "\xef\xbb\xbf\n\n" + `{"episode":"e","calls":[{"turn":0,"tool":"a"}]}` + "\n\n", FormatEpisodes, []string{"a"}},
		{"calls null", `{"episode":"e","calls":null}`, FormatEpisodes, []string{""}},
		{"calls without turn are rounds of their own", `{"calls":[{"tool":"a"},{"tool":"b"}]}`, FormatEpisodes, []string{"a,b"}},
		{"two indented documents", "{\n \"messages\": []\n}\n{\n \"messages\": [{\"role\":\"user\",\"content\":\"hi\"}]\n}\n", FormatMessages, []string{"", ""}},
		{"array on one line", `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`, FormatMessages, []string{""}},
		{"conversation without calls then openai", `{"messages":[{"role":"user","content":"hi"}]}` + "\n" +
			`{"messages":[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":{"x":1}}}]}]}`, FormatOpenAI, []string{"", "f"}},
		{"openai custom tool", `{"messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"custom","custom":{"name":"patch","input":"*** Begin"}}]}]}`, FormatOpenAI, []string{"patch"}},
		{"call without a result", `{"messages":[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":""}}]}]}`, FormatOpenAI, []string{"f"}},
		{"anthropic string content", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"g","input":{}}]}]}`, FormatAnthropic, []string{"g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format, eps, err := Parse("in", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if format != tt.format {
				t.Errorf("format = %s, want %s", format, tt.format)
			}
			var got []string
			for _, ep := range eps {
				var tools []string
				for _, c := range ep.Calls {
					tools = append(tools, c.Tool)
				}
				got = append(got, strings.Join(tools, ","))
			}
			if strings.Join(got, "|") != strings.Join(tt.calls, "|") {
				t.Errorf("calls = %q, want %q", got, tt.calls)
			}
		})
	}
}

func TestParseTurnsAndRounds(t *testing.T) {
	// A user message that only carries tool results continues the turn; one
	// with text starts a new turn, after its results are paired.
	in := `{"messages":[
{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"},{"type":"tool_result","tool_use_id":"b","content":"2","is_error":true}]},
{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"3"},{"type":"text","text":"next question"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"d","name":"f","input":{}}]}
]}`
	_, eps, err := Parse("in", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := shapeOf(eps[0]).calls
	want := []string{"f 1 1", "g 1 1 !", "f 2 1", "f 3 2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if eps[0].Calls[2].Result != "3" {
		t.Errorf("result of c = %q", eps[0].Calls[2].Result)
	}
}

func TestParseUserTurns(t *testing.T) {
	tests := []struct {
		name, calls string
		want        []string // "tool round turn"
	}{
		{
			name:  "absent: one user turn",
			calls: `{"turn":0,"tool":"a"},{"turn":0,"tool":"b"},{"turn":2,"tool":"a"}`,
			want:  []string{"a 1 1", "b 1 1", "a 2 1"},
		},
		{
			name:  "null counts as absent",
			calls: `{"turn":0,"user_turn":null,"tool":"a"},{"turn":1,"tool":"b"}`,
			want:  []string{"a 1 1", "b 2 1"},
		},
		{
			name:  "0-based user_turn becomes a 1-based Turn; a shared turn stays one round",
			calls: `{"turn":0,"user_turn":0,"tool":"a"},{"turn":0,"user_turn":0,"tool":"b"},{"turn":3,"user_turn":1,"tool":"a"},{"turn":3,"user_turn":1,"tool":"c"},{"turn":4,"user_turn":1,"tool":"a"}`,
			want:  []string{"a 1 1", "b 1 1", "a 2 2", "c 2 2", "a 3 2"},
		},
		{
			name:  "user turns may skip numbers and start above 0",
			calls: `{"turn":0,"user_turn":2,"tool":"a"},{"turn":1,"user_turn":5,"tool":"a"}`,
			want:  []string{"a 1 3", "a 2 6"},
		},
		{
			name:  "a new user turn starts a new round even where turn is shared",
			calls: `{"turn":7,"user_turn":0,"tool":"a"},{"turn":7,"user_turn":1,"tool":"a"}`,
			want:  []string{"a 1 1", "a 2 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, eps, err := Parse("in", []byte(`{"episode":"e","calls":[`+tt.calls+`]}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := shapeOf(eps[0]).calls; strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReplayUserTurns: the replay of a parsed episode resets where
// user_turn changes, so identical calls in two user turns do not add up.
func TestReplayUserTurns(t *testing.T) {
	call := func(turn, user int) string {
		u := ""
		if user >= 0 {
			u = `"user_turn":` + itoa(user) + `,`
		}
		return `{"turn":` + itoa(turn) + `,` + u + `"tool":"get_weather","args":{"city":"Paris"},"result":"18°C"}`
	}
	tests := []struct {
		name  string
		users []int // -1: no user_turn
		want  string
	}{
		{"one user turn", []int{-1, -1, -1, -1}, "a a h:duplicate x:duplicate"},
		{"user_turn 0 throughout", []int{0, 0, 0, 0}, "a a h:duplicate x:duplicate"},
		{"a new user turn after two calls", []int{0, 0, 1, 1}, "a a a a"},
		{"a new user turn after three", []int{0, 0, 0, 1}, "a a h:duplicate a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs []string
			for i, u := range tt.users {
				cs = append(cs, call(i, u))
			}
			_, eps, err := Parse("in", []byte(`{"episode":"e","calls":[`+strings.Join(cs, ",")+`]}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(Replay(toolguard.Policy{}, &eps[0])); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseReusedIDs(t *testing.T) {
	// Some sources reuse call ids: a result goes to the oldest call with
	// that id that has none yet.
	in := `[{"role":"assistant","tool_calls":[{"id":"x","function":{"name":"f","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"x","content":"first"},
{"role":"assistant","tool_calls":[{"id":"x","function":{"name":"f","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"x","content":"Error: second"}]`
	_, eps, err := Parse("in", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	c := eps[0].Calls
	if c[0].Result != "first" || c[0].Failed || c[1].Result != "Error: second" || !c[1].Failed {
		t.Errorf("calls = %+v", c)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // a fixture under testdata/bad, or
		in   string // inline input
		line int
		want string
	}{
		{name: "truncated line", file: "truncated.jsonl", line: 2, want: "truncated JSON"},
		{name: "truncated document", file: "truncated_doc.json", line: 1, want: "truncated JSON: the input ends (line 11)"},
		{name: "tool message without a call", file: "orphan_tool.json", line: 27, want: `messages[3].tool_call_id: a tool result for call id "call_9"`},
		{name: "tool result without a call", file: "orphan_result.jsonl", line: 2, want: `messages[0].content[0].tool_use_id: a tool result for call id "toolu_x"`},
		{name: "wrong type in an episode", file: "wrong_types.jsonl", line: 3, want: "calls[1].tool: want a string, got number"},
		{name: "wrong type in a message", file: "wrong_types_openai.jsonl", line: 1, want: "messages[1].tool_calls: want an array, got string"},
		{name: "two formats", file: "mixed.jsonl", line: 2, want: "an OpenAI conversation, but the file's first record is an episode record"},
		{name: "not a trace", file: "not_a_trace.jsonl", line: 1, want: "not a transcript this command reads: the first record is an object with keys items, name"},
		{name: "empty", file: "empty.jsonl", line: 0, want: "empty input"},
		{name: "invalid JSON", in: `{"calls": [}`, line: 1, want: "invalid JSON at column"},
		{name: "garbage after a document", in: "{\n\"messages\": []\n}\n]", line: 4, want: "invalid JSON"},
		{name: "scalar", in: `42`, line: 1, want: "the first record is not a JSON object"},
		{name: "empty tool", in: `{"calls":[{"turn":0,"tool":""}]}`, line: 1, want: "calls[0].tool: missing or empty"},
		{name: "turn not an integer", in: `{"calls":[{"turn":1.5,"tool":"a"}]}`, line: 1, want: "calls[0].turn: want an integer, got number"},
		{name: "user_turn negative", in: `{"calls":[{"turn":0,"user_turn":-1,"tool":"a"}]}`, line: 1, want: "calls[0].user_turn: -1 is negative"},
		{name: "user_turn a string", in: `{"calls":[{"turn":0,"user_turn":"1","tool":"a"}]}`, line: 1, want: "calls[0].user_turn: want an integer, got string"},
		{name: "user_turn a fraction", in: `{"calls":[{"turn":0,"user_turn":0.5,"tool":"a"}]}`, line: 1, want: "calls[0].user_turn: want an integer, got number"},
		{name: "user_turn beyond int64", in: `{"calls":[{"turn":0,"user_turn":1e30,"tool":"a"}]}`, line: 1, want: "calls[0].user_turn: want an integer, got number"},
		{name: "user_turn too large", in: `{"calls":[{"turn":0,"user_turn":9223372036854775807,"tool":"a"}]}`, line: 1, want: "calls[0].user_turn: 9223372036854775807 is too large"},
		{name: "user_turn going back", in: `{"calls":[{"turn":0,"user_turn":2,"tool":"a"},{"turn":1,"user_turn":1,"tool":"a"}]}`, line: 1, want: "calls[1].user_turn: 1 after 2 (user turns never go back)"},
		{name: "user_turn missing on a later call", in: `{"calls":[{"turn":0,"user_turn":0,"tool":"a"},{"turn":1,"tool":"a"}]}`, line: 1, want: "calls[1].user_turn: missing, but the episode's first call has one"},
		{name: "user_turn only on a later call", in: `{"calls":[{"turn":0,"tool":"a"},{"turn":1,"user_turn":0,"tool":"a"}]}`, line: 1, want: "calls[1].user_turn: present, but the episode's first call has none"},
		{name: "is_error a string", in: `{"calls":[{"tool":"a","is_error":"yes"}]}`, line: 1, want: "calls[0].is_error: want true or false, got string"},
		{name: "id an object", in: `{"calls":[{"tool":"a","id":{}}]}`, line: 1, want: "calls[0].id: want a string, got object"},
		{name: "label a number", in: `{"label":1,"calls":[]}`, line: 1, want: "label: want a string, got number"},
		{name: "messages an object", in: `{"messages":{}}`, line: 1, want: "messages: want an array, got object"},
		{name: "missing role", in: `[{"content":"hi"}]`, line: 1, want: "messages[0].role: missing"},
		{name: "unknown role", in: `[{"role":"robot","content":"hi"}]`, line: 1, want: `messages[0].role: unknown role "robot"`},
		{name: "no function name", in: `[{"role":"assistant","tool_calls":[{"id":"1","function":{"arguments":"{}"}}]}]`, line: 1, want: "messages[0].tool_calls[0].function.name: missing or empty"},
		{name: "tool message without id", in: `[{"role":"tool","content":"x"}]`, line: 1, want: "messages[0]: a tool message without tool_call_id"},
		{name: "tool content a number", in: `[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"1","content":5}]`, line: 1, want: "messages[1].content: want a string or a list of content blocks, got number"},
		{name: "second result for a call", in: `[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"1","content":""},{"role":"tool","tool_call_id":"1","content":""}]`, line: 1, want: "which already has a result"},
		{name: "tool_use without name", in: `[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]`, line: 1, want: "messages[0].content[0].name: missing or empty"},
		{name: "both providers", in: `[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f"}}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"g"}]}]`, line: 1, want: "mix OpenAI tool_calls and Anthropic tool_use"},
		{name: "block not an object", in: `[{"role":"user","content":["hi"]}]`, line: 1, want: "messages[0].content: want an object, got string"},
		{name: "error on a later line of a document", in: "[\n{\"role\": \"user\", \"content\": \"hi\"},\n{\"role\": 7}\n]", line: 3, want: "messages[1].role: want a string, got number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, data := "inline", []byte(tt.in)
			if tt.file != "" {
				name = "bad/" + tt.file
				data = readFixture(t, name)
			}
			_, eps, err := Parse(name, data)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if eps != nil {
				t.Errorf("episodes returned with an error")
			}
			if pe.File != name || pe.Line != tt.line || !strings.Contains(pe.Problem, tt.want) {
				t.Errorf("got %s\nwant file %s, line %d, problem containing %q", err, name, tt.line, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "toolguard audit: "+name+": ") {
				t.Errorf("message %q does not start with the command and the file", err)
			}
		})
	}
}

func TestParseErrorsDoNotQuoteContent(t *testing.T) {
	secret := "sk-live-0123456789"
	inputs := []string{
		`{"calls":[{"turn":0,"tool":5,"args":{"key":"` + secret + `"}}]}`,
		`[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"k\":\"` + secret + `\"}"}}]},{"role":"tool","tool_call_id":"2","content":"` + secret + `"}]`,
		`{"calls":[{"turn":0,"tool":"a","args":{"key":"` + secret + `"}}`,
	}
	for _, in := range inputs {
		_, _, err := Parse("in", []byte(in))
		if err == nil {
			t.Fatalf("no error for %s", in)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error quotes the content: %v", err)
		}
	}
}

func TestLocate(t *testing.T) {
	doc := "{\n  \"a\": 1,\n  \"messages\": [\n    {\"x\": 1},\n    {\n      \"role\": 2\n    }\n  ]\n}"
	tests := []struct {
		path string
		line int
	}{
		{"messages", 3},
		{"messages[1]", 5},
		{"messages[1].role", 6},
		{"messages[7].role", 3}, // as far as the path goes
		{"nothing here", 1},
	}
	for _, tt := range tests {
		r := record{line: 1, data: []byte(doc)}
		if got := r.lineOf(tt.path + ": problem"); got != tt.line {
			t.Errorf("%s: line %d, want %d", tt.path, got, tt.line)
		}
	}
}

// FuzzParse checks that no input makes Parse panic, and that what it
// returns replays.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"episodes.jsonl", "openai.json", "openai.jsonl", "anthropic.json", "anthropic_array.json",
		"bad/truncated.jsonl", "bad/orphan_tool.json", "bad/wrong_types.jsonl"} {
		data, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// Every session fixture small enough to mutate quickly: each reader.
	_ = filepath.WalkDir(filepath.Join(fixtures, "sessions"), func(p string, d os.DirEntry, err error) error {
		if info, ierr := os.Stat(p); err == nil && ierr == nil && !d.IsDir() && info.Size() < 20<<10 && !strings.HasSuffix(p, "README.md") {
			data, _ := os.ReadFile(p)
			f.Add(data)
		}
		return nil
	})
	f.Add([]byte("[\n{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\"}]}\n]"))
	f.Add([]byte(`{"calls":[{"turn":0,"user_turn":0,"tool":"a"},{"turn":0,"user_turn":1,"tool":"a"},{"turn":2,"user_turn":1,"tool":"b"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, eps, err := Parse("fuzz", data)
		if err != nil {
			if eps != nil {
				t.Errorf("episodes with an error")
			}
			return
		}
		for i := range eps {
			for j, c := range eps[i].Calls {
				if c.Turn < 1 || (j > 0 && c.Turn < eps[i].Calls[j-1].Turn) {
					t.Errorf("call %d: turn %d after %v", j, c.Turn, eps[i].Calls[:j])
				}
			}
			ds := Replay(toolguard.Policy{}, &eps[i])
			if len(ds) != len(eps[i].Calls) {
				t.Errorf("%d decisions for %d calls", len(ds), len(eps[i].Calls))
			}
		}
	})
}
