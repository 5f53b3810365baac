package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolguard/toolguard"
)

// DefaultMaxEpisode is the default of --max-episode-size: the largest
// record of a file read record by record (the episode format, conversation
// objects), and the largest file read whole (a session transcript, a
// document). Past it a file is an error, not a swollen process.
const DefaultMaxEpisode = 256 << 20

// input is one file to audit.
type input struct {
	path    string // what to open; "-" for standard input
	display string // how reports name it
	project string // its folder's project when found in a folder; "" otherwise
	folder  bool   // found by walking a folder (not named on the command line)
	// loose: found in a folder under a name that transcripts share with
	// other files (*.json): a file that cannot be read as a transcript is
	// passed over, not an error.
	loose bool
	size  int64 // bytes; 0 when unknown
}

// expandInputs turns the command line's names into files: a folder is
// walked, in lexical order, for *.jsonl and *.json files; other files in it
// are not transcripts. A *.json file other than Gemini CLI's session-*.json
// is loose: settings and caches share the extension.
func expandInputs(names []string) ([]input, []FileResult) {
	var (
		ins  []input
		errs []FileResult
	)
	for _, name := range names {
		if name == "-" {
			ins = append(ins, input{path: "-", display: StdinName})
			continue
		}
		st, err := os.Stat(name)
		if err != nil {
			errs = append(errs, FileResult{File: name, Err: &ParseError{File: name, Problem: pathProblem(err)}})
			ins = append(ins, input{path: name, display: name})
			continue
		}
		if !st.IsDir() {
			ins = append(ins, input{path: name, display: name, size: st.Size()})
			continue
		}
		walkErr := filepath.WalkDir(name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, FileResult{File: p, Err: &ParseError{File: p, Problem: pathProblem(err)}})
				return nil
			}
			base := d.Name()
			if d.IsDir() || !(strings.HasSuffix(base, ".jsonl") || strings.HasSuffix(base, ".json") || base == ".aider.chat.history.md") {
				return nil
			}
			loose := strings.HasSuffix(base, ".json") && !strings.HasPrefix(base, "session-")
			info, err := d.Info()
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
			rel, _ := filepath.Rel(name, p)
			project := ""
			if dir, _, ok := strings.Cut(filepath.ToSlash(rel), "/"); ok {
				project = dir
			}
			ins = append(ins, input{path: p, display: p, project: project, folder: true, loose: loose, size: info.Size()})
			return nil
		})
		if walkErr != nil {
			errs = append(errs, FileResult{File: name, Err: &ParseError{File: name, Problem: pathProblem(walkErr)}})
		}
	}
	return ins, errs
}

// runOptions are what a run needs besides its inputs.
type runOptions struct {
	policy     toolguard.Policy
	keep       bool          // keep every decision (the JSON and HTML reports)
	compare    []namedPolicy // --compare: the policies replayed beside it
	maxEpisode int
	workers    int
	// detailed is set while the collector holds all the sessions the text
	// report details: the episodes still to come need not describe their
	// firings (see collect).
	detailed *atomic.Bool
}

type unitKind int

const (
	unitRecord unitKind = iota // one record read on its own
	unitWhole                  // a whole file
	unitEnd                    // the end of a file
	unitFail                   // a file that could not be read
)

// unit is a piece of work: a chunk of whole lines of a file read record
// by record (the worker cuts it into records, so that the reading
// goroutine only reads), or one whole file.
type unit struct {
	seq  int
	kind unitKind
	file *fileState
	line int    // unitRecord: the line the chunk starts on
	data []byte // the chunk, or the whole file
	last bool   // unitRecord: the chunk ends the file
	size int    // len(data) when sent: its share of the bytes in flight
	err  error
}

// flight bounds the units in flight: at most units of them, and past the
// first at most budget bytes, so that a few units near the size cap are
// not decoded at once (each costs several times its size while it is).
type flight struct {
	mu               sync.Mutex
	cond             sync.Cond
	units, bytes     int
	maxUnits, budget int
}

func newFlight(units, budget int) *flight {
	f := &flight{maxUnits: units, budget: budget}
	f.cond.L = &f.mu
	return f
}

// acquire waits until a unit of n bytes may go.
func (f *flight) acquire(n int) {
	f.mu.Lock()
	for f.units >= f.maxUnits || f.units > 0 && f.bytes+n > f.budget {
		f.cond.Wait()
	}
	f.units++
	f.bytes += n
	f.mu.Unlock()
}

// release ends a unit of n bytes.
func (f *flight) release(n int) {
	f.mu.Lock()
	f.units--
	f.bytes -= n
	f.mu.Unlock()
	f.cond.Broadcast()
}

