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
	canonKeepSize = 1 << 20 // scratch larger than this in total is not pooled
	canonNumMax   = 21      // integers with up to this many digits are written without exponent

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
// The canonical form is compact JSON with sorted keys, minimally escaped
// strings and canonical numbers. It is streamed into the hasher, never
// built whole (see canonScratch): parts of the payload already in
// canonical form are hashed in place. Scratch space is about a quarter of
// the payload for the arguments tools send, and at most about 7 times it
// for hostile ones (the values of duplicate keys are copied to be
// compared, at every level of nesting); time is O(n) plus sorting members,
// and duplicate keys nested d deep cost up to a factor of d more. Small
// payloads do not allocate.
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
// not negative, when the form is longer than limit: hashArgsGeneral
// handles those. It produces exactly the bytes canonScratch.form does. Top-level members whose key is in ignore are dropped. fs is
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
	// Insertion sort of the members' order by key; equal keys go to
	// hashArgsGeneral, which orders them by value.
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

// canonScratch is the pooled state of one hashArgs call. The canonical form
// is never held whole: index validates the payload and lists, for each
// object whose members are not written in canonical order, its members in
// key order; form then streams the canonical form into the hasher, taking
// the members of those objects in that order and everything else as it is
// written. Scratch space is 4 bytes per member of each open object while
// index runs, 12 bytes per listed object and 4 per listed member, and the
// canonical values of members with duplicate keys, which are ordered by
// comparing them.
type canonScratch struct {
	in    []byte
	objs  []canonObj  // the listed objects, by position once index is done
	keys  []int32     // their members' key positions, each object's in key order
	open  []int32     // key positions of the members of the open objects
	stack []canonOpen // the open arrays and objects

	// counting: index's first pass, which counts what the second stores.
	counting                     bool
	nOpen, maxOpen, nKeys, nObjs int

	h      hash.Hash
	sum    [sha256.Size]byte
	buf    []byte // bytes written but not hashed yet
	lo, hi int    // then in[lo:hi], written but not hashed yet
	num    []byte // the canonical form of a number
	mat    int    // > 0: write to vals instead, to order duplicate keys
	vals   []byte
}

// canonObj is an object whose members index listed: the position of its
// '{', and its members' key positions, keys[off:off+n].
type canonObj struct{ start, off, n int32 }

// canonOpen is an array or object that index has not closed yet.
type canonOpen struct {
	obj     bool
	reorder bool  // members are not in increasing key order, or are ignored
	start   int32 // position of the '{' or '['
	base    int32 // open[base:] are its members
	n       int32 // its members so far, ignored ones not counted
	prev    int32 // key position of its last member, -1 if none
}

// release clears c and returns it to the pool unless it grew large.
func (c *canonScratch) release() {
	c.in = nil
	size := cap(c.buf) + cap(c.num) + cap(c.vals) + 12*cap(c.objs) + 4*cap(c.keys) + 4*cap(c.open) + 20*cap(c.stack)
	if size > canonKeepSize {
		return
	}
	canonPool.Put(c)
}

// hash canonicalizes in and hashes the result. It reports false if in is not
// valid JSON or exceeds the depth bound.
func (c *canonScratch) hash(in []byte, ignore []string) (Hash, bool) {
	if !c.index(in, ignore) {
		return Hash{}, false
	}
	if c.h == nil {
		c.h = sha256.New()
	}
	c.h.Reset()
	c.buf = append(c.buf[:0], canonPrefixJSON...)
	c.lo, c.hi = 0, 0
	c.form()
	c.flush()
	c.h.Write(c.buf)
	return Hash(c.h.Sum(c.sum[:0])), true
}

// index validates the payload in and lists the objects to reorder: those
// whose members are not in strictly increasing key order (duplicate keys
// included) or, at the top level, have ignored keys. It reports false if in
// is not valid JSON or nests deeper than canonMaxDepth; white space only is
// valid.
func (c *canonScratch) index(in []byte, ignore []string) bool {
	// Two passes: the first counts what the second stores, which is then
	// allocated once at its size (append allocates up to five times it).
	c.in, c.counting = in, true
	c.nOpen, c.maxOpen, c.nKeys, c.nObjs = 0, 0, 0, 0
	if !c.scan(ignore) {
		return false
	}
	c.counting = false
	c.open, c.keys, c.objs = canonReserve(c.open, c.maxOpen), canonReserve(c.keys, c.nKeys), canonReserve(c.objs, c.nObjs)
	c.scan(ignore)
	slices.SortFunc(c.objs, func(a, b canonObj) int { return cmp.Compare(a.start, b.start) })
	return true
}

