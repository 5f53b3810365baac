package audit

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/toolguard/toolguard"
)

// aggregate is what the text report needs of the episodes, gathered one
// episode at a time so that the episodes themselves need not be kept: the
// summary's counts, the worst episodes, the first sessions that fired
// (with their details), the policies side by side, and the episode lines,
// which wait in a temporary file. What it holds in memory grows with the
// number of distinct projects, labels, reasons and refused tools (each
// name cut to maxNameBytes), not with the number of episodes.
type aggregate struct {
	s        Summary // the episodes' part: no file counts, no sorted lists
	reasons  map[toolguard.Reason]ReasonCount
	labels   map[string]LabelCount
	tools    map[string]ToolCount
	projects map[string]ProjectCount
	rows     []PolicyRow     // the report's policy, then each of --compare
	fired    int             // episodes with a hint or an abort
	detailed []EpisodeResult // the first maxFiringEpisodes of them
	listed   func(*EpisodeResult) bool
	width    [4]int     // the columns of the episode lines
	lines    *lineSpill // nil when no line is listed
	mark     int64      // in a snapshot: the lines' length when taken
}

// newAggregate makes the aggregate of a report that lists lines ("all",
// "fired" or "none", as Report.Lines) and compares compare policies.
func newAggregate(lines string, compare int) *aggregate {
	a := &aggregate{
		reasons:  map[toolguard.Reason]ReasonCount{},
		labels:   map[string]LabelCount{},
		tools:    map[string]ToolCount{},
		projects: map[string]ProjectCount{},
		rows:     make([]PolicyRow, 1+compare),
	}
	switch lines {
	case "none":
	case "fired":
		a.listed = func(e *EpisodeResult) bool { return e.Reached(toolguard.Hint) }
	default:
		a.listed = func(*EpisodeResult) bool { return true }
	}
	if a.listed != nil {
		a.lines = &lineSpill{}
		a.measure(lineHead)
	}
	return a
}

// aggregate returns the aggregate the run gathered, or one made from
// Episodes (a report built with Add, or by the JSON and HTML reports'
// run, which keeps every episode); lines is whether it holds the episode
// lines. Close what it returns when it is not r's own.
func (r *Report) aggregate(lines bool) *aggregate {
	if r.agg != nil {
		return r.agg
	}
	mode := r.Lines
	if !lines {
		mode = "none"
	}
	a := newAggregate(mode, len(r.Compare))
	for i := range r.Episodes {
		a.add(&r.Episodes[i])
	}
	return a
}

// add counts one episode in.
func (a *aggregate) add(e *EpisodeResult) {
	st := e.stats()
	s := &a.s
	s.Episodes++
	s.Calls += st.Calls
	fired := st.First.Index > 0
	aborted := st.Aborts > 0
	s.Refused += st.Hints + st.Aborts
	if fired {
		s.WithFiring++
		if len(s.Worst) < WorstEpisodes || s.Worst[len(s.Worst)-1].Refused() < e.Refused() {
			c := *e
			s.Worst = addWorst(s.Worst, &c)
		}
	}
	if st.Hints > 0 {
		s.WithHint++
	}
	if aborted {
		s.WithAbort++
	}
	for ph := toolguard.PhaseNudge; ph <= toolguard.PhaseExhausted; ph++ {
		if st.Phase >= ph {
			s.ReachedPhase[ph]++
		}
	}
	for _, x := range st.ByReason {
		rc := a.reasons[x.Reason]
		rc.Reason = x.Reason
		rc.Hints += x.Hints
		rc.Aborts += x.Aborts
		rc.Episodes++
		a.reasons[x.Reason] = rc
	}
	for _, x := range st.ByTool {
		tc := a.tools[x.Tool]
		tc.Tool = x.Tool
		tc.Hints += x.Hints
		tc.Aborts += x.Aborts
		a.tools[x.Tool] = tc
	}
	if st.Tokens {
		s.Tokens.add(st)
	} else {
		s.Chars.add(st)
	}
	if e.Project != "" {
		pc := a.projects[e.Project]
		pc.Project = e.Project
		pc.Episodes++
		pc.Calls += st.Calls
		pc.Refused += st.Hints + st.Aborts
		if fired {
			pc.WithFiring++
		}
		if aborted {
			pc.WithAbort++
		}
		if st.Tokens {
			pc.Tokens.add(st)
		} else {
			pc.Chars.add(st)
		}
		a.projects[e.Project] = pc
	}
	if e.Label != "" {
		lc := a.labels[e.Label]
		lc.Label = e.Label
		lc.Episodes++
		lc.Calls += st.Calls
		if fired {
			lc.WithFiring++
		}
		if aborted {
			lc.WithAbort++
		}
		lc.FromFirstFiring += e.FromFirstFiring()
		if st.FirstNew {
			lc.FirstNew++
		}
		a.labels[e.Label] = lc
	}
	a.rows[0].add(st.Tally)
	for j, t := range e.Compare {
		if j+1 < len(a.rows) {
			a.rows[j+1].add(t)
		}
	}
	if e.Reached(toolguard.Hint) {
		a.fired++
		if len(a.detailed) < maxFiringEpisodes {
			a.detailed = append(a.detailed, *e)
		}
	}
	if a.listed != nil && a.listed(e) {
		c := lineCells(e)
		a.measure(c)
		a.lines.add(c, firstFiring(e))
	}
}

