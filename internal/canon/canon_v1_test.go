package canon

// The argument canonicalizer of toolguard v0.1.0, kept as the oracle of the
// present one: argument hashes are persisted (Entry.ArgsHash in ledgers),
// so every payload it canonicalized (valid JSON up to 16 MiB, nested at
// most 512 levels) must hash the same today. It built the whole canonical
// form as a linked list of segments, about 5 bytes of scratch per byte of
// payload; the present one streams it into the hasher.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"unicode/utf8"
)

const (
	v1MaxBytes = 16 << 20 // larger payloads were hashed raw
	v1CopyMax  = 64       // pieces up to this size were copied rather than referenced
)

// v1Hash is v0.1.0's hashArgs without the flat fast path.
func v1Hash(args []byte, ignore []string) Hash {
	if len(args) > v1MaxBytes {
		return v1RawHash(args)
	}
	h, ok := new(v1Canon).hash(args, ignore)
	if !ok {
		return v1RawHash(args)
	}
	return h
}

// v1Form returns the canonical form v0.1.0 hashed for args, or false if it
// hashed args as raw bytes.
func v1Form(args []byte, ignore []string) (string, bool) {
	if len(args) > v1MaxBytes {
		return "", false
	}
	c := new(v1Canon)
	c.reset(args)
	if !c.parse(ignore) {
		return "", false
	}
	if c.null {
		return "{}", true
	}
	var b []byte
	for i := c.cur.head; ; i = c.segs[i].next {
		b = append(b, c.seg(i)...)
		if i == c.cur.tail {
			break
		}
	}
	return string(b), true
}

// v1Seg is a segment of the canonical form, which is built as a linked
// list of segments. A segment refers either to bytes of the input (addresses
// below len(in)) or to bytes written to out (address base+k refers to
// out[k]; base is len(in)+1, so segments of the two kinds are never
// adjacent). Reordering object members relinks segments instead of moving
// bytes, so every byte is copied at most twice whatever the nesting.
type v1Seg struct{ lo, hi, next int32 }

// v1List is a list of segments, from head to tail inclusive; -1 if empty.
type v1List struct{ head, tail int32 }

// v1Member is one member of an object being canonicalized.
type v1Member struct {
	pre      uint64 // first 8 decoded key bytes, big-endian, zero-padded
	klo, khi int32  // canonical key, quotes included
	esc      bool   // the canonical key contains an escape
	drop     bool   // the key is ignored
	val      v1List // canonical `"key":value`
}

// v1Frame is an open array or object.
type v1Frame struct {
	obj    bool
	sorted bool   // members so far are in strictly increasing key order
	mbase  int32  // index of the first member in v1Canon.mems
	sbase  int32  // number of segments when the object opened
	saved  v1List // the enclosing list, ending with '{'
}

// v1Canon is the pooled state of one hashArgs call.
type v1Canon struct {
	in    []byte
	base  int32
	null  bool // the payload is empty or null
	cur   v1List
	out   []byte
	segs  []v1Seg
	mems  []v1Member
	stack []v1Frame
	asm   []byte
	keys  []v1Key
	flat  canonFlatScratch
}

// v1Key is the previous key of an open container, for isCanonical.
type v1Key struct {
	lo, hi int32 // key content without quotes; lo < 0 if none yet
	esc    bool
	obj    bool
}

// hash canonicalizes in and hashes the result. It reports false if in is not
// valid JSON or exceeds the depth bound.
func (c *v1Canon) hash(in []byte, ignore []string) (Hash, bool) {
	c.reset(in)
	lo, hi := canonTrim(in)
	if lo < hi && c.isCanonical(in[lo:hi], ignore) {
		// Fast path: already canonical, hash in place.
		return v1Sum(canonPrefixJSON, in[lo:hi]), true
	}
	if !c.parse(ignore) {
		return Hash{}, false
	}
	h := sha256.New()
	h.Write([]byte(canonPrefixJSON))
	switch l := c.cur; {
	case c.null:
		h.Write([]byte("{}"))
	case l.head == l.tail && c.segs[l.head].lo < c.base:
		s := c.segs[l.head]
		h.Write(in[s.lo:s.hi])
	default:
		// Long segments are hashed in place; short ones are gathered
		// first, as each Write has a cost of its own.
		asm := c.asm[:0]
		for i := l.head; ; i = c.segs[i].next {
			if b := c.seg(i); len(b) >= v1DirectMin {
				if len(asm) > 0 {
					h.Write(asm)
					asm = asm[:0]
				}
				h.Write(b)
			} else if asm = append(asm, b...); len(asm) >= v1GatherMax {
				h.Write(asm)
				asm = asm[:0]
			}
			if i == l.tail {
				break
			}
		}
		h.Write(asm)
		c.asm = asm[:0]
	}
	var sum [sha256.Size]byte
	return Hash(h.Sum(sum[:0])), true
}