// chunkSize is the size of the chunks of a file read record by record.
const chunkSize = 1 << 20

// fileState is one input in the pipeline.
type fileState struct {
	in  input
	det detection // for record units
}

// unitResult is a unit replayed.
type unitResult struct {
	unit
	format Format
	eps    []EpisodeResult
	calls  int
	seen   map[string]int
	warn   string // a truncated last line read around
	err    error
	brief  bool // replayed without the text report's details
}

// run audits the inputs into r: a reading goroutine (this one) cuts the
// inputs into units, workers decode and replay them in parallel, and a
// collector puts the results back in input order. At most 2×workers+2
// units are in flight, and past the first of them at most maxEpisode
// bytes (the --max-episode-size cap): records near the cap are decoded
// and replayed one at a time. It returns false when some file could not
// be read or parsed.
func run(ins []input, opts runOptions, env Env, r *Report) bool {
	workers := max(opts.workers, 1)
	opts.detailed = new(atomic.Bool)
	if !opts.keep && r.agg == nil {
		// The text report: episodes are gathered, not kept.
		r.agg = newAggregate(r.Lines, len(r.Compare))
	}
	units := make(chan unit, workers)
	results := make(chan unitResult, workers)
	slots := newFlight(2*workers+2, opts.maxEpisode)
	done := make(chan bool)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range units {
				results <- process(u, opts, !opts.detailed.Load())
			}
		}()
	}
	go func() { done <- collect(results, slots, opts, env, r) }()

	var total int64
	for _, in := range ins {
		total += in.size
	}
	var pr *progress
	if env.Terminal {
		name := fmt.Sprintf("%d files", len(ins))
		if len(ins) == 1 {
			name = ins[0].display
		}
		pr = newProgress(env.Stderr, name, total, env.Now)
	}
	seq := 0
	send := func(u unit) {
		u.size = len(u.data)
		slots.acquire(u.size)
		u.seq = seq
		seq++
		units <- u
	}
	for _, in := range ins {
		read(in, opts, env, pr, send)
	}
	close(units)
	wg.Wait()
	close(results)
	ok := <-done
	if pr != nil {
		pr.finish()
	}
	return ok
}

