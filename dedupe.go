package toolguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
	"math/bits"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	canonMaxBytes = 16 << 20 // maximum payload size in bytes
)

// Tuning of the argument canonicalizer.
const (
	canonCopyMax  = 64      // pieces up to this size are copied rather than referenced
	canonKeepSize = 8 << 20 // scratch larger than this in total is not pooled
	canonNumMax   = 21      // integers with up to this many digits are written without exponent

	canonDirectMin = 512  // segments this long are hashed in place
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
// canonMaxDepth (512), or that is larger than canonMaxBytes (16 MiB) is
// hashed as its raw bytes under a different domain prefix, so its hash never
// equals the hash of a canonical payload; ignore is not applied then.
//
// The canonical form is compact JSON with sorted keys, minimally escaped
// strings and canonical numbers; it is produced by a single-pass scanner
// into pooled buffers, and a payload that is already canonical is validated
// and hashed in place. Memory is O(n); time is O(n) plus sorting members
// (comparing the values of duplicate keys costs at most a factor of the
// nesting depth more). Small payloads do not allocate.
func hashArgs(args []byte, ignore []string) Hash {
	if h, ok := canonFlatHash(args, ignore, nil); ok {
		return h
	}
	return hashArgsGeneral(args, ignore)
}

// hashArgsGeneral is hashArgs without the flat fast path.
func hashArgsGeneral(args []byte, ignore []string) Hash {
	if len(args) > canonMaxBytes {
		return canonRawHash(args)
	}
	c := canonPool.Get().(*canonScratch)
	h, ok := c.hash(args, ignore)
	c.release()
	if !ok {
		return canonRawHash(args)
	}
	return h
}

// canonPool holds scratch space for hashArgs.
var canonPool = sync.Pool{New: func() any { return new(canonScratch) }}

// canonRawHash hashes b as raw bytes, for payloads that are not canonicalized.
func canonRawHash(b []byte) Hash {
	return canonSum(canonPrefixRaw, b)
}

// canonSum returns the first 16 bytes of SHA-256 over prefix followed by b.
// Small inputs are hashed from a buffer on the stack in one call.
func canonSum(prefix string, b []byte) Hash {
	if len(b) <= canonFlatBytes {
		var buf [16 + canonFlatBytes]byte
		sum := sha256.Sum256(append(append(buf[:0], prefix...), b...))
		return Hash(sum[:16])
	}
	h := sha256.New()
	h.Write([]byte(prefix))
	h.Write(b)
	var sum [sha256.Size]byte
	return Hash(h.Sum(sum[:0]))
}

// canonFlatInfo describes the members of a flat object, in document order,
// ignored ones included, as canonFlat found them: the key content (no
// escapes) and the value as written, quotes included for strings.
type canonFlatInfo struct {
	n       int
	members [canonFlatMembers]canonFlatMember
}

type canonFlatMember struct {
	klo, khi int32
	vlo, vhi int32
}

// appendNames is appendKeyNames of the object the info describes.
func (info *canonFlatInfo) appendNames(dst, args []byte) []byte {
	// Keys of flat objects are distinct and unescaped: when they are also
	// short, printable and few, the names are the keys in sorted order.
	var order [canonNamesMax]uint8
	plain := info.n <= canonNamesMax
	for k := 0; plain && k < info.n; k++ {
		m := &info.members[k]
		key := args[m.klo:m.khi]
		if len(key) > canonNameMax {
			plain = false
			break
		}
		for _, c := range key {
			if c < 0x20 || c >= 0x7f || c == ',' {
				plain = false
				break
			}
		}
		order[k] = uint8(k)
		for b := k; b > 0; b-- {
			x, y := &info.members[order[b-1]], &info.members[order[b]]
			c := bytes.Compare(args[x.klo:x.khi], args[y.klo:y.khi])
			if c == 0 {
				plain = false // ignored keys may repeat: the set de-duplicates
			}
			if c <= 0 {
				break
			}
			order[b-1], order[b] = order[b], order[b-1]
		}
	}
	if plain {
		for k, o := range order[:info.n] {
			if k > 0 {
				dst = append(dst, ',')
			}
			m := &info.members[o]
			dst = append(dst, args[m.klo:m.khi]...)
		}
		return dst
	}
	var set canonNameSet
	for _, m := range info.members[:info.n] {
		set.add(args[m.klo:m.khi])
	}
	return set.appendTo(dst)
}

// canonFlatHash is hashArgs of a small flat object (see canonFlat),
// canonicalized and hashed on the stack; it reports false for any other
// payload. If info is not nil, it describes the object on success.
func canonFlatHash(args []byte, ignore []string, info *canonFlatInfo) (Hash, bool) {
	lo, hi := canonTrim(args)
	if hi-lo > canonFlatBytes || lo == hi || args[lo] != '{' {
		return Hash{}, false
	}
	var (
		buf [16 + canonFlatBytes]byte
		fs  canonFlatScratch
	)
	b, end, ok := canonFlat(append(buf[:0], canonPrefixJSON...), args[lo:hi], 0, canonFlatBytes, ignore, info, &fs)
	if !ok || end != hi-lo {
		return Hash{}, false
	}
	if info != nil && lo > 0 {
		for k := range info.members[:info.n] {
			m := &info.members[k]
			m.klo, m.khi, m.vlo, m.vhi = m.klo+int32(lo), m.khi+int32(lo), m.vlo+int32(lo), m.vhi+int32(lo)
		}
	}
	sum := sha256.Sum256(b)
	return Hash(sum[:16]), true
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

// Bounds of the fast path for small flat objects (canonFlat).
const (
	canonFlatMembers = 16  // members
	canonFlatBytes   = 480 // bytes of the payload and of its canonical form
)

// canonFlat appends to dst the canonical form of the JSON object at
// in[start], which must have at most canonFlatMembers members whose keys
// have no escapes and are distinct, and whose values are strings, numbers,
// true, false or null; end is the index after the object. It reports false,
// having appended nothing of use, for any other object, and, if limit is
// not negative, when the form is longer than limit: parse handles those.
// It produces exactly the bytes parse does, without its member and segment
// lists. Top-level members whose key is in ignore are dropped. fs is
// scratch space, so that callers in a loop do not clear it every time.
func canonFlat(dst, in []byte, start, limit int, ignore []string, info *canonFlatInfo, fs *canonFlatScratch) (out []byte, end int, ok bool) {
	n, nv := 0, 0
	mems, vals := &fs.mems, &fs.vals
	if start >= len(in) || in[start] != '{' {
		return dst, 0, false
	}
	i := canonSkipWS(in, start+1)
	if i < len(in) && in[i] == '}' {
		return append(dst, "{}"...), i + 1, limit < 0 || limit >= 2
	}
	size := 2
	for {
		if i >= len(in) || in[i] != '"' {
			return dst, 0, false
		}
		ke, canon, esc := canonScanString(in, i)
		if ke < 0 || !canon || esc {
			return dst, 0, false
		}
		klo, khi := i+1, ke-1
		if i = canonSkipWS(in, ke); i >= len(in) || in[i] != ':' {
			return dst, 0, false
		}
		if i = canonSkipWS(in, i+1); i >= len(in) {
			return dst, 0, false
		}
		// The value is kept as written (in[vlo:vhi]) unless it is a number
		// to rewrite (vals[vlo:vhi]).
		vstart, vlo, vhi, rewritten := i, i, 0, false
		switch c := in[i]; {
		case c == '"':
			e, canon, _ := canonScanString(in, i)
			if e < 0 || !canon {
				return dst, 0, false
			}
			vhi = e
		case c == 't' || c == 'f' || c == 'n':
			if vhi = canonScanLiteral(in, i); vhi < 0 {
				return dst, 0, false
			}
		case c == '-' || canonIsDigit(c):
			e, simple := canonScanNumber(in, i)
			if e < 0 {
				return dst, 0, false
			}
			vhi, i = e, e
			if num := in[vstart:e]; !simple || !canonNumberIsCanonical(num, true) {
				// canonAppendNumber's form of an accepted number is at most
				// a few bytes longer than the number (a sign, a point, an
				// exponent): leave it room, then check.
				if nv+len(num)+32 > len(vals) {
					return dst, 0, false
				}
				form := canonAppendNumber(vals[nv:nv], num)
				if len(form) > len(vals)-nv {
					return dst, 0, false
				}
				vlo, vhi, rewritten = nv, nv+len(form), true
				nv += len(form)
			}
		default:
			return dst, 0, false // nested, or invalid
		}
		if !rewritten {
			i = vhi
		}
		if info != nil {
			if info.n == len(info.members) {
				return dst, 0, false
			}
			info.members[info.n] = canonFlatMember{int32(klo), int32(khi), int32(vstart), int32(i)}
			info.n++
		}
		key := in[klo:khi]
		drop := false
		for _, ig := range ignore {
			if string(key) == ig {
				drop = true
				break
			}
		}
		if !drop {
			if n == len(mems) {
				return dst, 0, false
			}
			// Field by field: a composite literal is built on the stack
			// and copied, which stalls on the store just made.
			m := &mems[n]
			m.klo, m.khi, m.vlo, m.vhi, m.rewritten = int32(klo), int32(khi), int32(vlo), int32(vhi), rewritten
			m.k0 = -1
			if klo < khi {
				m.k0 = int16(in[klo])
			}
			n++
			size += len(key) + 4 + vhi - vlo // quotes, colon, comma
		}
		if i = canonSkipWS(in, i); i >= len(in) {
			return dst, 0, false
		}
		switch in[i] {
		case ',':
			i = canonSkipWS(in, i+1)
			continue
		case '}':
			end = i + 1
		default:
			return dst, 0, false
		}
		break
	}
	if limit >= 0 && size-1 > limit {
		return dst, 0, false
	}
	// Insertion sort of the members' order by key; equal keys go to parse,
	// which orders them by value.
	var order [canonFlatMembers]uint8
	for a := 0; a < n; a++ {
		order[a] = uint8(a)
		for b := a; b > 0; b-- {
			x, y := &mems[order[b-1]], &mems[order[b]]
			c := int(x.k0) - int(y.k0) // the first key bytes decide most pairs
			if c == 0 {
				c = bytes.Compare(in[x.klo:x.khi], in[y.klo:y.khi])
			}
			if c == 0 {
				return dst, 0, false
			}
			if c < 0 {
				break
			}
			order[b-1], order[b] = order[b], order[b-1]
		}
	}
	dst = append(dst, '{')
	for k, o := range order[:n] {
		m := &mems[o]
		if k > 0 {
			dst = append(dst, ',')
		}
		if !m.rewritten && m.vlo == m.khi+2 && in[m.khi+1] == ':' {
			// Written compactly: `"key":value` is one piece of the input.
			dst = append(dst, in[m.klo-1:m.vhi]...)
			continue
		}
		dst = append(dst, '"')
		dst = append(dst, in[m.klo:m.khi]...)
		dst = append(dst, '"', ':')
		if m.rewritten {
			dst = append(dst, vals[m.vlo:m.vhi]...)
		} else {
			dst = append(dst, in[m.vlo:m.vhi]...)
		}
	}
	return append(dst, '}'), end, true
}

// canonFlatScratch is the scratch space of canonFlat.
type canonFlatScratch struct {
	mems [canonFlatMembers]canonFlatSlot
	vals [canonFlatBytes]byte // rewritten numbers
}

// canonFlatSlot is a member of an object being canonicalized by canonFlat.
type canonFlatSlot struct {
	klo, khi  int32 // key content in the input
	vlo, vhi  int32 // the value in the input, or in vals if rewritten
	k0        int16 // the first key byte, -1 for the empty key
	rewritten bool
}

// canonSeg is a segment of the canonical form, which is built as a linked
// list of segments. A segment refers either to bytes of the input (addresses
// below len(in)) or to bytes written to out (address base+k refers to
// out[k]; base is len(in)+1, so segments of the two kinds are never
// adjacent). Reordering object members relinks segments instead of moving
// bytes, so every byte is copied at most twice whatever the nesting.
type canonSeg struct{ lo, hi, next int32 }

// canonList is a list of segments, from head to tail inclusive; -1 if empty.
type canonList struct{ head, tail int32 }

// canonMember is one member of an object being canonicalized.
type canonMember struct {
	pre      uint64    // first 8 decoded key bytes, big-endian, zero-padded
	klo, khi int32     // canonical key, quotes included
	esc      bool      // the canonical key contains an escape
	drop     bool      // the key is ignored
	val      canonList // canonical `"key":value`
}

// canonFrame is an open array or object.
type canonFrame struct {
	obj    bool
	sorted bool      // members so far are in strictly increasing key order
	mbase  int32     // index of the first member in canonScratch.mems
	sbase  int32     // number of segments when the object opened
	saved  canonList // the enclosing list, ending with '{'
}

// canonScratch is the pooled state of one hashArgs call.
type canonScratch struct {
	in    []byte
	base  int32
	null  bool // the payload is empty or null
	cur   canonList
	out   []byte
	segs  []canonSeg
	mems  []canonMember
	stack []canonFrame
	asm   []byte
	keys  []canonKey
	flat  canonFlatScratch
}

// canonKey is the previous key of an open container, for isCanonical.
type canonKey struct {
	lo, hi int32 // key content without quotes; lo < 0 if none yet
	esc    bool
	obj    bool
}

// release clears c and returns it to the pool unless it grew large.
func (c *canonScratch) release() {
	c.in = nil
	size := cap(c.out) + cap(c.asm) + 12*cap(c.segs) + 40*cap(c.mems) + 40*cap(c.stack) + 12*cap(c.keys)
	if size > canonKeepSize {
		return
	}
	canonPool.Put(c)
}

// hash canonicalizes in and hashes the result. It reports false if in is not
// valid JSON or exceeds the depth bound.
func (c *canonScratch) hash(in []byte, ignore []string) (Hash, bool) {
	c.reset(in)
	lo, hi := canonTrim(in)
	if lo < hi && c.isCanonical(in[lo:hi], ignore) {
		// Fast path: already canonical, hash in place.
		return canonSum(canonPrefixJSON, in[lo:hi]), true
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
			if b := c.seg(i); len(b) >= canonDirectMin {
				if len(asm) > 0 {
					h.Write(asm)
					asm = asm[:0]
				}
				h.Write(b)
			} else if asm = append(asm, b...); len(asm) >= canonGatherMax {
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
func (c *canonScratch) reset(in []byte) {
	c.in = in
	c.base = int32(len(in) + 1)
	c.null = false
	c.cur = canonList{-1, -1}
	c.out = c.out[:0]
	c.segs = c.segs[:0]
	c.mems = c.mems[:0]
	c.stack = c.stack[:0]
}

// at returns the bytes at addresses [lo, hi).
func (c *canonScratch) at(lo, hi int32) []byte {
	if lo < c.base {
		return c.in[lo:hi]
	}
	return c.out[lo-c.base : hi-c.base]
}

// seg returns the bytes of segment i.
func (c *canonScratch) seg(i int32) []byte {
	s := c.segs[i]
	return c.at(s.lo, s.hi)
}

// parse scans c.in, writing its canonical form to c.cur.
func (c *canonScratch) parse(ignore []string) bool {
	in := c.in
	n := len(in)
	i := canonSkipWS(in, 0)
	if i == n {
		c.null = true
		return true
	}
value:
	for {
		i = canonSkipWS(in, i)
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
			c.stack = append(c.stack, canonFrame{
				obj: true, sorted: true, saved: c.cur,
				mbase: int32(len(c.mems)), sbase: int32(len(c.segs)),
			})
			if i = canonSkipWS(in, i+1); i < n && in[i] == '}' {
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
			c.stack = append(c.stack, canonFrame{})
			if i = canonSkipWS(in, i+1); i < n && in[i] == ']' {
				i++
				c.emitByte(']')
				c.stack = c.stack[:len(c.stack)-1]
				break
			}
			continue value
		case '"':
			e, canon, _ := canonScanString(in, i)
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
			e, simple := canonScanNumber(in, i)
			if e < 0 {
				return false
			}
			c.emitNumber(i, e, simple)
			i = e
		}
		// After a value: close containers until one expects more.
		for {
			i = canonSkipWS(in, i)
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
func (c *canonScratch) isCanonical(in []byte, ignore []string) bool {
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
			c.keys = append(c.keys, canonKey{lo: -1, obj: obj})
			if i++; i < n && (obj && in[i] == '}' || !obj && in[i] == ']') {
				i++
				c.keys = c.keys[:len(c.keys)-1]
				break
			}
			if obj {
				if i = canonStrictKey(in, i, c.keys, ignore); i < 0 {
					return false
				}
			}
			continue value
		case '"':
			e, canon, _ := canonScanString(in, i)
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
			e, simple := canonScanNumber(in, i)
			if e < 0 || !canonNumberIsCanonical(in[i:e], simple) {
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
					if i = canonStrictKey(in, i, c.keys, ignore); i < 0 {
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

// canonStrictKey checks a canonical key and its colon at in[i:] for
// isCanonical: it must be greater than the previous key of the innermost
// object (the last of keys), whose entry it updates, and not ignored at the
// top level. It returns the index after the colon, or -1.
func canonStrictKey(in []byte, i int, keys []canonKey, ignore []string) int {
	if i >= len(in) || in[i] != '"' {
		return -1
	}
	e, canon, esc := canonScanString(in, i)
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

// key scans an object key and its colon at in[i:], starting a new member. It
// returns the index of the member's value, or -1.
func (c *canonScratch) key(i int, ignore []string) int {
	in := c.in
	i = canonSkipWS(in, i)
	if i >= len(in) || in[i] != '"' {
		return -1
	}
	e, canon, esc := canonScanString(in, i)
	if e < 0 {
		return -1
	}
	c.cur = canonList{-1, -1}
	c.mems = append(c.mems, canonMember{})
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
	i = canonSkipWS(in, e)
	if i >= len(in) || in[i] != ':' {
		return -1
	}
	c.emitByte(':')
	return i + 1
}

// endMember completes the last member of the innermost object.
func (c *canonScratch) endMember() {
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
func (c *canonScratch) closeObject() {
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
		slices.SortFunc(ms, func(a, b canonMember) int { return c.cmpMembers(&a, &b) })
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
func (c *canonScratch) cmpKeys(a, b *canonMember) int {
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
func (c *canonScratch) cmpMembers(a, b *canonMember) int {
	if r := c.cmpKeys(a, b); r != 0 {
		return r
	}
	return c.cmpLists(a.val, b.val)
}

// cmpLists compares the bytes of two non-empty lists.
func (c *canonScratch) cmpLists(a, b canonList) int {
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
func (c *canonScratch) newSeg(lo, hi int32) {
	i := int32(len(c.segs))
	c.segs = append(c.segs, canonSeg{lo, hi, -1})
	if c.cur.tail >= 0 {
		c.segs[c.cur.tail].next = i
	} else {
		c.cur.head = i
	}
	c.cur.tail = i
}

// appendList appends l to c.cur, merging adjacent segments.
func (c *canonScratch) appendList(l canonList) {
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
func (c *canonScratch) emitIn(lo, hi int) int32 {
	if t := c.cur.tail; t >= 0 {
		if s := &c.segs[t]; int(s.hi) == lo {
			s.hi = int32(hi)
			return int32(lo)
		}
	}
	return c.emitInSlow(lo, hi)
}

// emitInSlow is emitIn when in[lo:hi] does not extend the last segment.
func (c *canonScratch) emitInSlow(lo, hi int) int32 {
	if c.cur.tail >= 0 && hi-lo <= canonCopyMax {
		return c.emitOut(c.in[lo:hi])
	}
	c.newSeg(int32(lo), int32(hi))
	return int32(lo)
}

// emitOut appends b to c.cur through c.out and returns its address.
func (c *canonScratch) emitOut(b []byte) int32 {
	a := c.base + int32(len(c.out))
	c.out = append(c.out, b...)
	c.extendOut(a, len(b))
	return a
}

// extendOut appends to c.cur the n bytes just written to c.out at address a.
func (c *canonScratch) extendOut(a int32, n int) {
	if t := c.cur.tail; t >= 0 && c.segs[t].hi == a {
		c.segs[t].hi += int32(n)
		return
	}
	c.newSeg(a, a+int32(n))
}

// emitByte appends b to c.cur, extending an input segment when the input
// continues with b.
func (c *canonScratch) emitByte(b byte) {
	if t := c.cur.tail; t >= 0 {
		if s := &c.segs[t]; int(s.hi) < len(c.in) && c.in[s.hi] == b {
			s.hi++
			return
		}
	}
	c.emitByteOut(b)
}

// emitByteOut appends b to c.cur through c.out.
func (c *canonScratch) emitByteOut(b byte) {
	a := c.base + int32(len(c.out))
	c.out = append(c.out, b)
	c.extendOut(a, 1)
}

// emitString appends the canonical encoding of the JSON string content raw
// (validated, without quotes). It returns the address range of the encoding
// and whether it contains an escape. The encoding is never longer than raw
// plus its quotes: every escape decodes to at most its own length.
func (c *canonScratch) emitString(raw []byte) (lo, hi int32, esc bool) {
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
			w += len(canonAppendByte(out[w:w], byte(r)))
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
func (c *canonScratch) emitNumber(lo, hi int, simple bool) {
	num := c.in[lo:hi]
	if simple && canonNumberIsCanonical(num, true) {
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

// canonNextByte decodes the byte of canonical string content b at j and
// returns it and the index after it.
func canonNextByte(b []byte, j int) (byte, int) {
	if b[j] != '\\' {
		return b[j], j + 1
	}
	if b[j+1] == 'u' {
		return byte(canonHex4(b[j+2:])), j + 6
	}
	return canonSimpleEscape(b[j+1]), j + 2
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

// canonSkipWS returns the index of the first non-whitespace byte at or after i.
func canonSkipWS(in []byte, i int) int {
	if i < len(in) && in[i] > ' ' {
		return i
	}
	return canonSkipWSSlow(in, i)
}

// canonSkipWSSlow is canonSkipWS past actual whitespace; it skips runs of
// spaces, as in indentation, eight at a time.
func canonSkipWSSlow(in []byte, i int) int {
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
		for i+8 <= len(in) && binary.LittleEndian.Uint64(in[i:]) == canonLSB*' ' {
			i += 8
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

// SWAR constants for scanning eight string bytes at a time.
const (
	canonLSB = 0x0101010101010101
	canonMSB = 0x8080808080808080
)

// canonScanString validates the JSON string starting with the quote at in[i]
// and returns the index after its closing quote, or -1. canon reports that
// the string is already in canonical encoding (its only escapes are \" \\
// \b \f \n \r \t and lower-case \u00XX for other control characters); esc
// reports that it contains an escape.
func canonScanString(in []byte, i int) (end int, canon, esc bool) {
	canon = true
	j := i + 1
	for {
		// Skip to the next quote, backslash or control byte, eight
		// bytes at a time. The lowest flagged byte is exact.
		for j+8 <= len(in) {
			w := binary.LittleEndian.Uint64(in[j:])
			q := w ^ (canonLSB * '"')
			b := w ^ (canonLSB * '\\')
			if m := ((q-canonLSB)&^q | (b-canonLSB)&^b | (w-canonLSB*0x20)&^w) & canonMSB; m != 0 {
				j += bits.TrailingZeros64(m) / 8
				break
			}
			j += 8
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

// canonSkipValue validates the JSON value at in[i] (after optional
// whitespace) and returns the index after it, or -1 if it is invalid or
// nested deeper than canonMaxDepth.
func canonSkipValue(in []byte, i int) int {
	var objs [canonMaxDepth / 64]uint64 // bit d set: level d is an object
	depth := 0
	n := len(in)
value:
	for {
		i = canonSkipWS(in, i)
		if i >= n {
			return -1
		}
		switch in[i] {
		case '{', '[':
			if depth == canonMaxDepth {
				return -1
			}
			obj := in[i] == '{'
			closer := byte(']')
			if obj {
				objs[depth/64] |= 1 << (depth % 64)
				closer = '}'
			} else {
				objs[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			if i = canonSkipWS(in, i+1); i < n && in[i] == closer {
				i++
				depth--
				break
			}
			if obj {
				if i = canonSkipKey(in, i); i < 0 {
					return -1
				}
			}
			continue value
		case '"':
			if i, _, _ = canonScanString(in, i); i < 0 {
				return -1
			}
		case 't', 'f', 'n':
			if i = canonScanLiteral(in, i); i < 0 {
				return -1
			}
		default:
			if i, _ = canonScanNumber(in, i); i < 0 {
				return -1
			}
		}
		for {
			if depth == 0 {
				return i
			}
			i = canonSkipWS(in, i)
			if i >= n {
				return -1
			}
			obj := objs[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			switch {
			case in[i] == ',':
				i++
				if obj {
					if i = canonSkipKey(in, i); i < 0 {
						return -1
					}
				}
				continue value
			case obj && in[i] == '}', !obj && in[i] == ']':
				i++
				depth--
			default:
				return -1
			}
		}
	}
}

// canonSkipKey validates an object key and its colon at in[i:] (after
// optional whitespace) and returns the index after the colon, or -1.
func canonSkipKey(in []byte, i int) int {
	if i = canonSkipWS(in, i); i >= len(in) || in[i] != '"' {
		return -1
	}
	if i, _, _ = canonScanString(in, i); i < 0 {
		return -1
	}
	if i = canonSkipWS(in, i); i >= len(in) || in[i] != ':' {
		return -1
	}
	return i + 1
}

// canonTop iterates over the members of a top-level JSON object, validating
// the whole payload. After next returns false, bad reports whether the
// payload was not a valid JSON object.
type canonTop struct {
	in      []byte
	i       int
	started bool
	done    bool
	bad     bool
}

// canonTopOf starts iterating over the object in.
func canonTopOf(in []byte) canonTop {
	i := canonSkipWS(in, 0)
	if i >= len(in) || in[i] != '{' {
		return canonTop{done: true, bad: true}
	}
	return canonTop{in: in, i: i + 1}
}

// next returns the next member: the key's raw content (between the quotes,
// escapes not decoded) and the value's span in.
func (t *canonTop) next() (key []byte, vlo, vhi int, ok bool) {
	if t.done {
		return nil, 0, 0, false
	}
	in := t.in
	i := canonSkipWS(in, t.i)
	if i < len(in) && in[i] == '}' {
		t.done = true
		t.bad = canonSkipWS(in, i+1) != len(in)
		return nil, 0, 0, false
	}
	if t.started {
		if i >= len(in) || in[i] != ',' {
			t.done, t.bad = true, true
			return nil, 0, 0, false
		}
		i = canonSkipWS(in, i+1)
	}
	t.started = true
	if i >= len(in) || in[i] != '"' {
		t.done, t.bad = true, true
		return nil, 0, 0, false
	}
	ke, _, _ := canonScanString(in, i)
	if ke < 0 {
		t.done, t.bad = true, true
		return nil, 0, 0, false
	}
	key = in[i+1 : ke-1]
	if i = canonSkipWS(in, ke); i >= len(in) || in[i] != ':' {
		t.done, t.bad = true, true
		return nil, 0, 0, false
	}
	vlo = canonSkipWS(in, i+1)
	if vhi = canonSkipValue(in, vlo); vhi < 0 {
		t.done, t.bad = true, true
		return nil, 0, 0, false
	}
	t.i = vhi
	return key, vlo, vhi, true
}

// canonRawPiece decodes the next piece of the validated raw JSON string
// content raw at j: a run of unescaped bytes, or the UTF-8 bytes of one
// escape (lone surrogates become U+FFFD) written to tmp. It returns the piece
// and the index after it.
func canonRawPiece(raw []byte, j int, tmp *[utf8.UTFMax]byte) ([]byte, int) {
	if raw[j] != '\\' {
		k := bytes.IndexByte(raw[j:], '\\')
		if k < 0 {
			k = len(raw) - j
		}
		return raw[j : j+k], j + k
	}
	r, j := canonDecodeEscape(raw, j)
	return utf8.AppendRune(tmp[:0], r), j
}

// canonRawEqual reports whether the raw JSON string content raw decodes to s.
func canonRawEqual(raw []byte, s string) bool {
	var tmp [utf8.UTFMax]byte
	for j := 0; j < len(raw); {
		var p []byte
		p, j = canonRawPiece(raw, j, &tmp)
		if len(p) > len(s) || string(p) != s[:len(p)] {
			return false
		}
		s = s[len(p):]
	}
	return s == ""
}

// canonRawString returns the decoded raw JSON string content raw.
func canonRawString(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var b strings.Builder
	b.Grow(len(raw))
	var tmp [utf8.UTFMax]byte
	for j := 0; j < len(raw); {
		var p []byte
		p, j = canonRawPiece(raw, j, &tmp)
		b.Write(p)
	}
	return b.String()
}

// canonRawPrefix decodes at most len(dst) bytes of the raw JSON string
// content raw into dst and returns how many it wrote.
func canonRawPrefix(dst []byte, raw []byte) int {
	var tmp [utf8.UTFMax]byte
	n := 0
	for j := 0; j < len(raw) && n < len(dst); {
		var p []byte
		p, j = canonRawPiece(raw, j, &tmp)
		n += copy(dst[n:], p)
	}
	return n
}

// topLevelString returns the decoded value of the first key, in the order of
// keys, whose value in the top-level JSON object args is a string. As with
// encoding/json, the last of duplicate keys counts. It returns ("", false)
// if args is not a valid JSON object (nesting deeper than canonMaxDepth
// included), has none of the keys, or their values are not strings. Nested
// values are skipped without decoding; only the result is allocated.
func topLevelString(args []byte, keys []string) (string, bool) {
	for _, k := range keys {
		var val []byte
		t := canonTopOf(args)
		for {
			key, vlo, vhi, ok := t.next()
			if !ok {
				break
			}
			if canonRawEqual(key, k) {
				val = args[vlo:vhi]
			}
		}
		if t.bad {
			return "", false
		}
		if len(val) > 0 && val[0] == '"' {
			return canonRawString(val[1 : len(val)-1]), true
		}
	}
	return "", false
}

// argURL returns the lower-cased host (port kept, user information dropped)
// and the path ("/" if empty) of the first top-level string value, in
// document order, of the JSON object args that is an absolute http or https
// URL with a host; query and fragment are ignored. ok is false if there is
// none or args is not a valid JSON object.
func argURL(args []byte) (host, path string, ok bool) {
	t := canonTopOf(args)
	for {
		_, vlo, vhi, more := t.next()
		if !more {
			break
		}
		if ok || args[vlo] != '"' {
			continue
		}
		raw := args[vlo+1 : vhi-1]
		var pre [8]byte
		p := pre[:canonRawPrefix(pre[:], raw)]
		for k, c := range p {
			p[k] = maskLower(c)
		}
		if !bytes.HasPrefix(p, []byte("http://")) && !bytes.HasPrefix(p, []byte("https://")) {
			continue
		}
		u, err := url.Parse(canonRawString(raw))
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		host, path, ok = strings.ToLower(u.Host), u.Path, true
		if path == "" {
			path = "/"
		}
	}
	if t.bad || !ok {
		return "", "", false
	}
	return host, path, true
}

// Limits of appendKeyNames.
const (
	canonNameMax  = 32 // bytes kept of each key
	canonNamesMax = 8  // keys listed
)

// appendKeyNames appends to dst the sorted, de-duplicated top-level key names
// of the JSON object args, comma-separated (for example "command,timeout"),
// for a redacted description of a call: names only, never values. Each name
// is the decoded key cut to 32 bytes, with bytes that are not printable
// ASCII, and commas, replaced by '?'; names are de-duplicated and sorted after
// that. At most 8 names are listed, followed by ",…" if there are more. If
// args is not a valid JSON object or has no keys, dst is returned unchanged.
// It allocates only to grow dst.
func appendKeyNames(dst, args []byte) []byte {
	var set canonNameSet
	t := canonTopOf(args)
	for {
		key, _, _, ok := t.next()
		if !ok {
			break
		}
		set.add(key)
	}
	if t.bad {
		return dst
	}
	return set.appendTo(dst)
}

// canonNameSet collects key names for appendKeyNames: the sorted,
// de-duplicated smallest canonNamesMax+1 of them.
type canonNameSet struct {
	names [canonNamesMax + 1][canonNameMax]byte
	lens  [canonNamesMax + 1]int
	count int
}

// add adds the name of the raw (possibly escaped) key content.
func (s *canonNameSet) add(key []byte) {
	var name [canonNameMax]byte
	n := canonRawPrefix(name[:], key)
	for i, c := range name[:n] {
		if c < 0x20 || c >= 0x7f || c == ',' {
			name[i] = '?'
		}
	}
	// Insert into the sorted set of the smallest names.
	pos := 0
	for pos < s.count && bytes.Compare(s.names[pos][:s.lens[pos]], name[:n]) < 0 {
		pos++
	}
	if pos < s.count && bytes.Equal(s.names[pos][:s.lens[pos]], name[:n]) || pos == len(s.names) {
		return
	}
	if s.count < len(s.names) {
		s.count++
	}
	copy(s.names[pos+1:s.count], s.names[pos:s.count-1])
	copy(s.lens[pos+1:s.count], s.lens[pos:s.count-1])
	s.names[pos], s.lens[pos] = name, n
}

// appendTo appends the names, comma-separated, with ",…" if there are more
// than canonNamesMax.
func (s *canonNameSet) appendTo(dst []byte) []byte {
	for i := range min(s.count, canonNamesMax) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, s.names[i][:s.lens[i]]...)
	}
	if s.count > canonNamesMax {
		dst = append(dst, ",…"...)
	}
	return dst
}