// scan is a pass of index over c.in.
func (c *canonScratch) scan(ignore []string) bool {
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
			}
			c.stack = append(c.stack, canonOpen{obj: obj, start: int32(i), base: int32(len(c.open)), prev: -1})
			if i = canonSkipWS(in, i+1); i < n && in[i] == closer {
				i++
				c.stack = c.stack[:len(c.stack)-1]
				break
			}
			if obj {
				if i = c.key(i, ignore); i < 0 {
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
				if i = c.key(i+1, ignore); i < 0 {
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
// space) for index. It returns the index after the colon, or -1.
func (c *canonScratch) key(i int, ignore []string) int {
	in := c.in
	if i = canonSkipWS(in, i); i >= len(in) || in[i] != '"' {
		return -1
	}
	e, _, _ := canonScanString(in, i)
	if e < 0 {
		return -1
	}
	f := &c.stack[len(c.stack)-1]
	if len(c.stack) == 1 && slices.ContainsFunc(ignore, func(s string) bool { return canonKeyIs(in, i, s) }) {
		f.reorder = true // dropped
	} else {
		if f.prev >= 0 && canonCmpKeys(in, int(f.prev), i) >= 0 {
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
	}
	if i = canonSkipWS(in, e); i >= len(in) || in[i] != ':' {
		return -1
	}
	return i + 1
}

// closeObject closes the innermost object for index, listing it if its
// members are to be reordered.
func (c *canonScratch) closeObject() {
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
func (c *canonScratch) form() {
	lo, hi := canonTrim(c.in)
	if lo == hi || string(c.in[lo:hi]) == "null" {
		c.small([]byte("{}")) // no arguments
		return
	}
	c.value(lo)
}

// value writes the canonical form of the value at in[i] and returns the
// index after it.
func (c *canonScratch) value(i int) int {
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
func (c *canonScratch) object(i int) int {
	in := c.in
	k, listed := slices.BinarySearchFunc(c.objs, int32(i), func(o canonObj, start int32) int { return cmp.Compare(o.start, start) })
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
	o := c.objs[k]
	ks := c.keys[o.off : o.off+o.n]
	end := i + 1 // of the last member's value in the payload
	for a := 0; a < len(ks); {
		b := a + 1
		for b < len(ks) && canonCmpKeys(in, int(ks[a]), int(ks[b])) == 0 {
			b++
		}
		if a > 0 {
			c.byte(',')
		}
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

// member writes the member whose key is at in[i], `"key":value`, and
// returns the index after its value.
func (c *canonScratch) member(i int) int {
	i = canonSkipWS(c.in, c.str(i))
	c.byte(':')
	return c.value(canonSkipWS(c.in, i+1))
}

// duplicates writes the members whose keys, at the positions ks, are equal,
// ordered by their canonical values, and returns the index after the value
// that ends last in the payload. The values are written to vals first, each
// after its length, to be compared; ks is overwritten with their offsets.
func (c *canonScratch) duplicates(ks []int32) int {
	in := c.in
	key, v0, end := int(ks[0]), len(c.vals), 0
	c.mat++
	for n, k := range ks {
		i, _, _ := canonScanString(in, int(k))
		i = canonSkipWS(in, canonSkipWS(in, i)+1)
		lo := len(c.vals)
		c.vals = append(canonGrow(c.vals, 4), 0, 0, 0, 0)
		end = max(end, c.value(i))
		binary.LittleEndian.PutUint32(c.vals[lo:], uint32(len(c.vals)-lo-4))
		ks[n] = int32(lo)
	}
	c.mat--
	val := func(lo int32) []byte {
		return c.vals[lo+4 : lo+4+int32(binary.LittleEndian.Uint32(c.vals[lo:]))]
	}
	slices.SortFunc(ks, func(a, b int32) int { return bytes.Compare(val(a), val(b)) })
	v1 := len(c.vals)
	for n, lo := range ks {
		if n > 0 {
			c.byte(',')
		}
		c.str(key)
		c.byte(':')
		c.write(val(lo))
	}
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
func (c *canonScratch) str(i int) int {
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
func (c *canonScratch) span(lo, hi int) {
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
func (c *canonScratch) byte(b byte) {
	if c.mat == 0 && c.hi < len(c.in) && c.in[c.hi] == b {
		c.hi++ // the payload goes on with b
		return
	}
	c.small([]byte{b})
}

// small writes b, a few bytes.
func (c *canonScratch) small(b []byte) {
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
func (c *canonScratch) write(b []byte) {
	if c.mat > 0 {
		c.vals = append(canonGrow(c.vals, len(b)), b...)
		return
	}
	c.flush()
	c.out(b)
}

// flush hashes in[lo:hi].
func (c *canonScratch) flush() {
	if c.lo < c.hi {
		b := c.in[c.lo:c.hi]
		c.lo = c.hi
		c.out(b)
	}
}

// out hashes b after buf: in place if it is long; else appended to buf,
// which is hashed when it is long, as each Write has a cost of its own.
func (c *canonScratch) out(b []byte) {
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

// canonRawString returns the decoded raw JSON string content raw, cut to
// at most max bytes.
func canonRawString(raw []byte, max int) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[:min(len(raw), max)])
	}
	var b strings.Builder
	b.Grow(min(len(raw), max)) // escapes decode to fewer bytes
	var tmp [utf8.UTFMax]byte
	for j := 0; j < len(raw) && b.Len() < max; {
		var p []byte
		p, j = canonRawPiece(raw, j, &tmp)
		b.Write(p[:min(len(p), max-b.Len())])
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

// topLevelString returns the decoded value, cut to at most max bytes, of the
// first key, in the order of keys, whose value in the top-level JSON object
// args is a string. As with
// encoding/json, the last of duplicate keys counts. It returns ("", false)
// if args is not a valid JSON object (nesting deeper than canonMaxDepth
// included), has none of the keys, or their values are not strings. Nested
// values are skipped without decoding; only the result is allocated.
func topLevelString(args []byte, keys []string, max int) (string, bool) {
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
			return canonRawString(val[1:len(val)-1], max), true
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
		u, err := url.Parse(canonRawString(raw, len(raw)))
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