// detailedFull reports whether the sessions the text report details are
// all known: the episodes still to come need not describe their firings.
func (a *aggregate) detailedFull() bool { return len(a.detailed) >= maxFiringEpisodes }

func (a *aggregate) measure(c [4]string) {
	for i, s := range c {
		a.width[i] = max(a.width[i], utf8.RuneCountInString(s))
	}
}

// snapshot returns a copy of a to go back to (restore) when the episodes
// added since belong to a file that fails.
func (a *aggregate) snapshot() *aggregate {
	c := *a
	c.reasons, c.labels, c.tools, c.projects = maps.Clone(a.reasons), maps.Clone(a.labels), maps.Clone(a.tools), maps.Clone(a.projects)
	c.s.Worst, c.rows, c.detailed = slices.Clone(a.s.Worst), slices.Clone(a.rows), slices.Clone(a.detailed)
	if a.lines != nil {
		c.mark = a.lines.n
	}
	return &c
}

// restore takes a back to snap, episode lines included.
func (a *aggregate) restore(snap *aggregate) {
	lines := a.lines
	*a = *snap
	a.lines = lines
	if lines != nil {
		lines.truncate(snap.mark)
	}
}

// summary returns the episodes' part of the summary, its lists sorted.
func (a *aggregate) summary() Summary {
	s := a.s
	s.Worst = slices.Clone(s.Worst)
	s.ByTool, s.ByProject, s.ByReason, s.ByLabel = nil, nil, nil, nil
	for _, tc := range a.tools {
		s.ByTool = append(s.ByTool, tc)
	}
	sort.Slice(s.ByTool, func(i, j int) bool {
		a, b := s.ByTool[i], s.ByTool[j]
		if a.Hints+a.Aborts != b.Hints+b.Aborts {
			return a.Hints+a.Aborts > b.Hints+b.Aborts
		}
		return a.Tool < b.Tool
	})
	for _, pc := range a.projects {
		s.ByProject = append(s.ByProject, pc)
	}
	sort.Slice(s.ByProject, func(i, j int) bool { return s.ByProject[i].Project < s.ByProject[j].Project })
	for _, rc := range a.reasons {
		s.ByReason = append(s.ByReason, rc)
	}
	sort.Slice(s.ByReason, func(i, j int) bool { return s.ByReason[i].Reason < s.ByReason[j].Reason })
	for _, lc := range a.labels {
		s.ByLabel = append(s.ByLabel, lc)
	}
	sort.Slice(s.ByLabel, func(i, j int) bool { return s.ByLabel[i].Label < s.ByLabel[j].Label })
	succ, okSucc := a.labels["success"]
	fail, okFail := a.labels["failure"]
	if okSucc || okFail {
		s.Outcomes = &Outcomes{
			Successes: succ.Episodes, FalseAlarms: succ.WithFiring, LossyFalseAlarms: succ.FirstNew,
			Failures: fail.Episodes, Stopped: fail.WithFiring, FailureCalls: fail.Calls, SavedCalls: fail.FromFirstFiring,
		}
	}
	return s
}

// close removes the episode lines' file.
func (a *aggregate) close() {
	if a.lines != nil {
		a.lines.close()
	}
}

