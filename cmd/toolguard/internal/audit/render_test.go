package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/toolguard/toolguard"
	"golang.org/x/net/html"
)

var fixtureFiles = []string{"episodes.jsonl", "openai.json", "openai.jsonl", "anthropic.json", "anthropic_array.json"}

// fixtureReport replays every fixture under the default policy, plus one
// file that failed to parse and an episode with a hostile name.
func fixtureReport(t *testing.T) *Report {
	t.Helper()
	r := &Report{Policy: "default"}
	for _, f := range fixtureFiles {
		format, eps, err := Parse(f, readFixture(t, f))
		if err != nil {
			t.Fatal(err)
		}
		r.Add(toolguard.Policy{}, f, format, eps)
	}
	hostile := `{"episode":"<script>alert(1)</script>\u001b[2J","label":"x\"y","calls":[{"turn":0,"tool":"<b>t</b>"}]}` + "\n" +
		`{"episode":"no-calls","label":"success","calls":[]}`
	format, eps, err := Parse("hostile.jsonl", []byte(hostile))
	if err != nil {
		t.Fatal(err)
	}
	r.Add(toolguard.Policy{}, "hostile.jsonl", format, eps)
	_, _, err = Parse("bad.jsonl", []byte("{\"calls\": [\n"))
	r.Files = append(r.Files, FileResult{File: "bad.jsonl", Err: err})
	return r
}

func TestWriteText(t *testing.T) {
	r := fixtureReport(t)
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"FILE  ",
		"episodes.jsonl        clean-success",
		"call 4 click: duplicate, hint (+2 more; first abort at call 5)",
		"openai.json           line 1",
		"call 5 search_direct_flight: duplicate, hint\n",
		// read_file may have changed the world: the test re-run after it is work.
		"anthropic.json        fix-test                          failure  6      clean\n",
		"clean\n",
		"Summary (policy: default)",
		"files                        7 (1 not read)",
		"episodes                     10",
		"calls                        37",
		"episodes with a firing       3",
		"episodes with an abort       2",
		"duplicate  3      4       3",
		"failure  3         18     2              2              7",
		"success  3         6      0              0              0",
		"false alarms on successes       0 of 3 successful episodes (0.0%) with a refusal",
		"failures stopped                2 of 3 failed episodes (66.7%) with a refusal",
		"calls saved on failed episodes  7 of 18 calls (38.9%) from the first refusal on",
		`<script>alert(1)</script>\x1b[2J`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	r := fixtureReport(t)
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"mia_li_3668", "18°C", "go test ./...", "payment method not found"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("the JSON report holds raw arguments or results: %q", secret)
		}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "report", doc, "policy", "files", "episodes", "decisions", "summary")

	var files []map[string]any
	mustUnmarshal(t, doc["files"], &files)
	if len(files) != 7 {
		t.Fatalf("%d files", len(files))
	}
	wantKeys(t, "file", files[0], "file", "format", "episodes", "calls", "error")
	if files[0]["format"] != "episodes" || files[6]["error"] == "" || files[6]["format"] != "" {
		t.Errorf("files = %v", files)
	}

	var eps []map[string]any
	mustUnmarshal(t, doc["episodes"], &eps)
	wantKeys(t, "episode", eps[0], "file", "project", "episode", "label", "calls", "firings", "first_firing", "verdict", "phase", "cost",
		"title", "looks", "refused_nothing_new", "refused_new_result")
	if eps[0]["first_firing"] != nil || eps[1]["first_firing"] != 4.0 || eps[1]["verdict"] != "abort" || eps[1]["firings"] != 3.0 {
		t.Errorf("episodes[0:2] = %v", eps[:2])
	}

	var ds []map[string]any
	mustUnmarshal(t, doc["decisions"], &ds)
	if len(ds) != 37 {
		t.Fatalf("%d decisions, want one per call (37)", len(ds))
	}
	wantKeys(t, "decision", ds[0], "file", "episode", "label", "index", "round", "turn", "tool", "call_id",
		"failed", "verdict", "reason", "phase", "message", "line")
	d := ds[7] // click-loop, call 4
	// A refused call says what it was, what it got and what governs it.
	wantKeys(t, "refused decision", d, "file", "episode", "label", "index", "round", "turn", "tool", "call_id",
		"failed", "verdict", "reason", "phase", "message", "line", "args_preview", "result_preview", "setting", "result_was")
	if d["episode"] != "click-loop" || d["index"] != 4.0 || d["verdict"] != "hint" || d["reason"] != "duplicate" ||
		d["phase"] != "normal" || !strings.HasPrefix(d["message"].(string), toolguard.HintMarker) || d["call_id"] != "4" {
		t.Errorf("decision = %v", d)
	}
	if ds[0]["verdict"] != "allow" || ds[0]["reason"] != "none" || ds[0]["message"] != "" {
		t.Errorf("allowed decision = %v", ds[0])
	}

	var sum map[string]json.RawMessage
	mustUnmarshal(t, doc["summary"], &sum)
	wantKeys(t, "summary", sum, "files", "files_not_read", "episodes", "calls", "episodes_with_firing",
		"episodes_with_hint", "episodes_with_abort", "episodes_reaching_phase", "firings_by_reason", "by_label", "outcomes",
		"files_skipped", "files_without_calls", "refused_calls", "refused_by_tool", "by_project", "worst_episodes", "cost", "policies")
	var reasons []map[string]any
	mustUnmarshal(t, sum["firings_by_reason"], &reasons)
	if len(reasons) != 1 || reasons[0]["reason"] != "duplicate" || reasons[0]["hints"] != 3.0 || reasons[0]["aborts"] != 4.0 {
		t.Errorf("firings_by_reason = %v", reasons)
	}
	var labels []map[string]any
	mustUnmarshal(t, sum["by_label"], &labels)
	wantKeys(t, "by_label", labels[0], "label", "episodes", "calls", "episodes_with_firing", "episodes_with_abort", "episodes_first_refusal_new", "calls_from_first_firing")
	var outcomes map[string]any
	mustUnmarshal(t, sum["outcomes"], &outcomes)
	wantKeys(t, "outcomes", outcomes, "successes", "false_alarms", "lossy_false_alarms", "failures", "failures_stopped",
		"failure_calls", "failure_calls_saved", "failure_calls_saved_share")
}

func TestWriteJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, &Report{Policy: "default"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"files": []`, `"episodes": []`, `"decisions": []`, `"firings_by_reason": []`, `"by_label": []`, `"outcomes": null`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("empty report lacks %s:\n%s", want, b.String())
		}
	}
}

func wantKeys[V any](t *testing.T, what string, m map[string]V, keys ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(keys)
	if strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("%s keys = %v, want %v", what, got, keys)
	}
}

func mustUnmarshal(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

func TestWriteHTML(t *testing.T) {
	r := fixtureReport(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	type episode struct {
		file, name string
		cells      []*html.Node
	}
	var (
		episodes []episode
		tags     = map[string]int{}
	)
	var walk func(n *html.Node, ep *episode)
	walk = func(n *html.Node, ep *episode) {
		if n.Type == html.ElementNode {
			tags[n.Data]++
			for _, a := range n.Attr {
				if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("<%s %s=%q>: the page must need no other resource", n.Data, a.Key, a.Val)
				}
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("<%s %s>: no scripts", n.Data, a.Key)
				}
			}
			switch {
			case n.Data == "div" && hasClass(n, "episode"):
				episodes = append(episodes, episode{file: attr(n, "data-file"), name: attr(n, "data-episode")})
				ep = &episodes[len(episodes)-1]
			case n.Data == "span" && hasClass(n, "cell"):
				if ep == nil {
					t.Errorf("a cell outside an episode")
				} else {
					ep.cells = append(ep.cells, n)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, ep)
		}
	}
	walk(doc, nil)

	if tags["script"] != 0 || tags["link"] != 0 || tags["img"] != 0 || tags["iframe"] != 0 {
		t.Errorf("tags = %v: no scripts or external resources", tags)
	}
	if tags["style"] != 1 {
		t.Errorf("%d style elements, want the one inline style sheet", tags["style"])
	}
	if len(episodes) != len(r.Episodes) {
		t.Fatalf("%d episodes in the page, want %d", len(episodes), len(r.Episodes))
	}
	for i, ep := range episodes {
		want := &r.Episodes[i]
		if ep.file != want.File || ep.name != want.Episode {
			t.Errorf("episode %d = %s %q, want %s %q", i, ep.file, ep.name, want.File, want.Episode)
		}
		if len(ep.cells) != len(want.Decisions) {
			t.Errorf("%s %s: %d cells, want one per call (%d)", ep.file, ep.name, len(ep.cells), len(want.Decisions))
			continue
		}
		for j, cell := range ep.cells {
			d := want.Decisions[j]
			if !hasClass(cell, "v-"+d.Verdict.String()) || !hasClass(cell, "p-"+d.Phase.String()) {
				t.Errorf("%s call %d: class %q, want verdict %s and phase %s", ep.name, j+1, attr(cell, "class"), d.Verdict, d.Phase)
			}
			title := attr(cell, "title")
			if !strings.Contains(title, d.Tool) || (d.Fired() && !strings.Contains(title, d.Reason.String())) {
				t.Errorf("%s call %d: title %q lacks the tool or the reason", ep.name, j+1, title)
			}
		}
	}
	// The hostile episode name is text, not markup.
	if !strings.Contains(b.String(), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("episode names are not escaped")
	}
	for _, want := range []string{"files not read", "bad.jsonl", "no tool calls", "duplicate", `href="#ep-2"`, "1 call ·"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// outcomeReport is a report built from decisions, with known first
// firings: per label, the calls from the first refusal on.
func outcomeReport() *Report {
	ep := func(label string, calls int, fired map[int]toolguard.Verdict) EpisodeResult {
		e := EpisodeResult{File: "f", Episode: fmt.Sprintf("%s-%d", label, calls), Label: label}
		for i := 1; i <= calls; i++ {
			d := Decision{Index: i, Round: i, Turn: 1, Tool: "t", Verdict: fired[i]}
			if d.Verdict != toolguard.Allow {
				d.Reason = toolguard.ReasonDuplicate
			}
			e.Decisions = append(e.Decisions, d)
		}
		return e
	}
	h, x := toolguard.Hint, toolguard.Abort
	return &Report{Policy: "default", Episodes: []EpisodeResult{
		ep("success", 5, map[int]toolguard.Verdict{3: h}),        // a false alarm
		ep("success", 3, nil),                                    // clean
		ep("failure", 10, map[int]toolguard.Verdict{4: h, 6: x}), // stopped at 4: 7 calls saved
		ep("failure", 5, nil),                                    // not stopped
		ep("failure", 2, map[int]toolguard.Verdict{2: x}),        // stopped at its last call: 1 saved
		ep("unknown", 3, map[int]toolguard.Verdict{1: h}),        // in neither
	}}
}

func TestOutcomes(t *testing.T) {
	r := outcomeReport()
	s := r.Summary()
	want := Outcomes{Successes: 2, FalseAlarms: 1, Failures: 3, Stopped: 2, FailureCalls: 17, SavedCalls: 8}
	if s.Outcomes == nil || *s.Outcomes != want {
		t.Fatalf("outcomes = %+v, want %+v", s.Outcomes, want)
	}
	if got := s.Outcomes.SavedShare(); got != 8.0/17 {
		t.Errorf("share = %v", got)
	}
	from := map[string]int{}
	for _, lc := range s.ByLabel {
		from[lc.Label] = lc.FromFirstFiring
	}
	if from["success"] != 3 || from["failure"] != 8 || from["unknown"] != 3 {
		t.Errorf("calls from the first firing by label = %v", from)
	}
	if (Outcomes{}).SavedShare() != 0 {
		t.Errorf("share without calls is not 0")
	}

	// Without a success or failure label there is nothing to measure.
	unlabelled := &Report{Episodes: []EpisodeResult{{Episode: "a", Label: "unknown"}, {Episode: "b"}}}
	if o := unlabelled.Summary().Outcomes; o != nil {
		t.Errorf("outcomes without labels = %+v", o)
	}
	// Only failures: the successes read 0 of 0.
	onlyFail := &Report{Episodes: r.Episodes[2:4]}
	if o := onlyFail.Summary().Outcomes; o == nil || *o != (Outcomes{Failures: 2, Stopped: 1, FailureCalls: 15, SavedCalls: 7}) {
		t.Errorf("outcomes of failures only = %+v", o)
	}
}

func TestOutcomesRendered(t *testing.T) {
	r := outcomeReport()
	var text, js, page bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Against the labels (a refusal is a hint or an abort)",
		"false alarms on successes       1 of 2 successful episodes (50.0%) with a refusal\n",
		"lossy false alarms              0 of 2 successful episodes (0.0%) whose first refused call would have returned something new\n",
		"failures stopped                2 of 3 failed episodes (66.7%) with a refusal\n",
		"calls saved on failed episodes  8 of 17 calls (47.1%) from the first refusal on\n",
		"failure  3         17     2              2              8\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}

	var doc struct {
		Summary struct {
			Outcomes map[string]float64 `json:"outcomes"`
			ByLabel  []map[string]any   `json:"by_label"`
		} `json:"summary"`
	}
	mustUnmarshal(t, js.Bytes(), &doc)
	wantJSON := map[string]float64{"successes": 2, "false_alarms": 1, "lossy_false_alarms": 0, "failures": 3, "failures_stopped": 2,
		"failure_calls": 17, "failure_calls_saved": 8, "failure_calls_saved_share": 8.0 / 17}
	if fmt.Sprint(doc.Summary.Outcomes) != fmt.Sprint(wantJSON) {
		t.Errorf("JSON outcomes = %v, want %v", doc.Summary.Outcomes, wantJSON)
	}
	if l := doc.Summary.ByLabel[0]; l["label"] != "failure" || l["calls_from_first_firing"] != 8.0 {
		t.Errorf("JSON by_label[0] = %v", l)
	}

	n, err := html.Parse(bytes.NewReader(page.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	var walk func(*html.Node, bool)
	walk = func(n *html.Node, in bool) {
		in = in || (n.Type == html.ElementNode && n.Data == "table" && hasClass(n, "outcomes"))
		if in && n.Type == html.ElementNode && n.Data == "tr" {
			rows = append(rows, strings.TrimSpace(textOf(n)))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, in)
		}
	}
	walk(n, false)
	wantRows := []string{
		"against the labels (a refusal is a hint or an abort)",
		"false alarms on successes1 of 2 successful episodes (50.0%)",
		"failures stopped2 of 3 failed episodes (66.7%)",
		"calls saved on failed episodes8 of 17 calls (47.1%)",
	}
	if strings.Join(rows, "|") != strings.Join(wantRows, "|") {
		t.Errorf("HTML outcome rows = %q, want %q", rows, wantRows)
	}

	// No labelled episode: no such section in any output.
	r = &Report{Episodes: []EpisodeResult{{Episode: "a", Label: "unknown"}}}
	text.Reset()
	page.Reset()
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "Against the labels") || strings.Contains(page.String(), `class="outcomes"`) {
		t.Errorf("an outcome section without success or failure episodes")
	}
}

// textOf is the text of n and its descendants.
func textOf(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textOf(c))
	}
	return b.String()
}

// A lossy false alarm refuses, in a successful episode, a call whose
// recorded result was new to its user turn.
func TestLossyFalseAlarms(t *testing.T) {
	calls := []Call{
		{Turn: 1, Result: "a"},
		{Turn: 1, Result: "a"},               // the same result again: not new
		{Turn: 1, Result: "a", Failed: true}, // a failure is another result
		{Turn: 2, Result: "a"},               // new to its user turn
	}
	for i, want := range []bool{true, false, true, true} {
		if got := NewToTurn(calls, i); got != want {
			t.Errorf("NewToTurn(calls, %d) = %v, want %v", i, got, want)
		}
	}
	if NewToTurn(calls, -1) || NewToTurn(calls, len(calls)) {
		t.Errorf("NewToTurn out of range is not false")
	}
	decisions := func(fired int) []Decision {
		ds := make([]Decision, len(calls))
		for i := range ds {
			ds[i] = Decision{Index: i + 1, Turn: calls[i].Turn, Tool: "t"}
		}
		ds[fired] = Decision{Index: fired + 1, Turn: calls[fired].Turn, Tool: "t", Verdict: toolguard.Hint, Reason: toolguard.ReasonDuplicate}
		return ds
	}
	r := &Report{Episodes: []EpisodeResult{
		{Episode: "lossless", Label: "success", Stats: NewEpisodeStats(decisions(1), calls, false)},
		{Episode: "lossy", Label: "success", Stats: NewEpisodeStats(decisions(3), calls, false)},
		{Episode: "failed", Label: "failure", Stats: NewEpisodeStats(decisions(3), calls, false)},
	}}
	o := r.Summary().Outcomes
	if o == nil || o.FalseAlarms != 2 || o.LossyFalseAlarms != 1 {
		t.Errorf("outcomes = %+v, want 2 false alarms, 1 lossy", o)
	}
}