// read cuts one input into units and sends them, then its end.
func read(in input, opts runOptions, env Env, pr *progress, send func(unit)) {
	f := &fileState{in: in}
	var src io.Reader
	if in.path == "-" {
		src = env.Stdin
	} else {
		fh, err := os.Open(in.path)
		if err != nil {
			send(unit{kind: unitFail, file: f, err: &ParseError{File: in.display, Problem: pathProblem(err)}})
			return
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil && st.IsDir() {
			send(unit{kind: unitFail, file: f, err: &ParseError{File: in.display, Problem: "is a directory"}})
			return
		}
		src = fh
	}
	if pr != nil {
		src = progressReader{r: src, p: pr}
	}
	// A small file gets a small buffer: a folder holds thousands of them.
	bufSize := 1 << 20
	if in.size > 0 && in.size < int64(bufSize) {
		bufSize = max(int(in.size)+1, 4096)
	}
	br := bufio.NewReaderSize(src, bufSize)
	fail := func(line int, problem string) {
		send(unit{kind: unitFail, file: f, err: &ParseError{File: in.display, Line: line, Problem: problem}})
	}
	// The first non-blank line decides: a complete JSON value whose format
	// is read record by record is streamed line by line; anything else
	// (a session transcript, an indented document) is read whole.
	var head []byte
	line := 0
	for {
		l, err := readLine(br, opts.maxEpisode)
		if errors.Is(err, errTooLong) {
			fail(line+1, fmt.Sprintf("a record of more than %s (the --max-episode-size cap)", mib(int64(opts.maxEpisode))))
			return
		}
		if err != nil && err != io.EOF {
			fail(0, "reading: "+pathProblem(err))
			return
		}
		line++
		head = append(head, l...)
		if err == io.EOF {
			break
		}
		head = append(head, '\n')
		if len(bytes.TrimSpace(l)) > 0 {
			break
		}
	}
	first := bytes.TrimSpace(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")))
	if json.Valid(first) {
		if det, err := detect(first); err == nil && det.perRecord {
			f.det = det
			readChunks(f, br, line, bytes.Clone(first), opts.maxEpisode, send, fail)
			send(unit{kind: unitEnd, file: f})
			return
		}
	}
	rest, err := io.ReadAll(io.LimitReader(br, int64(opts.maxEpisode-len(head)+1)))
	if err != nil {
		fail(0, "reading: "+pathProblem(err))
		return
	}
	if len(head)+len(rest) > opts.maxEpisode {
		fail(0, fmt.Sprintf("more than %s in one session (the --max-episode-size cap)", mib(int64(opts.maxEpisode))))
		return
	}
	send(unit{kind: unitWhole, file: f, data: append(head, rest...)})
	send(unit{kind: unitEnd, file: f})
}

// readChunks sends a file read record by record as chunks of whole lines:
// its first record (on line), then the rest. The last chunk is marked, so
// that a line cut off by a writer still at work is read around.
func readChunks(f *fileState, br *bufio.Reader, line int, first []byte, limit int, send func(unit), fail func(int, string)) {
	held := unit{kind: unitRecord, file: f, line: line, data: first}
	line++
	var carry []byte // the start of a line that the last chunk cut
	for {
		buf := make([]byte, len(carry), max(chunkSize, 2*len(carry)))
		copy(buf, carry)
		n, err := io.ReadFull(br, buf[len(carry):cap(buf)])
		buf = buf[:len(carry)+n]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			fail(0, "reading: "+pathProblem(err))
			return
		}
		if eof && len(buf) == 0 {
			held.last = true
			send(held)
			return
		}
		end := len(buf)
		if !eof {
			end = bytes.LastIndexByte(buf, '\n') + 1
		}
		if end == 0 {
			// No line ends in the chunk: one long record, kept whole.
			if len(buf) > limit {
				fail(line, fmt.Sprintf("a record of more than %s (the --max-episode-size cap)", mib(int64(limit))))
				return
			}
			carry = buf
			continue
		}
		if len(bytes.TrimSpace(buf[:end])) > 0 {
			send(held)
			data := buf[:end]
			if cap(buf) > 2*end && end > chunkSize {
				// A buffer doubled for a long record: keep the record, not
				// the buffer (up to twice its size) while it is in flight.
				data = bytes.Clone(data)
			}
			held = unit{kind: unitRecord, file: f, line: line, data: data}
		}
		line += bytes.Count(buf[:end], []byte("\n"))
		carry = bytes.Clone(buf[end:])
		if eof {
			held.last = true
			send(held)
			return
		}
	}
}

var errTooLong = errors.New("line too long")

// readLine returns the next line without its newline; io.EOF with the
// last line. A line longer than limit is errTooLong.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	l, err := br.ReadSlice('\n')
	if err == nil || err == io.EOF {
		return bytes.TrimSuffix(l, []byte("\n")), err
	}
	if err != bufio.ErrBufferFull {
		return nil, err
	}
	buf := bytes.Clone(l)
	for {
		l, err = br.ReadSlice('\n')
		buf = append(buf, l...)
		if len(buf) > limit {
			return nil, errTooLong
		}
		if err == nil || err == io.EOF {
			return bytes.TrimSuffix(buf, []byte("\n")), err
		}
		if err != bufio.ErrBufferFull {
			return nil, err
		}
	}
}

// process decodes and replays one unit; without detail its episodes keep
// no title nor firings for the text report.
func process(u unit, opts runOptions, detail bool) unitResult {
	res := unitResult{unit: u, brief: !detail && !opts.keep}
	var eps []Episode
	switch u.kind {
	case unitEnd, unitFail:
		res.err = u.err
		return res
	case unitRecord:
		n := u.line - 1
		for rest := u.data; len(rest) > 0; {
			var l []byte
			l, rest, _ = bytes.Cut(rest, []byte("\n"))
			n++
			data := bytes.TrimSpace(l)
			if len(data) == 0 {
				continue
			}
			rec := record{line: n, data: data}
			ep, format, err := parseOne(rec, u.file.det.format)
			if err != nil && !json.Valid(data) {
				if u.last && len(bytes.TrimSpace(rest)) == 0 {
					res.warn = cutWarning(n)
					break
				}
				var v any
				err = errors.New(describeSyntax(json.Unmarshal(data, &v)))
			}
			if err != nil {
				res.err = &ParseError{File: u.file.in.display, Line: rec.lineOf(err.Error()), Problem: err.Error()}
				return res
			}
			merged, fits := mergeFormat(res.format, format)
			if !fits {
				res.err = &ParseError{File: u.file.in.display, Line: rec.line,
					Problem: fmt.Sprintf("%s, but the file's first record is %s (one format per file)", article(format), article(res.format))}
				return res
			}
			res.format = merged
			if ep.Name == "" {
				ep.Name = fmt.Sprintf("line %d", rec.line)
			}
			charCosts(&ep)
			eps = append(eps, ep)
		}
	case unitWhole:
		format, got, seen, warn, err := parseWhole(u.file.in.display, u.data, true)
		if err != nil {
			res.err = err
			return res
		}
		res.format, eps, res.seen, res.warn = format, got, seen, warn
	}
	for i := range eps {
		ep := &eps[i]
		ep.File = u.file.in.display
		res.calls += len(ep.Calls)
		er := replayDetailed(opts.policy, ep, opts.keep, detail)
		if er.Project == "" {
			// The folder's project, shared by its episodes.
			er.Project = u.file.in.project
		}
		for _, np := range opts.compare {
			er.Compare = append(er.Compare, NewEpisodeStats(decide(np.policy, ep), nil, false).Tally)
		}
		res.eps = append(res.eps, er)
	}
	return res
}

