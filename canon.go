package toolguard

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math/big"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Hash is a 128-bit digest; it encodes to text and JSON as 32 hexadecimal
// digits. The hash of a call's arguments (Entry.ArgsHash, LoopError.Key) is
// collision resistant: the first 16 bytes of SHA-256 over a domain-separated
// canonical form of the arguments (keys sorted, whitespace dropped, numbers
// by value; arguments that are not JSON are hashed as bytes), the same in
// every process. The digests the Tracker keeps of results and errors only
// detect change: they are keyed non-cryptographic hashes with per-process
// seeds, comparable within one process only.
type Hash [16]byte

// String returns h as 32 lower-case hexadecimal digits.
func (h Hash) String() string {
	return hex.EncodeToString(h[:])
}

// short returns the first 64 bits of h: enough to tell a result from the
// one before it.
func (h Hash) short() uint64 { return binary.LittleEndian.Uint64(h[:]) }

// MarshalText encodes h as its String, so JSON holds it as a hex string.
func (h Hash) MarshalText() ([]byte, error) {
	return []byte(h.String()), nil
}

// UnmarshalText decodes a Hash from 32 hexadecimal digits.
func (h *Hash) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(h) {
		return fmt.Errorf("toolguard: a hash is %d hexadecimal digits, not %d", 2*len(h), len(b))
	}
	var v Hash
	if _, err := hex.Decode(v[:], b); err != nil {
		return fmt.Errorf("toolguard: invalid hash: %w", err)
	}
	*h = v
	return nil
}

// Domain prefixes of argument hashes. Each is taken over one of these
// prefixes followed by the canonical or raw bytes; the prefixes differ
// within their common length, so a canonical payload never hashes like a
// raw one. (Result and error digests are kept apart by their seeds, see
// maskSeeds.)
const (
	canonPrefixJSON = "toolguard:j1\x00"
	canonPrefixRaw  = "toolguard:r1\x00"
)

// Bounds of the argument canonicalizer. Payloads beyond them are hashed as
// raw bytes, see hashArgs.
const (
	canonMaxDepth = 512      // maximum nesting of arrays and objects
	canonMaxBytes = 64 << 20 // maximum payload size in bytes
)

// Tuning of the argument canonicalizer.
const (
	canonKeepSize = 1 << 20  // scratch larger than this in total is not pooled
	canonCountMin = 64 << 10 // payloads larger than this are scanned twice (see scan)
	canonNumMax   = 21       // integers with up to this many digits are written without exponent

	canonDirectMin = 512  // pieces this long are hashed in place
	canonGatherMax = 8192 // shorter ones are hashed in batches of about this size
)

// hashArgs returns the hash of a JSON tool-call argument payload such that two
// payloads hash equal exactly when they are equal as JSON values:
//
//   - object keys are sorted (by their decoded bytes) at every depth, and
//     members with duplicate keys are all kept, ordered by key and then by
//     their canonical value;
//   - insignificant whitespace is ignored and strings are compared by their
//     decoded value, so "\u0041" equals "A"; invalid UTF-8 inside a string is
//     kept as bytes, and lone UTF-16 surrogate escapes decode to their
//     generalized UTF-8 (WTF-8) bytes;
//   - numbers are compared exactly by decimal value without float64 rounding:
//     1, 1.0, 1e0 and 10e-1 are one number, -0 equals 0, and
//     12345678901234567890 differs from 12345678901234567891;
//   - nil, empty and whitespace-only payloads, null and {} all mean "no
//     arguments" and hash equal;
//   - top-level object members whose key is listed in ignore are dropped
//     (ignore does not apply to nested objects).
//
// A payload that is not valid JSON (trailing garbage and invalid UTF-8
// outside strings included), that nests arrays and objects deeper than
// canonMaxDepth (512), or that is larger than canonMaxBytes (64 MiB) is
// hashed as its raw bytes under a different domain prefix, so its hash never
// equals the hash of a canonical payload; ignore is not applied then.
// (v0.1.0 hashed payloads over 16 MiB raw; up to 16 MiB every hash is
// unchanged.)
//
// hashArgs is one scan (argScan.scan) and one hash (argScan.hash); a Tracker
// keeps the scan to read the query, the URL and the argument names too.
func hashArgs(args []byte, ignore []string) Hash {
	s := getScratch()
	s.scan.scan(args)
	h := s.scan.hash(ignore)
	s.release()
	return h
}

