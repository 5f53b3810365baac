package audit

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// otlpRecord is one OTLP-JSON export request ({"resourceSpans": [...]}),
// as the OpenTelemetry Collector's file exporter writes one per line.
type otlpRecord struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpSpan struct {
	TraceID      string     `json:"traceId"`
	SpanID       string     `json:"spanId"`
	ParentSpanID string     `json:"parentSpanId"`
	Name         string     `json:"name"`
	Start        otlpUint   `json:"startTimeUnixNano"`
	End          otlpUint   `json:"endTimeUnixNano"`
	Attributes   []otlpAttr `json:"attributes"`
	Status       *struct {
		Code json.RawMessage `json:"code"`
	} `json:"status"`
}

type otlpAttr struct {
	Key   string `json:"key"`
	Value struct {
		String *string          `json:"stringValue"`
		Int    *json.RawMessage `json:"intValue"`
		Bool   *bool            `json:"boolValue"`
	} `json:"value"`
}

// otlpUint is a uint64 that OTLP-JSON writes as a string (or a number).
type otlpUint uint64

func (u *otlpUint) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseUint(strings.Trim(string(b), `"`), 10, 64)
	if err != nil {
		return fmt.Errorf("want an integer timestamp")
	}
	*u = otlpUint(n)
	return nil
}

// genSpan is a span with the GenAI attributes the replay needs.
type genSpan struct {
	trace, id, parent string
	start, end        uint64
	op                string // gen_ai.operation.name
	conv              string // gen_ai.conversation.id
	tool, callID      string
	args              json.RawMessage
	result            string
	failed            bool
	in, out           int // gen_ai.usage.input_tokens, output_tokens
}

// otlpReader collects the spans of a file; at the end, the execute_tool
// spans are grouped into episodes by gen_ai.conversation.id (else by
// trace). In a conversation each trace is a user turn; calls under one
// parent after the same chat span are one round.
type otlpReader struct {
	spans []genSpan
	seen  map[string]int
}

func newOTLPReader() *otlpReader { return &otlpReader{seen: map[string]int{}} }

func (r *otlpReader) record(_ int, data []byte) error {
	var rec otlpRecord
	if err := decode(data, &rec); err != nil {
		return describeErr(err)
	}
	for _, rs := range rec.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for i := range ss.Spans {
				r.add(&ss.Spans[i])
			}
		}
	}
	return nil
}

func (r *otlpReader) add(sp *otlpSpan) {
	g := genSpan{trace: sp.TraceID, id: sp.SpanID, parent: sp.ParentSpanID, start: uint64(sp.Start), end: uint64(sp.End)}
	for _, a := range sp.Attributes {
		str := ""
		if a.Value.String != nil {
			str = *a.Value.String
		}
		switch a.Key {
		case "gen_ai.operation.name":
			g.op = str
		case "gen_ai.conversation.id":
			g.conv = str
		case "gen_ai.tool.name":
			g.tool = str
		case "gen_ai.tool.call.id":
			g.callID = str
		case "gen_ai.tool.call.arguments":
			if str != "" {
				g.args = openaiArgs(json.RawMessage(strconv.Quote(str)))
			}
		case "gen_ai.tool.call.result":
			g.result = str
		case "error.type":
			g.failed = true
		case "gen_ai.usage.input_tokens":
			g.in = otlpInt(a)
		case "gen_ai.usage.output_tokens":
			g.out = otlpInt(a)
		}
	}
	if sp.Status != nil {
		code := strings.Trim(string(sp.Status.Code), `"`)
		g.failed = g.failed || code == "2" || code == "STATUS_CODE_ERROR"
	}
	if g.op == "" && strings.HasPrefix(sp.Name, "execute_tool") {
		g.op = "execute_tool"
	}
	if g.op == "execute_tool" && g.tool == "" {
		g.tool = strings.TrimSpace(strings.TrimPrefix(sp.Name, "execute_tool"))
	}
	switch g.op {
	case "execute_tool", "chat", "text_completion", "generate_content", "invoke_agent":
		r.seen[g.op+" spans"]++
	case "":
		r.seen["spans without gen_ai.operation.name"]++
		if strings.Contains(strings.ToLower(sp.Name), "tool") {
			r.seen["unrecognized tool spans (no gen_ai.operation.name)"]++
		}
		return
	default:
		r.seen[clip(g.op)+" spans"]++
	}
	r.spans = append(r.spans, g)
}

func otlpInt(a otlpAttr) int {
	if a.Value.Int == nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.Trim(string(*a.Value.Int), `"`))
	return n
}

func (r *otlpReader) finish() ([]Episode, map[string]int, error) {
	// A trace belongs to the conversation that one of its spans names.
	traceConv := map[string]string{}
	for _, g := range r.spans {
		if g.conv != "" && traceConv[g.trace] == "" {
			traceConv[g.trace] = g.conv
		}
	}
	sort.SliceStable(r.spans, func(i, j int) bool { return r.spans[i].start < r.spans[j].start })
	type group struct {
		s         *session
		lastTrace string
	}
	groups := map[string]*group{}
	var order []string
	// The model calls of each trace, by end time.
	chats := map[string][]genSpan{}
	for _, g := range r.spans {
		if g.op == "chat" || g.op == "text_completion" || g.op == "generate_content" {
			chats[g.trace] = append(chats[g.trace], g)
		}
	}
	for _, cs := range chats {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].end < cs[j].end })
	}
	for _, g := range r.spans {
		if g.op != "execute_tool" {
			continue
		}
		key := traceConv[g.trace]
		name := key
		if key == "" {
			key, name = "trace "+g.trace, g.trace
		}
		gr := groups[key]
		if gr == nil {
			gr = &group{s: newSession(name)}
			groups[key] = gr
			order = append(order, key)
		}
		if g.trace != gr.lastTrace {
			gr.s.note("traces")
			gr.s.userTurn("")
			gr.lastTrace = g.trace
		}
		// The chat span of this trace that ended last before the call.
		var chat genSpan
		cs := chats[g.trace]
		if i := sort.Search(len(cs), func(i int) bool { return cs[i].end > g.start }); i > 0 {
			chat = cs[i-1]
		}
		roundKey := g.trace + "/" + g.parent + "/" + chat.id
		c := Call{ID: g.callID, Tool: g.tool, Args: g.args, Result: g.result, Failed: g.failed}
		gr.s.calls(roundKey, chat.in, chat.out, c)
	}
	var eps []Episode
	for _, k := range order {
		eps = append(eps, groups[k].s.finish())
	}
	return eps, r.seen, nil
}