// reset prepares c for the payload in.
func (c *v1Canon) reset(in []byte) {
	c.in = in
	c.base = int32(len(in) + 1)
	c.null = false
	c.cur = v1List{-1, -1}
	c.out = c.out[:0]
	c.segs = c.segs[:0]
	c.mems = c.mems[:0]
	c.stack = c.stack[:0]
}

// at returns the bytes at addresses [lo, hi).
func (c *v1Canon) at(lo, hi int32) []byte {
	if lo < c.base {
		return c.in[lo:hi]
	}
	return c.out[lo-c.base : hi-c.base]
}

// seg returns the bytes of segment i.
func (c *v1Canon) seg(i int32) []byte {
	s := c.segs[i]
	return c.at(s.lo, s.hi)
}

// parse scans c.in, writing its canonical form to c.cur.
func (c *v1Canon) parse(ignore []string) bool {
	in := c.in
	n := len(in)
	i := SkipWS(in, 0)
	if i == n {
		c.null = true
		return true
	}
value:
	for {
		i = SkipWS(in, i)
		if i >= n {
			return false
		}
		switch in[i] {
		case '{':
			if len(c.stack) == canonMaxDepth {
				return false
			}
			if len(c.stack) > 0 {
				// A flat object inside the payload: canonicalized in one
				// go, without member lists.
				start := len(c.out)
				if out, e, ok := canonFlat(c.out, in, i, -1, nil, nil, &c.flat); ok {
					c.out = out
					c.extendOut(c.base+int32(start), len(out)-start)
					i = e
					break
				}
			}
			c.emitByte('{')
			c.stack = append(c.stack, v1Frame{
				obj: true, sorted: true, saved: c.cur,
				mbase: int32(len(c.mems)), sbase: int32(len(c.segs)),
			})
			if i = SkipWS(in, i+1); i < n && in[i] == '}' {
				i++
				c.closeObject()
				break
			}
			if i = c.key(i, ignore); i < 0 {
				return false
			}
			continue value
		case '[':
			if len(c.stack) == canonMaxDepth {
				return false
			}
			c.emitByte('[')
			c.stack = append(c.stack, v1Frame{})
			if i = SkipWS(in, i+1); i < n && in[i] == ']' {
				i++
				c.emitByte(']')
				c.stack = c.stack[:len(c.stack)-1]
				break
			}
			continue value
		case '"':
			e, canon, _ := v1ScanString(in, i)
			if e < 0 {
				return false
			}
			if canon {
				c.emitIn(i, e)
			} else {
				c.emitString(in[i+1 : e-1])
			}
			i = e
		case 't', 'f', 'n':
			e := canonScanLiteral(in, i)
			if e < 0 {
				return false
			}
			if in[i] == 'n' && len(c.stack) == 0 {
				c.null = true
			}
			c.emitIn(i, e)
			i = e
		default:
			e, simple := v1ScanNumber(in, i)
			if e < 0 {
				return false
			}
			c.emitNumber(i, e, simple)
			i = e
		}
		// After a value: close containers until one expects more.
		for {
			i = SkipWS(in, i)
			if len(c.stack) == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			if !c.stack[len(c.stack)-1].obj {
				switch in[i] {
				case ',':
					c.emitByte(',')
					i++
					continue value
				case ']':
					c.emitByte(']')
					i++
					c.stack = c.stack[:len(c.stack)-1]
					continue
				}
				return false
			}
			c.endMember()
			switch in[i] {
			case ',':
				if i = c.key(i+1, ignore); i < 0 {
					return false
				}
				continue value
			case '}':
				i++
				c.closeObject()
				continue
			}
			return false
		}
	}
}

