package audit

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a progress bar for one input on a terminal. It draws
// nothing for inputs read faster than progressDelay, so small files do not
// flicker, and at most once per progressInterval.
type progress struct {
	w     io.Writer
	name  string
	total int64 // bytes expected; 0 when unknown (a pipe)
	done  int64
	now   func() time.Time
	start time.Time
	last  time.Time
	drawn bool
}

const (
	progressDelay    = 300 * time.Millisecond
	progressInterval = 100 * time.Millisecond
	progressWidth    = 30
)

func newProgress(w io.Writer, name string, total int64, now func() time.Time) *progress {
	t := now()
	return &progress{w: w, name: name, total: total, now: now, start: t}
}

// reader counts the bytes read through it.
type progressReader struct {
	r io.Reader
	p *progress
}

func (pr progressReader) Read(b []byte) (int, error) {
	n, err := pr.r.Read(b)
	pr.p.add(n)
	return n, err
}

func (p *progress) add(n int) {
	p.done += int64(n)
	t := p.now()
	if t.Sub(p.start) < progressDelay || (p.drawn && t.Sub(p.last) < progressInterval) {
		return
	}
	p.last = t
	p.drawn = true
	fmt.Fprint(p.w, "\r"+p.line())
}

// line renders the bar: "reading NAME [=====>      ]  42%  1.2/2.9 MiB".
func (p *progress) line() string {
	name := p.name
	if len(name) > 40 {
		name = "…" + name[len(name)-39:]
	}
	if p.total <= 0 {
		return fmt.Sprintf("reading %s  %s\x1b[K", name, mib(p.done))
	}
	frac := float64(p.done) / float64(p.total)
	frac = min(max(frac, 0), 1)
	filled := int(frac * progressWidth)
	bar := strings.Repeat("=", filled)
	if filled < progressWidth {
		bar += ">" + strings.Repeat(" ", progressWidth-filled-1)
	}
	return fmt.Sprintf("reading %s [%s] %3d%%  %s/%s\x1b[K", name, bar, int(frac*100), strings.TrimSuffix(mib(p.done), " MiB"), mib(p.total))
}

// finish clears the bar if it was drawn.
func (p *progress) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
