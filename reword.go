package toolguard

import (
	"bytes"
	"hash/fnv"
	"slices"

	"github.com/toolguard/toolguard/internal/canon"
)

// reworded is the rule of reworded calls (Policy.MaxRewordings;
// docs/patterns.md, "Same call reworded"): a tool that is not a search
// tool called for the same thing in other words (the same rewordForm),
// each call returning the same result with no progress in between. Its
// state is the turn's last chain of rewordings and the turn's count of
// calls that made progress.
type reworded struct {
	st *rewordState // made at the session's first Record: a session holds no more until then
}

type rewordState struct {
	chain   rewordChain
	pending []rewordPending
	news    uint32 // the turn's recorded calls that made progress of their own
}

// rewordPending is the form of an allowed call until its Record; past
// maxRewordPending, the oldest is dropped and its call compares to nothing.
type rewordPending struct {
	seq  uint64
	form rewordForm
}

const maxRewordPending = 64

// rewordChain is a run of rewordings that returned one same result.
type rewordChain struct {
	tool     *toolRule
	form     rewordForm
	first    uint64 // the first link's key, callKey.short
	digest   uint64 // the result, Hash.short
	after    uint32 // reworded.news after its last link
	n        int32  // its links
	distinct bool   // two or more distinct calls
}

// rewordForm is a digest of a call's argument names and normalized values
// (normalizeArg), the first prose value kept as a similar-query key instead.
type rewordForm struct {
	digest uint64
	prose  *simKey // nil without a prose value
}

// maxRewordForm bounds the normalized arguments: longer ones (a file's
// content) are not compared.
const maxRewordForm = 480

// state returns the rule's state, made at its first use.
func (r *reworded) state() *rewordState {
	if r.st == nil {
		r.st = &rewordState{}
	}
	return r.st
}

func (r *reworded) check(p *probe) (firing, bool) {
	if r.st == nil {
		return firing{}, false
	}
	c := &r.st.chain
	if !c.distinct || int(c.n) < p.rule.rewordings || c.tool != p.rule || c.after != r.st.news || p.ks.seen {
		return firing{}, false // a call seen in the turn is the repeat rule's
	}
	form, ok := rewordFormOf(&p.s.scan, p.rule.ignore)
	if !ok || !c.form.same(&form, p.rule.threshold) {
		return firing{}, false
	}
	return firing{reason: ReasonDuplicate, scope: hintScope{rule: ruleReword, tool: p.tool, chain: uint32(form.digest)},
		count: int(c.n), limit: p.rule.rewordings, msg: rewordMessage(p.rule.name, int(c.n))}, true
}

func (r *reworded) allowed(p *probe) {
	if p.rule.rewordings == 0 {
		return
	}
	form, ok := rewordFormOf(&p.s.scan, p.rule.ignore)
	if !ok {
		return
	}
	st := r.state()
	if len(st.pending) == maxRewordPending {
		st.pending = slices.Delete(st.pending, 0, 1)
	}
	st.pending = append(st.pending, rewordPending{seq: p.seq, form: form})
}

// recorded counts the calls that made progress, whatever their tool, and
// adds a success of a tool the rule compares to the chain it continues, or
// starts a chain with it if it made progress.
func (r *reworded) recorded(p *probe, o *outcome) {
	st := r.state()
	before := st.news
	if o.progress {
		st.news++
	}
	i := slices.IndexFunc(st.pending, func(pc rewordPending) bool { return pc.seq == o.seq })
	var form rewordForm
	if i >= 0 {
		form = st.pending[i].form
		st.pending = slices.Delete(st.pending, i, i+1)
	}
	if o.failed || p.rule.rewordings == 0 {
		return
	}
	c := &st.chain
	switch {
	case i < 0: // news moved on if it made progress: the chain ends there
	case c.tool == p.rule && c.after == before && c.digest == o.digest.short() && c.form.same(&form, p.rule.threshold):
		c.n++
		c.distinct = c.distinct || c.first != p.key.args.short()
		c.after = st.news
	case o.progress:
		*c = rewordChain{tool: p.rule, form: form, first: p.key.args.short(), digest: o.digest.short(), after: st.news, n: 1}
	}
}

// endTurn forgets the chain and the calls still pending.
func (r *reworded) endTurn(int) {
	if st := r.st; st != nil {
		clear(st.pending)
		*st = rewordState{pending: st.pending[:0]}
	}
}

// same reports whether two forms are rewordings of each other.
func (f *rewordForm) same(g *rewordForm, threshold float64) bool {
	return f.digest == g.digest && (f.prose == nil) == (g.prose == nil) &&
		(f.prose == nil || simScore(f.prose, g.prose, threshold) >= threshold)
}