// isCanonical reports whether in is a valid JSON value already in canonical
// form: compact, keys strictly increasing and not ignored at the top level,
// strings and numbers canonically written, and not the top-level null. It
// only validates, which is much cheaper than parse.
func (c *v1Canon) isCanonical(in []byte, ignore []string) bool {
	n := len(in)
	c.keys = c.keys[:0]
	i := 0
value:
	for {
		if i >= n {
			return false
		}
		switch in[i] {
		case '{', '[':
			if len(c.keys) == canonMaxDepth {
				return false
			}
			obj := in[i] == '{'
			c.keys = append(c.keys, v1Key{lo: -1, obj: obj})
			if i++; i < n && (obj && in[i] == '}' || !obj && in[i] == ']') {
				i++
				c.keys = c.keys[:len(c.keys)-1]
				break
			}
			if obj {
				if i = v1StrictKey(in, i, c.keys, ignore); i < 0 {
					return false
				}
			}
			continue value
		case '"':
			e, canon, _ := v1ScanString(in, i)
			if !canon {
				return false
			}
			i = e
		case 't', 'f', 'n':
			e := canonScanLiteral(in, i)
			if e < 0 || in[i] == 'n' && len(c.keys) == 0 {
				return false
			}
			i = e
		default:
			e, simple := v1ScanNumber(in, i)
			if e < 0 || !v1NumberIsCanonical(in[i:e], simple) {
				return false
			}
			i = e
		}
		for {
			if len(c.keys) == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			obj := c.keys[len(c.keys)-1].obj
			switch {
			case in[i] == ',':
				i++
				if obj {
					if i = v1StrictKey(in, i, c.keys, ignore); i < 0 {
						return false
					}
				}
				continue value
			case obj && in[i] == '}', !obj && in[i] == ']':
				i++
				c.keys = c.keys[:len(c.keys)-1]
			default:
				return false
			}
		}
	}
}

// v1StrictKey checks a canonical key and its colon at in[i:] for
// isCanonical: it must be greater than the previous key of the innermost
// object (the last of keys), whose entry it updates, and not ignored at the
// top level. It returns the index after the colon, or -1.
func v1StrictKey(in []byte, i int, keys []v1Key, ignore []string) int {
	if i >= len(in) || in[i] != '"' {
		return -1
	}
	e, canon, esc := v1ScanString(in, i)
	if !canon || e >= len(in) || in[e] != ':' {
		return -1
	}
	k := in[i+1 : e-1]
	top := &keys[len(keys)-1]
	if top.lo >= 0 {
		p := in[top.lo:top.hi]
		var r int
		if esc || top.esc {
			r = canonCmpEscaped(p, k)
		} else {
			r = bytes.Compare(p, k)
		}
		if r >= 0 {
			return -1
		}
	}
	if len(keys) == 1 {
		for _, s := range ignore {
			if !esc && string(k) == s || esc && canonEqualEscaped(k, s) {
				return -1
			}
		}
	}
	top.lo, top.hi, top.esc = int32(i+1), int32(e-1), esc
	return e + 1
}

// key scans an object key and its colon at in[i:], starting a new member. It
// returns the index of the member's value, or -1.
func (c *v1Canon) key(i int, ignore []string) int {
	in := c.in
	i = SkipWS(in, i)
	if i >= len(in) || in[i] != '"' {
		return -1
	}
	e, canon, esc := v1ScanString(in, i)
	if e < 0 {
		return -1
	}
	c.cur = v1List{-1, -1}
	c.mems = append(c.mems, v1Member{})
	m := &c.mems[len(c.mems)-1]
	if canon {
		m.klo = c.emitIn(i, e)
		m.khi = m.klo + int32(e-i)
		m.esc = esc
	} else {
		m.klo, m.khi, m.esc = c.emitString(in[i+1 : e-1])
	}
	k := c.at(m.klo+1, m.khi-1)
	end := int32(len(c.in))
	if m.klo >= c.base {
		end = c.base + int32(len(c.out))
	}
	if !m.esc && m.klo+9 <= end {
		// Load eight bytes in place and clear those past the key.
		m.pre = binary.BigEndian.Uint64(c.at(m.klo+1, m.klo+9))
		if len(k) < 8 {
			m.pre &= ^uint64(0) << (64 - 8*len(k))
		}
	} else {
		var pre [8]byte
		for j, n := 0, 0; j < len(k) && n < len(pre); n++ {
			pre[n], j = canonNextByte(k, j)
		}
		m.pre = binary.BigEndian.Uint64(pre[:])
	}
	if len(c.stack) == 1 && len(ignore) > 0 {
		for _, s := range ignore {
			if !m.esc && string(k) == s || m.esc && canonEqualEscaped(k, s) {
				m.drop = true
				break
			}
		}
	}
	i = SkipWS(in, e)
	if i >= len(in) || in[i] != ':' {
		return -1
	}
	c.emitByte(':')
	return i + 1
}