// scratch is the state of one call being checked or recorded: the scan of
// its arguments and, under the Tracker's lock, the probe, the key's state
// and the outcome the rules read. It is pooled: handed to the rules
// through the detector interface, each would otherwise be allocated per
// call (4 allocations per allowed call; TestAllocsExactPath).
type scratch struct {
	scan argScan
	p    probe
	ks   keyState
	out  outcome
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// canonRawHash hashes b as raw bytes, for payloads that are not canonicalized.
func canonRawHash(b []byte) Hash {
	return canonSum(canonPrefixRaw, b)
}

// canonSmall is the size up to which canonSum hashes from the stack.
const canonSmall = 480

// canonSum returns the first 16 bytes of SHA-256 over prefix followed by b.
// Small inputs are hashed from a buffer on the stack in one call.
func canonSum(prefix string, b []byte) Hash {
	if len(b) <= canonSmall {
		var buf [16 + canonSmall]byte
		sum := sha256.Sum256(append(append(buf[:0], prefix...), b...))
		return Hash(sum[:16])
	}
	h := sha256.New()
	h.Write([]byte(prefix))
	h.Write(b)
	var sum [sha256.Size]byte
	return Hash(h.Sum(sum[:0]))
}

// canonTrim returns the bounds of b without leading and trailing JSON
// whitespace.
func canonTrim(b []byte) (lo, hi int) {
	lo, hi = canonSkipWS(b, 0), len(b)
	for hi > lo && (b[hi-1] == ' ' || b[hi-1] == '\t' || b[hi-1] == '\n' || b[hi-1] == '\r') {
		hi--
	}
	return lo, hi
}

// argScan is one scan of a call's arguments: scan validates them and lists
// what the rest reads, in one pass; hash then streams the canonical form
// into the hasher (as often as there are ignore lists to hash under), and
// the top-level object's listed members give the query, the URL, the
// argument names and the words a failed call is compared by (args.go).
//
// The canonical form is never held whole: scan lists, for each object whose
// members are not written in canonical order, and for the top-level object
// (whose ignored keys hash drops), its members in key order; form then
// streams the canonical form, taking the members of those objects in that
// order and everything else as it is written. Scratch space is 4 bytes per
// member of each open object while scan runs, 12 bytes per listed object
// and 4 per listed member (the top-level object's members are listed where
// they are, unless a nested object is listed too), and the canonical values
// of members with duplicate keys, which are ordered by comparing them. Time
// is O(n) plus sorting members; duplicate keys nested d deep cost up to a
// factor of d more.
type argScan struct {
	in       []byte
	ok       bool        // valid JSON within canonMaxBytes and canonMaxDepth
	topStart int32       // position of the top-level '{', -1 if not an object
	objs     []canonObj  // the listed objects, by position once scan is done
	keys     []int32     // their members' key positions, each object's in key order
	open     []int32     // key positions of the members of the open objects
	stack    []canonOpen // the open arrays and objects

	// counting: scan's first pass, which counts what the second stores.
	counting                     bool
	nOpen, maxOpen, nKeys, nObjs int

	ignore []string // top-level keys form drops
	h      hash.Hash
	sum    [sha256.Size]byte
	buf    []byte  // bytes written but not hashed yet
	lo, hi int     // then in[lo:hi], written but not hashed yet
	num    []byte  // the canonical form of a number
	mat    int     // > 0: write to vals instead, to order duplicate keys
	vals   []byte  // values of duplicate keys, each after its length
	offs   []int32 // their offsets in vals, while they are ordered
}

// canonObj is an object whose members scan listed: the position of its
// '{', and its members' key positions, keys[off:off+n].
type canonObj struct{ start, off, n int32 }

// canonOpen is an array or object that scan has not closed yet.
type canonOpen struct {
	obj     bool
	reorder bool  // members are not in increasing key order, or it is the top level
	start   int32 // position of the '{' or '['
	base    int32 // open[base:] are its members
	n       int32 // its members so far
	prev    int32 // key position of its last member, -1 if none
}

// release clears s and returns it to the pool unless its scan grew large.
func (s *scratch) release() {
	c := &s.scan
	c.in, c.ignore = nil, nil
	s.p, s.out = probe{}, outcome{}
	size := cap(c.buf) + cap(c.num) + cap(c.vals) + 4*cap(c.offs) +
		12*cap(c.objs) + 4*cap(c.keys) + 4*cap(c.open) + 20*cap(c.stack)
	if size > canonKeepSize {
		return
	}
	scratchPool.Put(s)
}

// scan validates the payload in and lists the objects to reorder: those
// whose members are not in strictly increasing key order (duplicate keys
// included), and the top-level object. c.ok reports whether in is valid
// JSON within the bounds (white space only is valid: no arguments).
func (c *argScan) scan(in []byte) {
	c.in, c.ok, c.topStart = in, false, -1
	if len(in) > canonMaxBytes {
		return
	}
	// A large payload is scanned twice: the first pass counts what the
	// second stores, which is then allocated once at its size (append
	// allocates up to five times it). A small one is scanned once, into
	// the scratch's buffers.
	c.counting = len(in) > canonCountMin
	c.nOpen, c.maxOpen, c.nKeys, c.nObjs = 0, 0, 0, 0
	if c.counting {
		if !c.pass() {
			return
		}
		c.counting = false
		c.open, c.keys, c.objs = canonReserve(c.open, c.maxOpen), canonReserve(c.keys, c.nKeys), canonReserve(c.objs, c.nObjs)
	} else {
		c.open, c.keys, c.objs = c.open[:0], c.keys[:0], c.objs[:0]
	}
	if !c.pass() {
		return
	}
	slices.SortFunc(c.objs, func(a, b canonObj) int { return cmp.Compare(a.start, b.start) })
	c.ok = true
}

// hash returns the hash of the scanned payload (see hashArgs) with the
// top-level members whose key is in ignore dropped.
func (c *argScan) hash(ignore []string) Hash {
	if !c.ok {
		return canonRawHash(c.in)
	}
	if c.h == nil {
		c.h = sha256.New()
	}
	c.h.Reset()
	c.buf = append(c.buf[:0], canonPrefixJSON...)
	c.lo, c.hi, c.ignore = 0, 0, ignore
	c.form()
	c.flush()
	c.h.Write(c.buf)
	return Hash(c.h.Sum(c.sum[:0]))
}

// pass is a pass of scan over c.in.
func (c *argScan) pass() bool {
	in := c.in
	c.stack = c.stack[:0]
	n := len(in)
	i := canonSkipWS(in, 0)
	if i == n {
		return true
	}
value:
	for {
		i = canonSkipWS(in, i)
		if i >= n {
			return false
		}
		switch in[i] {
		case '{', '[':
			if len(c.stack) == canonMaxDepth {
				return false
			}
			obj, closer := in[i] == '{', byte(']')
			if obj {
				closer = '}'
				if len(c.stack) == 0 {
					c.topStart = int32(i)
				}
			}
			c.stack = append(c.stack, canonOpen{obj: obj, start: int32(i), base: int32(len(c.open)), prev: -1})
			if i = canonSkipWS(in, i+1); i < n && in[i] == closer {
				i++
				c.stack = c.stack[:len(c.stack)-1]
				break
			}
			if obj {
				if i = c.key(i); i < 0 {
					return false
				}
			}
			continue value
		case '"':
			if i, _, _ = canonScanString(in, i); i < 0 {
				return false
			}
		case 't', 'f', 'n':
			if i = canonScanLiteral(in, i); i < 0 {
				return false
			}
		default:
			if i, _ = canonScanNumber(in, i); i < 0 {
				return false
			}
		}
		// After a value: close containers until one expects more.
		for {
			i = canonSkipWS(in, i)
			if len(c.stack) == 0 {
				break value
			}
			if i >= n {
				return false
			}
			f := &c.stack[len(c.stack)-1]
			switch {
			case in[i] == ',' && f.obj:
				if i = c.key(i + 1); i < 0 {
					return false
				}
				continue value
			case in[i] == ',':
				i++
				continue value
			case in[i] == '}' && f.obj:
				c.closeObject()
			case in[i] == ']' && !f.obj:
				c.stack = c.stack[:len(c.stack)-1]
			default:
				return false
			}
			i++
		}
	}
	return i == n
}

// key scans an object key and its colon at in[i:] (after optional white
// space) for pass. It returns the index after the colon, or -1.
func (c *argScan) key(i int) int {
	in := c.in
	if i = canonSkipWS(in, i); i >= len(in) || in[i] != '"' {
		return -1
	}
	e, _, _ := canonScanString(in, i)
	if e < 0 {
		return -1
	}
	f := &c.stack[len(c.stack)-1]
	top := len(c.stack) == 1
	if top || f.prev >= 0 && canonCmpKeys(in, int(f.prev), i) >= 0 {
		f.reorder = true
	}
	f.prev = int32(i)
	f.n++
	if c.counting {
		c.nOpen++
		c.maxOpen = max(c.maxOpen, c.nOpen)
	} else {
		c.open = append(c.open, int32(i))
	}
	if i = canonSkipWS(in, e); i >= len(in) || in[i] != ':' {
		return -1
	}
	return i + 1
}

// closeObject closes the innermost object for pass, listing it if its
// members are to be reordered.
func (c *argScan) closeObject() {
	f := c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
	// The members of the payload, when no other object is listed, are
	// listed where they are: a large flat object is not copied.
	listed := len(c.keys)
	if c.counting {
		listed = c.nKeys
	}
	inPlace := len(c.stack) == 0 && listed == 0
	switch {
	case c.counting:
		if f.reorder {
			c.nObjs++
			if !inPlace {
				c.nKeys += int(f.n)
			}
		}
		c.nOpen -= int(f.n)
		return
	case !f.reorder:
	case inPlace:
		c.keys, c.open = c.open, c.keys
	default:
		c.keys = append(c.keys, c.open[f.base:]...)
	}
	if f.reorder {
		off := len(c.keys) - int(f.n)
		in := c.in
		slices.SortFunc(c.keys[off:], func(a, b int32) int { return canonCmpKeys(in, int(a), int(b)) })
		c.objs = append(c.objs, canonObj{f.start, int32(off), f.n})
	}
	c.open = c.open[:f.base]
}

// form writes the canonical form of the payload index accepted.
func (c *argScan) form() {
	lo, hi := canonTrim(c.in)
	if lo == hi || string(c.in[lo:hi]) == "null" {
		c.small([]byte("{}")) // no arguments
		return
	}
	c.value(lo)
}

// value writes the canonical form of the value at in[i] and returns the
// index after it.
func (c *argScan) value(i int) int {
	in := c.in
	switch in[i] {
	case '{':
		return c.object(i)
	case '[':
		c.byte('[')
		for i = canonSkipWS(in, i+1); in[i] != ']'; {
			if i = canonSkipWS(in, c.value(i)); in[i] == ',' {
				c.byte(',')
				i = canonSkipWS(in, i+1)
			}
		}
		c.byte(']')
		return i + 1
	case '"':
		return c.str(i)
	case 't', 'f', 'n':
		e := canonScanLiteral(in, i)
		c.span(i, e)
		return e
	}
	e, simple := canonScanNumber(in, i)
	if num := in[i:e]; !canonNumberIsCanonical(num, simple) {
		c.num = canonAppendNumber(c.num[:0], num)
		if !bytes.Equal(c.num, num) {
			c.write(c.num)
			return e
		}
	}
	c.span(i, e)
	return e
}

// object writes the canonical form of the object at in[i] and returns the
// index after it. (For a top-level object whose last member is ignored,
// the index returned is wrong; it is not used.)
func (c *argScan) object(i int) int {
	in := c.in
	o, listed := c.listed(i)
	c.byte('{')
	if !listed {
		// The members are in canonical order as written.
		for i = canonSkipWS(in, i+1); in[i] != '}'; {
			if i = canonSkipWS(in, c.member(i)); in[i] == ',' {
				c.byte(',')
				i = canonSkipWS(in, i+1)
			}
		}
		c.byte('}')
		return i + 1
	}
	ks := c.keys[o.off : o.off+o.n]
	drop := i == int(c.topStart) && len(c.ignore) > 0
	end, wrote := i+1, false // end: of the last member's value in the payload
	for a := 0; a < len(ks); {
		b := a + 1
		for b < len(ks) && canonCmpKeys(in, int(ks[a]), int(ks[b])) == 0 {
			b++
		}
		if drop && slices.ContainsFunc(c.ignore, func(s string) bool { return canonKeyIs(in, int(ks[a]), s) }) {
			a = b
			continue
		}
		if wrote {
			c.byte(',')
		}
		wrote = true
		if b == a+1 {
			end = max(end, c.member(int(ks[a])))
		} else {
			end = max(end, c.duplicates(ks[a:b]))
		}
		a = b
	}
	c.byte('}')
	return canonSkipWS(in, end) + 1
}

// listed returns the listing of the object at in[i], if scan listed it.
func (c *argScan) listed(i int) (canonObj, bool) {
	k, ok := slices.BinarySearchFunc(c.objs, int32(i), func(o canonObj, start int32) int { return cmp.Compare(o.start, start) })
	if !ok {
		return canonObj{}, false
	}
	return c.objs[k], true
}

// member writes the member whose key is at in[i], `"key":value`, and
// returns the index after its value.
func (c *argScan) member(i int) int {
	i = canonSkipWS(c.in, c.str(i))
	c.byte(':')
	return c.value(canonSkipWS(c.in, i+1))
}

// duplicates writes the members whose keys, at the positions ks, are equal,
// ordered by their canonical values, and returns the index after the value
// that ends last in the payload. The values are written to vals first, each
// after its length, to be compared, their offsets to offs; both are
// truncated back when done, so nested duplicates share them.
func (c *argScan) duplicates(ks []int32) int {
	in := c.in
	key, v0, o0, end := int(ks[0]), len(c.vals), len(c.offs), 0
	c.mat++
	for _, k := range ks {
		i, _, _ := canonScanString(in, int(k))
		i = canonSkipWS(in, canonSkipWS(in, i)+1)
		lo := len(c.vals)
		c.vals = append(canonGrow(c.vals, 4), 0, 0, 0, 0)
		end = max(end, c.value(i))
		binary.LittleEndian.PutUint32(c.vals[lo:], uint32(len(c.vals)-lo-4))
		c.offs = append(canonGrow(c.offs, 1), int32(lo))
	}
	c.mat--
	val := func(lo int32) []byte {
		return c.vals[lo+4 : lo+4+int32(binary.LittleEndian.Uint32(c.vals[lo:]))]
	}
	offs := c.offs[o0:]
	slices.SortFunc(offs, func(a, b int32) int { return bytes.Compare(val(a), val(b)) })
	v1 := len(c.vals)
	for n, lo := range offs {
		if n > 0 {
			c.byte(',')
		}
		c.str(key)
		c.byte(':')
		c.write(val(lo))
	}
	c.offs = c.offs[:o0]
	if c.mat > 0 {
		// Written to vals too: move the members over the values.
		c.vals = append(c.vals[:v0], c.vals[v1:]...)
	} else {
		c.vals = c.vals[:v0]
	}
	return end
}

// str writes the canonical encoding of the string at in[i] and returns the
// index after it.
func (c *argScan) str(i int) int {
	e, canon, _ := canonScanString(c.in, i)
	if canon {
		c.span(i, e)
		return e
	}
	raw := c.in[:e-1] // up to the closing quote
	c.byte('"')
	for j := i + 1; j < len(raw); {
		k := bytes.IndexByte(raw[j:], '\\')
		if k < 0 {
			c.span(j, len(raw))
			break
		}
		if k > 0 {
			c.span(j, j+k)
			j += k
		}
		switch raw[j+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't': // already canonical
			c.span(j, j+2)
			j += 2
			continue
		case '/':
			c.byte('/')
			j += 2
			continue
		}
		var r rune
		r, j = canonDecodeEscape(raw, j)
		var tmp [8]byte
		switch {
		case r >= utf8.RuneSelf:
			c.small(canonAppendRune(tmp[:0], r))
		case r < 0x20 || r == '"' || r == '\\':
			c.small(canonAppendByte(tmp[:0], byte(r)))
		default:
			c.byte(byte(r))
		}
	}
	c.byte('"')
	return e
}

// span writes in[lo:hi]. Consecutive bytes of in are hashed in one piece.
func (c *argScan) span(lo, hi int) {
	if c.mat > 0 {
		c.vals = append(canonGrow(c.vals, hi-lo), c.in[lo:hi]...)
		return
	}
	if lo != c.hi {
		c.flush()
		c.lo = lo
	}
	c.hi = hi
}

// byte writes b.
func (c *argScan) byte(b byte) {
	if c.mat == 0 && c.hi < len(c.in) && c.in[c.hi] == b {
		c.hi++ // the payload goes on with b
		return
	}
	c.small([]byte{b})
}

// small writes b, a few bytes.
func (c *argScan) small(b []byte) {
	if c.mat > 0 {
		c.vals = append(canonGrow(c.vals, len(b)), b...)
		return
	}
	c.flush()
	if c.buf = append(c.buf, b...); len(c.buf) >= canonGatherMax {
		c.h.Write(c.buf)
		c.buf = c.buf[:0]
	}
}

// write writes b, which may be long.
func (c *argScan) write(b []byte) {
	if c.mat > 0 {
		c.vals = append(canonGrow(c.vals, len(b)), b...)
		return
	}
	c.flush()
	c.out(b)
}

// flush hashes in[lo:hi].
func (c *argScan) flush() {
	if c.lo < c.hi {
		b := c.in[c.lo:c.hi]
		c.lo = c.hi
		c.out(b)
	}
}

// out hashes b after buf: in place if it is long; else appended to buf,
// which is hashed when it is long, as each Write has a cost of its own.
func (c *argScan) out(b []byte) {
	if len(b) < canonDirectMin {
		if c.buf = append(c.buf, b...); len(c.buf) < canonGatherMax {
			return
		}
		b = nil
	}
	c.h.Write(c.buf)
	c.buf = c.buf[:0]
	c.h.Write(b)
}

// canonCmpKeys compares the valid JSON strings at in[a] and in[b] by their
// decoded bytes, lone surrogates as generalized UTF-8 (see canonAppendRune).
func canonCmpKeys(in []byte, a, b int) int {
	x, y := canonKeyReader{in: in, i: a + 1}, canonKeyReader{in: in, i: b + 1}
	for {
		// Plain bytes, most of them, are compared in place.
		for x.k == x.n && y.k == y.n && in[x.i] == in[y.i] && in[x.i] != '"' && in[x.i] != '\\' {
			x.i++
			y.i++
		}
		p, more := x.next()
		q, moreQ := y.next()
		switch {
		case !more || !moreQ:
			return cmp.Compare(b2i(more), b2i(moreQ))
		case p != q:
			return cmp.Compare(p, q)
		}
	}
}

// canonKeyIs reports whether the valid JSON string at in[i] decodes to s.
func canonKeyIs(in []byte, i int, s string) bool {
	r := canonKeyReader{in: in, i: i + 1}
	for j := 0; ; j++ {
		b, more := r.next()
		if !more || j == len(s) || b != s[j] {
			return !more && j == len(s)
		}
	}
}

// canonKeyReader reads the decoded bytes of a valid JSON string.
type canonKeyReader struct {
	in   []byte
	i    int // the next byte of in
	buf  [utf8.UTFMax]byte
	k, n int // buf[k:n] are decoded and not read yet
}

// next returns the next decoded byte, or false at the closing quote.
func (r *canonKeyReader) next() (byte, bool) {
	if r.k < r.n {
		r.k++
		return r.buf[r.k-1], true
	}
	switch c := r.in[r.i]; c {
	case '"':
		return 0, false
	case '\\':
	default:
		r.i++
		return c, true
	}
	var ru rune
	ru, r.i = canonDecodeEscape(r.in, r.i)
	if ru < utf8.RuneSelf {
		return byte(ru), true
	}
	r.k, r.n = 1, len(canonAppendRune(r.buf[:0], ru))
	return r.buf[0], true
}

// canonGrow makes room for n more elements in s, at least doubling its
// capacity: append grows large slices by a quarter, which allocates about
// five times their final size on the way.
func canonGrow[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	t := make([]T, len(s), max(2*cap(s), len(s)+n, 16))
	copy(t, s)
	return t
}

// canonReserve returns s emptied, with room for n elements.
func canonReserve[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// b2i is 1 if b, else 0.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// canonNumberIsCanonical reports whether the valid JSON number num is in
// canonical form; simple reports that it is a plain integer. Long numbers
// with a fraction or exponent are conservatively reported as not canonical.
func canonNumberIsCanonical(num []byte, simple bool) bool {
	if simple {
		d := num
		if d[0] == '-' {
			d = d[1:]
		}
		return len(d) <= canonNumMax && (num[0] != '-' || d[0] != '0')
	}
	if len(num) > 24 {
		return false
	}
	var buf [64]byte
	return bytes.Equal(canonAppendNumber(buf[:0], num), num)
}

// canonAppendNumber appends the canonical form of the valid JSON number num:
// "0", or an optional '-' and the significant digits D (no leading or
// trailing zeros) placed by the decimal exponent n (value = 0.D × 10^n):
// D followed by zeros when len(D) <= n <= 21, a decimal fraction when
// -6 < n <= 21, otherwise D[0].D[1:] "e" n-1 (exponent without '+').
func canonAppendNumber(dst, num []byte) []byte {
	p := 0
	neg := num[0] == '-'
	if neg {
		p++
	}
	ia := p
	for p < len(num) && canonIsDigit(num[p]) {
		p++
	}
	ib, fa, fb := p, p, p
	if p < len(num) && num[p] == '.' {
		p++
		fa = p
		for p < len(num) && canonIsDigit(num[p]) {
			p++
		}
		fb = p
	}
	var exp []byte
	expNeg := false
	if p < len(num) { // 'e' or 'E'
		p++
		switch num[p] {
		case '-':
			expNeg = true
			p++
		case '+':
			p++
		}
		exp = num[p:]
		for len(exp) > 1 && exp[0] == '0' {
			exp = exp[1:]
		}
	}
	li, lf := ib-ia, fb-fa
	digit := func(k int) byte {
		if k < li {
			return num[ia+k]
		}
		return num[fa+k-li]
	}
	fz, lz := -1, li+lf-1
	for k := 0; k <= lz; k++ {
		if digit(k) != '0' {
			fz = k
			break
		}
	}
	if fz < 0 {
		return append(dst, '0')
	}
	for digit(lz) == '0' {
		lz--
	}
	k := int64(lz - fz + 1)
	appendDigits := func(dst []byte, from, to int64) []byte {
		for m := from; m < to; m++ {
			dst = append(dst, digit(fz+int(m)))
		}
		return dst
	}
	if neg {
		dst = append(dst, '-')
	}
	adj := int64(li - fz) // n = adj + exponent
	if len(exp) > 15 {
		// The exponent is astronomically large; n is far outside the
		// range of the plain forms. Compute n-1 exactly.
		var e big.Int
		e.SetString(string(exp), 10)
		if expNeg {
			e.Neg(&e)
		}
		e.Add(&e, big.NewInt(adj-1))
		dst = appendDigits(dst, 0, 1)
		if k > 1 {
			dst = append(dst, '.')
			dst = appendDigits(dst, 1, k)
		}
		dst = append(dst, 'e')
		return e.Append(dst, 10)
	}
	var e int64
	for _, d := range exp {
		e = e*10 + int64(d-'0')
	}
	if expNeg {
		e = -e
	}
	n := adj + e
	switch {
	case k <= n && n <= canonNumMax:
		dst = appendDigits(dst, 0, k)
		for ; k < n; k++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= canonNumMax:
		dst = appendDigits(dst, 0, n)
		dst = append(dst, '.')
		dst = appendDigits(dst, n, k)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for ; n < 0; n++ {
			dst = append(dst, '0')
		}
		dst = appendDigits(dst, 0, k)
	default:
		dst = appendDigits(dst, 0, 1)
		if k > 1 {
			dst = append(dst, '.')
			dst = appendDigits(dst, 1, k)
		}
		dst = append(dst, 'e')
		dst = strconv.AppendInt(dst, n-1, 10)
	}
	return dst
}

// canonAppendByte appends the canonical string encoding of the byte b.
func canonAppendByte(dst []byte, b byte) []byte {
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	if b < 0x20 {
		const hexDigits = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
	}
	return append(dst, b)
}

// canonAppendRune appends r (>= 0x80) as UTF-8, surrogates as generalized
// UTF-8 so that lone surrogate escapes stay distinct from U+FFFD.
func canonAppendRune(dst []byte, r rune) []byte {
	if r >= 0xD800 && r <= 0xDFFF {
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(dst, r)
}

// canonDecodeEscape decodes the validated escape at raw[j] and returns the
// rune and the index after it. A \u escape of a high surrogate followed by a
// \u escape of a low surrogate decodes to one rune; lone surrogates are
// returned as they are.
func canonDecodeEscape(raw []byte, j int) (rune, int) {
	switch raw[j+1] {
	case 'u':
		r := canonHex4(raw[j+2:])
		j += 6
		if r >= 0xD800 && r < 0xDC00 && j+6 <= len(raw) && raw[j] == '\\' && raw[j+1] == 'u' {
			if r2 := canonHex4(raw[j+2:]); r2 >= 0xDC00 && r2 <= 0xDFFF {
				return 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00), j + 6
			}
		}
		return r, j
	}
	return rune(canonSimpleEscape(raw[j+1])), j + 2
}

// canonSimpleEscape returns the byte a one-letter escape \c stands for
// (c itself for \" \\ and \/).
func canonSimpleEscape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c
}

// canonHex4 decodes four validated hexadecimal digits.
func canonHex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		case c >= 'a':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// canonSkipWS returns the index of the first non-whitespace byte at or after i.
func canonSkipWS(in []byte, i int) int {
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// canonIsDigit reports whether c is a decimal digit.
func canonIsDigit(c byte) bool { return '0' <= c && c <= '9' }

// canonIsHex reports whether c is a hexadecimal digit.
func canonIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
}

// canonScanLiteral returns the end of the literal true, false or null at
// in[i], or -1.
func canonScanLiteral(in []byte, i int) int {
	for _, lit := range [...]string{"true", "false", "null"} {
		if in[i] == lit[0] && len(in)-i >= len(lit) && string(in[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return -1
}

// canonScanNumber returns the end of the JSON number at in[i], or -1, and
// whether it is a plain integer (no fraction, no exponent).
func canonScanNumber(in []byte, i int) (int, bool) {
	n := len(in)
	if i < n && in[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return -1, false
	case in[i] == '0':
		i++
	case '1' <= in[i] && in[i] <= '9':
		for i++; i < n && canonIsDigit(in[i]); i++ {
		}
	default:
		return -1, false
	}
	simple := true
	if i < n && in[i] == '.' {
		simple = false
		i++
		k := i
		for i < n && canonIsDigit(in[i]) {
			i++
		}
		if i == k {
			return -1, false
		}
	}
	if i < n && in[i]|0x20 == 'e' {
		simple = false
		i++
		if i < n && (in[i] == '+' || in[i] == '-') {
			i++
		}
		k := i
		for i < n && canonIsDigit(in[i]) {
			i++
		}
		if i == k {
			return -1, false
		}
	}
	return i, simple
}

// canonPlain marks the bytes a JSON string holds as they are: all but the
// quote, the backslash and control bytes.
var canonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// canonScanString validates the JSON string starting with the quote at in[i]
// and returns the index after its closing quote, or -1. canon reports that
// the string is already in canonical encoding (its only escapes are \" \\
// \b \f \n \r \t and lower-case \u00XX for other control characters); esc
// reports that it contains an escape.
func canonScanString(in []byte, i int) (end int, canon, esc bool) {
	canon = true
	j := i + 1
	for {
		for j < len(in) && canonPlain[in[j]] {
			j++
		}
		if j >= len(in) {
			return -1, false, false
		}
		switch c := in[j]; {
		case c == '"':
			return j + 1, canon, esc
		case c == '\\':
			esc = true
			if j+1 >= len(in) {
				return -1, false, false
			}
			switch in[j+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				j += 2
			case '/':
				canon = false
				j += 2
			case 'u':
				if j+6 > len(in) {
					return -1, false, false
				}
				h := in[j+2 : j+6]
				if !canonIsHex(h[0]) || !canonIsHex(h[1]) || !canonIsHex(h[2]) || !canonIsHex(h[3]) {
					return -1, false, false
				}
				// Canonical only for control characters without a short
				// escape, written in lower case.
				if canon {
					canon = h[0] == '0' && h[1] == '0' && (h[2] == '0' || h[2] == '1') &&
						(canonIsDigit(h[3]) || 'a' <= h[3] && h[3] <= 'f')
					if canon {
						switch canonHex4(h) {
						case '\b', '\f', '\n', '\r', '\t':
							canon = false
						}
					}
				}
				j += 6
			default:
				return -1, false, false
			}
		case c < 0x20:
			return -1, false, false
		default:
			j++
		}
	}
}