// parseOne reads one record of a file read record by record. The episode
// format is decoded once; on a problem, parseRecord (which decodes field
// by field) names it precisely.
func parseOne(rec record, format Format) (Episode, Format, error) {
	if format == FormatEpisodes {
		if ep, err := parseEpisodeLine(rec.data); err == nil {
			return ep, FormatEpisodes, nil
		}
	}
	return parseRecord(rec)
}

// cutWarning is the warning of a JSON Lines file whose last line is cut
// off (a session still being written, a copy interrupted).
func cutWarning(line int) string {
	return fmt.Sprintf("line %d: the last line is cut off (a session still being written?); read up to line %d", line, line-1)
}

// parseWhole reads a whole file: a session transcript through its reader,
// or the records of the other formats one by one. With cut, the last line
// of a JSON Lines file that is not complete JSON is left out with a
// warning instead of failing the file.
func parseWhole(name string, data []byte, cut bool) (Format, []Episode, map[string]int, string, error) {
	if isAider(data) {
		format, eps, seen, err := parseAider(name, data)
		return format, eps, seen, "", err
	}
	recs, perr := splitRecords(data, false)
	if perr != nil {
		perr.File = name
		return 0, nil, nil, "", perr
	}
	var warn string
	if last := recs[len(recs)-1]; cut && len(recs) > 1 && !json.Valid(last.data) {
		recs, warn = recs[:len(recs)-1], cutWarning(last.line)
	}
	format, eps, seen, err := parseRecs(name, recs)
	return format, eps, seen, warn, err
}

// parseRecs reads the records of a whole file.
func parseRecs(name string, recs []record) (Format, []Episode, map[string]int, error) {
	if !json.Valid(recs[0].data) {
		var v any
		return 0, nil, nil, &ParseError{File: name, Line: recs[0].line, Problem: describeSyntax(json.Unmarshal(recs[0].data, &v))}
	}
	det, err := detect(recs[0].data)
	if err != nil {
		return 0, nil, nil, &ParseError{File: name, Line: recs[0].line, Problem: err.Error()}
	}
	if det.newReader == nil {
		// These records are decoded field by field: check them first, so
		// that a broken line is named as such.
		for _, rec := range recs {
			if !json.Valid(rec.data) {
				var v any
				return 0, nil, nil, &ParseError{File: name, Line: rec.line, Problem: describeSyntax(json.Unmarshal(rec.data, &v))}
			}
		}
		format, eps, err := parseRecords(name, recs)
		for i := range eps {
			charCosts(&eps[i])
		}
		return format, eps, nil, err
	}
	rd := det.newReader(name)
	if det.array {
		els, err := arrayRecords(recs[0])
		if err != nil {
			return 0, nil, nil, &ParseError{File: name, Line: recs[0].line, Problem: err.Error()}
		}
		recs = els
	}
	for _, rec := range recs {
		if err := rd.record(rec.line, rec.data); err != nil {
			if !json.Valid(rec.data) {
				var v any
				err = errors.New(describeSyntax(json.Unmarshal(rec.data, &v)))
			}
			return 0, nil, nil, &ParseError{File: name, Line: rec.line, Problem: err.Error()}
		}
	}
	eps, seen, err := rd.finish()
	if err != nil {
		return 0, nil, nil, &ParseError{File: name, Problem: err.Error()}
	}
	return det.format, eps, seen, nil
}

// charCosts gives the calls of an episode without usage their cost in
// characters.
func charCosts(ep *Episode) {
	if ep.Tokens {
		return
	}
	for j := range ep.Calls {
		ep.Calls[j].Cost = countChars(ep.Calls[j].Result)
	}
}