// endMember completes the last member of the innermost object.
func (c *v1Canon) endMember() {
	last := len(c.mems) - 1
	m := &c.mems[last]
	m.val = c.cur
	if m.drop {
		c.mems = c.mems[:last]
		return
	}
	f := &c.stack[len(c.stack)-1]
	if last > int(f.mbase) && c.cmpKeys(&c.mems[last-1], m) >= 0 {
		f.sorted = false
	}
}

// closeObject sorts the members of the innermost object and appends the
// object to the enclosing list.
func (c *v1Canon) closeObject() {
	f := c.stack[len(c.stack)-1]
	ms := c.mems[f.mbase:]
	switch {
	case f.sorted:
	case len(ms) <= 16:
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && c.cmpMembers(&ms[j], &ms[j-1]) < 0; j-- {
				ms[j], ms[j-1] = ms[j-1], ms[j]
			}
		}
	default:
		slices.SortFunc(ms, func(a, b v1Member) int { return c.cmpMembers(&a, &b) })
	}
	c.cur = f.saved
	for k := range ms {
		if k > 0 {
			c.emitByte(',')
		}
		c.appendList(ms[k].val)
	}
	if c.cur.tail == f.saved.tail {
		// Every member merged into the enclosing segment: the
		// segments made since the object opened are unreferenced.
		c.segs = c.segs[:f.sbase]
	}
	c.emitByte('}')
	c.mems = c.mems[:f.mbase]
	c.stack = c.stack[:len(c.stack)-1]
}

// cmpKeys compares the decoded keys of two members.
func (c *v1Canon) cmpKeys(a, b *v1Member) int {
	if a.pre != b.pre {
		if a.pre < b.pre {
			return -1
		}
		return 1
	}
	ka, kb := c.at(a.klo+1, a.khi-1), c.at(b.klo+1, b.khi-1)
	if !a.esc && !b.esc {
		return bytes.Compare(ka, kb)
	}
	return canonCmpEscaped(ka, kb)
}

// cmpMembers orders members by decoded key, then by canonical value.
func (c *v1Canon) cmpMembers(a, b *v1Member) int {
	if r := c.cmpKeys(a, b); r != 0 {
		return r
	}
	return c.cmpLists(a.val, b.val)
}

// cmpLists compares the bytes of two non-empty lists.
func (c *v1Canon) cmpLists(a, b v1List) int {
	ai, bi := a.head, b.head
	ap, bp := c.seg(ai), c.seg(bi)
	for {
		for len(ap) == 0 && ai != a.tail {
			ai = c.segs[ai].next
			ap = c.seg(ai)
		}
		for len(bp) == 0 && bi != b.tail {
			bi = c.segs[bi].next
			bp = c.seg(bi)
		}
		switch {
		case len(ap) == 0 && len(bp) == 0:
			return 0
		case len(ap) == 0:
			return -1
		case len(bp) == 0:
			return 1
		}
		k := min(len(ap), len(bp))
		if r := bytes.Compare(ap[:k], bp[:k]); r != 0 {
			return r
		}
		ap, bp = ap[k:], bp[k:]
	}
}

// newSeg appends the segment [lo, hi) to c.cur.
func (c *v1Canon) newSeg(lo, hi int32) {
	i := int32(len(c.segs))
	c.segs = append(c.segs, v1Seg{lo, hi, -1})
	if c.cur.tail >= 0 {
		c.segs[c.cur.tail].next = i
	} else {
		c.cur.head = i
	}
	c.cur.tail = i
}

// appendList appends l to c.cur, merging adjacent segments.
func (c *v1Canon) appendList(l v1List) {
	t := c.cur.tail
	if t < 0 {
		c.cur = l
		return
	}
	ts, hs := &c.segs[t], c.segs[l.head]
	if ts.hi != hs.lo {
		ts.next = l.head
		c.cur.tail = l.tail
		return
	}
	ts.hi = hs.hi
	if l.head != l.tail {
		ts.next = hs.next
		c.cur.tail = l.tail
	}
}

// emitIn appends in[lo:hi] to c.cur and returns the address of the copy.
func (c *v1Canon) emitIn(lo, hi int) int32 {
	if t := c.cur.tail; t >= 0 {
		if s := &c.segs[t]; int(s.hi) == lo {
			s.hi = int32(hi)
			return int32(lo)
		}
	}
	return c.emitInSlow(lo, hi)
}

// emitInSlow is emitIn when in[lo:hi] does not extend the last segment.
func (c *v1Canon) emitInSlow(lo, hi int) int32 {
	if c.cur.tail >= 0 && hi-lo <= v1CopyMax {
		return c.emitOut(c.in[lo:hi])
	}
	c.newSeg(int32(lo), int32(hi))
	return int32(lo)
}