// lineHead is the header of the episode lines.
var lineHead = [4]string{"FILE", "EPISODE", "LABEL", "CALLS"}

// lineCells are the cells of an episode's line before its first firing.
func lineCells(e *EpisodeResult) [4]string {
	return [4]string{printable(e.File), printable(clipMiddle(e.Episode, 48)), printable(orDash(e.Label)), strconv.Itoa(e.Calls())}
}

// writeLines writes the header and one line per episode listed, its
// columns aligned as a tabwriter aligns them (two spaces past the widest
// cell), from the lines the aggregate holds.
func (a *aggregate) writeLines(w io.Writer) error {
	bw := bufio.NewWriter(w)
	line := func(c [4][]byte, last []byte) {
		for i, s := range c {
			bw.Write(s)
			for pad := a.width[i] + 2 - utf8.RuneCount(s); pad > 0; pad-- {
				bw.WriteByte(' ')
			}
		}
		bw.Write(last)
		bw.WriteByte('\n')
	}
	var head [4][]byte
	for i, s := range lineHead {
		head[i] = []byte(s)
	}
	line(head, []byte("FIRST FIRING"))
	if err := a.lines.each(line); err != nil {
		return err
	}
	return bw.Flush()
}

// lineSpill holds the episode lines in a temporary file, made at the first
// line: cells separated by tabs, one line each (the cells are printable:
// they hold no tab nor newline). The file is removed as soon as it is
// made where the system allows it, at close otherwise. Where no temporary
// file can be made, the lines are held in memory.
type lineSpill struct {
	f    *os.File
	mem  *bytes.Buffer // instead of f
	w    *bufio.Writer
	n    int64  // bytes written
	name string // the file's name while it exists
	err  error  // the first error
}

func (l *lineSpill) add(c [4]string, last string) {
	if l.err != nil {
		return
	}
	if l.w == nil {
		f, err := os.CreateTemp("", "toolguard-audit-*.lines")
		if err != nil {
			l.mem = &bytes.Buffer{}
			l.w = bufio.NewWriter(l.mem)
		} else {
			l.f, l.w, l.name = f, bufio.NewWriter(f), f.Name()
			if os.Remove(f.Name()) == nil {
				l.name = ""
			}
		}
	}
	for _, s := range c {
		n, _ := l.w.WriteString(s)
		l.w.WriteByte('\t')
		l.n += int64(n) + 1
	}
	n, _ := l.w.WriteString(last)
	if err := l.w.WriteByte('\n'); err != nil {
		l.err = err
	}
	l.n += int64(n) + 1
}

// truncate drops what was written past n bytes.
func (l *lineSpill) truncate(n int64) {
	if l.w == nil || l.err != nil || n == l.n {
		return
	}
	if err := l.w.Flush(); err != nil {
		l.err = err
		return
	}
	if l.mem != nil {
		l.mem.Truncate(int(n))
		l.n = n
		return
	}
	if err := l.f.Truncate(n); err != nil {
		l.err = err
		return
	}
	if _, err := l.f.Seek(n, io.SeekStart); err != nil {
		l.err = err
		return
	}
	l.n = n
}

// each calls f with every line, in order; what it is given is valid
// until it returns.
func (l *lineSpill) each(f func([4][]byte, []byte)) error {
	if l.err != nil {
		return errors.New("the episode lines' temporary file: " + l.err.Error())
	}
	if l.w == nil {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return err
	}
	var src io.Reader
	if l.mem != nil {
		src = bytes.NewReader(l.mem.Bytes())
	} else {
		src = io.NewSectionReader(l.f, 0, l.n)
	}
	br := bufio.NewReaderSize(src, 64<<10)
	var long []byte // a line longer than the buffer
	for {
		s, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, s...)
			continue
		}
		if err == io.EOF && len(s) == 0 && long == nil {
			return nil
		}
		if err != nil {
			return err
		}
		if long != nil {
			s, long = append(long, s...), nil
		}
		var c [4][]byte
		rest := bytes.TrimSuffix(s, []byte("\n"))
		for i := range c {
			c[i], rest, _ = bytes.Cut(rest, []byte("\t"))
		}
		f(c, rest)
	}
}

func (l *lineSpill) close() {
	if l.f != nil {
		l.f.Close()
		if l.name != "" {
			os.Remove(l.name)
		}
		l.f = nil
	}
}