// rewordFormOf returns the form of the scanned arguments without the
// members named in ignore; ok (false unless they are an object of scalars
// whose normalized form fits maxRewordForm bytes) says whether f holds it.
func rewordFormOf(s *canon.Args, ignore []string) (f rewordForm, ok bool) {
	var buf, val [maxRewordForm]byte
	out := buf[:0]
	ok = s.EachScalar(ignore, func(name, v []byte, str bool) bool {
		if str {
			if len(v) > maxRewordForm {
				return false
			}
			v = canon.Decode(val[:0], v)
		}
		if len(out)+len(name)+len(v)+2 > maxRewordForm {
			return false
		}
		out = append(append(out, name...), 0)
		if str && f.prose == nil && isProse(v) {
			k := simKeyOf(normalizeQuery(string(v)))
			f.prose = &k
			out = append(out, 1, 0) // compared by its key
			return true
		}
		norm, fits := normalizeArg(out, v)
		out = append(norm, 0)
		return fits
	})
	h := fnv.New64a() // a collision alone never fires: the chain needs the same result too
	h.Write(out)
	f.digest = h.Sum64()
	return f, ok
}

// isProse reports whether v reads as a sentence: three or more words of
// letters (or non-ASCII runes) and inner hyphens and apostrophes, with
// trailing punctuation; nothing that reads as a path, a flag or code.
func isProse(v []byte) bool {
	words := 0
	for w, i := nextField(v, 0); len(w) > 0; w, i = nextField(v, i) {
		w = bytes.TrimRight(w, ".,;:!?")
		if len(w) == 0 || w[0] == '-' || w[len(w)-1] == '-' || bytes.ContainsFunc(w, notProse) {
			return false
		}
		words++
	}
	return words >= 3
}

func notProse(r rune) bool { return !asciiLetter(r) && r != '-' && r != '\'' && r < 0x80 }

// normalizeArg appends to dst the form of an argument's value v: its
// words, without enclosing quotes and with paths written one way
// (appendPath), in their order ("cp a b" is not "cp b a"), then its short
// flags, one letter each ("-la" is "-l -a"), and its other flags, both
// deduplicated and sorted. ok is false when it does not fit in cap(dst).
func normalizeArg(dst, v []byte) (_ []byte, ok bool) {
	room := cap(dst)
	var long [32][]byte
	var short [128]bool // the short flags given, by letter
	nlong := 0
	for w, i := nextField(v, 0); len(w) > 0; w, i = nextField(v, i) {
		w = bytes.Trim(w, "'\"`")
		switch {
		case len(w) == 0:
		case w[0] == '-' && len(w) > 1 && len(bytes.TrimLeftFunc(w[1:], asciiLetter)) == 0:
			for _, c := range w[1:] {
				short[c] = true
			}
		case len(w) > 2 && bytes.HasPrefix(w, []byte("--")):
			if nlong == len(long) {
				return dst, false
			}
			long[nlong] = w
			nlong++
		default:
			dst = appendPath(append(dst, ' '), w)
		}
	}
	for c, on := range short {
		if on {
			dst = append(dst, ' ', '-', byte(c))
		}
	}
	flags := long[:nlong]
	sortFlags(flags)
	for i, fl := range flags {
		if i == 0 || !bytes.Equal(fl, flags[i-1]) {
			dst = append(append(dst, ' '), fl...)
		}
	}
	return dst, len(dst) <= room
}

// sortFlags sorts a few flags in place. (slices.SortFunc would make the
// call's arguments escape to the heap: one allocation per call.)
func sortFlags(fs [][]byte) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && bytes.Compare(fs[j], fs[j-1]) < 0; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// nextField returns the next run of bytes other than ASCII white space in
// v from i, and the index after it; empty at the end.
func nextField(v []byte, i int) ([]byte, int) {
	for i < len(v) && isBlank(v[i]) {
		i++
	}
	j := i
	for j < len(v) && !isBlank(v[j]) {
		j++
	}
	return v[i:j], j
}

func isBlank(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func asciiLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// appendPath appends a word with a path in it written one way: runs of
// "/" as one, "./" segments and a trailing "/" (but for "/" itself) dropped.
func appendPath(dst, w []byte) []byte {
	start := len(dst)
	for i := 0; i < len(w); {
		switch {
		case w[i] == '/' && len(dst) > start && dst[len(dst)-1] == '/':
			i++ // "//"
		case w[i] == '.' && i+1 < len(w) && w[i+1] == '/' && (i == 0 || w[i-1] == '/'):
			i += 2 // "./" at the start or after a "/"
		default:
			dst = append(dst, w[i])
			i++
		}
	}
	if len(dst)-start > 1 && dst[len(dst)-1] == '/' {
		dst = dst[:len(dst)-1]
	}
	return dst
}