// emitOut appends b to c.cur through c.out and returns its address.
func (c *v1Canon) emitOut(b []byte) int32 {
	a := c.base + int32(len(c.out))
	c.out = append(c.out, b...)
	c.extendOut(a, len(b))
	return a
}

// extendOut appends to c.cur the n bytes just written to c.out at address a.
func (c *v1Canon) extendOut(a int32, n int) {
	if t := c.cur.tail; t >= 0 && c.segs[t].hi == a {
		c.segs[t].hi += int32(n)
		return
	}
	c.newSeg(a, a+int32(n))
}

// emitByte appends b to c.cur, extending an input segment when the input
// continues with b.
func (c *v1Canon) emitByte(b byte) {
	if t := c.cur.tail; t >= 0 {
		if s := &c.segs[t]; int(s.hi) < len(c.in) && c.in[s.hi] == b {
			s.hi++
			return
		}
	}
	c.emitByteOut(b)
}

// emitByteOut appends b to c.cur through c.out.
func (c *v1Canon) emitByteOut(b byte) {
	a := c.base + int32(len(c.out))
	c.out = append(c.out, b)
	c.extendOut(a, 1)
}

// emitString appends the canonical encoding of the JSON string content raw
// (validated, without quotes). It returns the address range of the encoding
// and whether it contains an escape. The encoding is never longer than raw
// plus its quotes: every escape decodes to at most its own length.
func (c *v1Canon) emitString(raw []byte) (lo, hi int32, esc bool) {
	start := len(c.out)
	out := slices.Grow(c.out, len(raw)+2)[:start+len(raw)+2]
	w := start
	out[w] = '"'
	w++
	for j := 0; j < len(raw); {
		k := bytes.IndexByte(raw[j:], '\\')
		if k < 0 {
			w += copy(out[w:], raw[j:])
			break
		}
		w += copy(out[w:], raw[j:j+k])
		j += k
		switch raw[j+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't': // already canonical
			out[w], out[w+1] = '\\', raw[j+1]
			w += 2
			j += 2
			esc = true
			continue
		case '/':
			out[w] = '/'
			w++
			j += 2
			continue
		}
		var r rune
		r, j = canonDecodeEscape(raw, j)
		switch {
		case r >= utf8.RuneSelf:
			w += len(canonAppendRune(out[w:w], r))
		case r < 0x20 || r == '"' || r == '\\':
			w += len(canonAppendEscaped(out[w:w], r))
			esc = true
		default:
			out[w] = byte(r)
			w++
		}
	}
	out[w] = '"'
	w++
	c.out = out[:w]
	lo = c.base + int32(start)
	hi = c.base + int32(w)
	c.extendOut(lo, w-start)
	return lo, hi, esc
}

// emitNumber appends the canonical form of the number in[lo:hi]. simple
// reports that the number has no fraction and no exponent.
func (c *v1Canon) emitNumber(lo, hi int, simple bool) {
	num := c.in[lo:hi]
	if simple && v1NumberIsCanonical(num, true) {
		c.emitIn(lo, hi)
		return
	}
	start := len(c.out)
	c.out = canonAppendNumber(c.out, num)
	if bytes.Equal(c.out[start:], num) {
		c.out = c.out[:start]
		c.emitIn(lo, hi)
		return
	}
	c.extendOut(c.base+int32(start), len(c.out)-start)
}

// canonNextByte decodes the byte of canonical string content b at j and
// returns it and the index after it.
func canonNextByte(b []byte, j int) (byte, int) {
	if b[j] != '\\' {
		return b[j], j + 1
	}
	if b[j+1] == 'u' {
		return byte(canonHex4(b[j+2:])), j + 6
	}
	r, k := canonDecodeEscape(b, j) // a one-letter escape
	return byte(r), k
}

// canonCmpEscaped compares two canonical string contents by decoded bytes.
func canonCmpEscaped(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var x, y byte
		x, i = canonNextByte(a, i)
		y, j = canonNextByte(b, j)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return 0
}

// canonEqualEscaped reports whether canonical string content b decodes to s.
func canonEqualEscaped(b []byte, s string) bool {
	i, j := 0, 0
	for i < len(b) && j < len(s) {
		var x byte
		x, i = canonNextByte(b, i)
		if x != s[j] {
			return false
		}
		j++
	}
	return i == len(b) && j == len(s)
}