// collect puts the results back in input order, reports each file's
// problem on standard error as its turn comes, and fills r. A file's
// episodes go to r's aggregate (or r.Episodes when the report keeps them)
// as they come, and are taken back out if the file fails.
func collect(results <-chan unitResult, slots *flight, opts runOptions, env Env, r *Report) bool {
	ok := true
	pending := map[int]unitResult{}
	next := 0
	var (
		cur    *fileState
		fr     FileResult
		seen   map[string]int
		failed bool
		// start is len(r.Episodes) before the file's episodes; snap the
		// aggregate before them, taken before a file read record by
		// record adds its first (a file read whole fails before).
		start int
		snap  *aggregate
	)
	drop := func() {
		if snap != nil {
			r.agg.restore(snap)
			opts.detailed.Store(r.agg.detailedFull())
		}
		clear(r.Episodes[start:])
		r.Episodes = r.Episodes[:start]
	}
	finish := func() {
		switch {
		case failed:
			drop()
			fmt.Fprintln(env.Stderr, fr.Err)
			ok = false
			r.Files = append(r.Files, FileResult{File: fr.File, Err: fr.Err})
			return
		case fr.Calls == 0 && fr.Format != 0:
			if cur.in.loose && fr.Format == FormatMessages {
				// An array or object of a .json file in a folder that holds
				// no message with a tool call: not a transcript.
				fr.Skipped = "not a transcript this command reads: no tool call in it"
				break
			}
			if seen == nil {
				seen = map[string]int{fmt.Sprintf("%s records without a tool call", fr.Format): max(fr.Episodes, 1)}
			}
			found, unknown := noCalls(seen)
			fr.NoCalls = found
			if unknown {
				fr.Warnings = append(fr.Warnings, fmt.Sprintf("no tool call this command reads (found: %s): its calls may have a shape this command does not know", found))
			}
		}
		for _, w := range fr.Warnings {
			fmt.Fprintf(env.Stderr, "toolguard audit: %s: %s\n", fr.File, w)
		}
		r.Files = append(r.Files, fr)
	}
	for res := range results {
		pending[res.seq] = res
		for {
			u, have := pending[next]
			if !have {
				break
			}
			delete(pending, next)
			next++
			slots.release(u.size)
			if u.file != cur {
				cur, fr, seen, failed = u.file, FileResult{File: u.file.in.display}, nil, false
				start, snap = len(r.Episodes), nil
			}
			if failed {
				continue
			}
			if u.brief && !r.agg.detailedFull() {
				// Replayed without details while the sessions to detail
				// were held, and a file that failed since took some back.
				u = process(u.unit, opts, true)
			}
			if u.err != nil {
				var pe *ParseError
				if errors.As(u.err, &pe) && strings.HasPrefix(pe.Problem, "empty input") && u.file.in.path != "-" {
					fr.NoCalls, failed = "nothing (an empty file)", true
					drop()
					r.Files = append(r.Files, fr)
					continue
				}
				if errors.As(u.err, &pe) && (u.file.in.loose || (u.file.in.folder && strings.HasPrefix(pe.Problem, "not a transcript"))) {
					fr.Skipped, failed = skipReason(pe), true
					drop()
					r.Files = append(r.Files, fr)
					continue
				}
				fr.Err, failed = u.err, true
				finish()
				continue
			}
			if u.kind == unitEnd {
				finish()
				continue
			}
			merged, fits := mergeFormat(fr.Format, u.format)
			if !fits && u.format != 0 {
				fr.Err = &ParseError{File: fr.File, Line: u.line,
					Problem: fmt.Sprintf("%s, but the file's first record is %s (one format per file)", article(u.format), article(fr.Format))}
				failed = true
				finish()
				continue
			}
			fr.Format = merged
			fr.Episodes += len(u.eps)
			fr.Calls += u.calls
			if r.agg == nil {
				r.Episodes = append(r.Episodes, u.eps...)
			} else {
				if snap == nil && u.kind == unitRecord {
					snap = r.agg.snapshot()
				}
				for i := range u.eps {
					r.agg.add(&u.eps[i])
				}
				opts.detailed.Store(r.agg.detailedFull())
			}
			if u.seen != nil {
				seen = u.seen
			}
			if u.warn != "" {
				fr.Warnings = append(fr.Warnings, u.warn)
			}
		}
	}
	return ok
}

// skipReason says why a file found in a folder was passed over.
func skipReason(pe *ParseError) string {
	if strings.HasPrefix(pe.Problem, "not a transcript") {
		return pe.Problem
	}
	if pe.Line > 0 {
		return fmt.Sprintf("not a transcript this command reads (line %d: %s)", pe.Line, pe.Problem)
	}
	return "not a transcript this command reads (" + pe.Problem + ")"
}

// workersDefault is the number of workers: every core.
func workersDefault() int { return runtime.GOMAXPROCS(0) }
