package audit

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/toolguard/toolguard"
)

//go:embed report.html.tmpl
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"ofN": ofN}).Parse(reportHTML))

type htmlPage struct {
	Policy   string
	Summary  Summary
	Policies []PolicyRow // with --compare
	Errors   []string
	Fired    []htmlLink
	Episodes []htmlEpisode
}

// htmlLink points at an episode with a firing: its block and first firing.
type htmlLink struct {
	ID, File, Episode, Verdict string
	Index                      int
}

type htmlEpisode struct {
	ID, File, Episode, Label, LabelClass string
	Title, Looks, LooksClass             string
	Calls                                int
	First                                string
	Cells                                []htmlCell
	Firings                              []htmlFiring
	MoreFirings                          int
}

// htmlFiring is one refused call, as the text report details it.
type htmlFiring struct {
	Call, Where, Rule, Args, Result, New, Setting string
	Abort                                         bool
}

// maxHTMLFirings bounds the firings an episode's block details.
const maxHTMLFirings = 10

type htmlCell struct {
	Class, Title string
}

// WriteHTML writes the report as one self-contained page: inline CSS, no
// scripts, no external resources. Each episode is a timeline with one cell
// per call, coloured by verdict and phase, whose title names the call's
// tool, reason and verdict; the summary tables come first.
func WriteHTML(w io.Writer, r *Report) error {
	page := htmlPage{Policy: r.Policy, Summary: r.Summary()}
	if len(r.Compare) > 0 {
		page.Policies = r.Policies()
	}
	for _, f := range r.Files {
		if f.Err != nil {
			page.Errors = append(page.Errors, f.Err.Error())
		}
	}
	for i := range r.Episodes {
		e := &r.Episodes[i]
		he := htmlEpisode{
			ID:   fmt.Sprintf("ep-%d", i+1),
			File: e.File, Episode: e.Episode, Label: e.Label, LabelClass: labelClass(e.Label),
			Calls: e.Calls(), First: firstFiring(e),
			Title: e.Title(), Looks: e.Looks().String(), LooksClass: e.Looks().class(),
		}
		fs := e.firings()
		for j, d := range fs {
			if j == maxHTMLFirings {
				he.MoreFirings = len(fs) - j
				break
			}
			he.Firings = append(he.Firings, htmlFiring{
				Call: fmt.Sprintf("call %d %s", d.Index, d.Tool), Where: strings.Trim(where(d), " ()"),
				Rule: fmt.Sprintf("%s, %s", d.Reason, d.Verdict), Abort: d.Verdict == toolguard.Abort,
				Args: d.Args, Result: d.Result, New: d.New.String(), Setting: d.Setting,
			})
		}
		if d, ok := e.First(); ok {
			v := "hint"
			if e.Reached(toolguard.Abort) {
				v = "abort"
			}
			page.Fired = append(page.Fired, htmlLink{ID: he.ID, File: e.File, Episode: e.Episode, Verdict: v, Index: d.Index})
		}
		for j, d := range e.Decisions {
			cls := []string{"cell", "v-" + d.Verdict.String(), "p-" + d.Phase.String()}
			if j > 0 && d.Turn != e.Decisions[j-1].Turn {
				cls = append(cls, "t")
			} else if j > 0 && d.Round != e.Decisions[j-1].Round {
				cls = append(cls, "r")
			}
			if d.Failed {
				cls = append(cls, "f")
			}
			he.Cells = append(he.Cells, htmlCell{Class: strings.Join(cls, " "), Title: cellTitle(d)})
		}
		page.Episodes = append(page.Episodes, he)
	}
	return htmlTemplate.Execute(w, page)
}

func cellTitle(d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "call %d · %s · %s", d.Index, d.Tool, d.Verdict)
	if d.Fired() {
		fmt.Fprintf(&b, " (%s)", d.Reason)
	}
	fmt.Fprintf(&b, " · phase %s · round %d · turn %d", d.Phase, d.Round, d.Turn)
	if d.Failed {
		b.WriteString(" · recorded failure")
	}
	return b.String()
}

func labelClass(label string) string {
	switch label {
	case "success", "failure", "unknown":
		return label
	}
	return "other"
}
