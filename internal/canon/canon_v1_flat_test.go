package canon

// The fast path of toolguard v0.1.0 for flat objects, which its
// canonicalizer (canon_v1_test.go, the oracle of Args) used for nested
// flat objects. The present scanner has one path; this copy stays with the
// oracle, unchanged.

import "bytes"

// canonFlatInfo describes the members of a flat object, in document order,
// ignored ones included, as canonFlat found them.
type canonFlatInfo struct {
	n       int
	members [canonFlatMembers]canonFlatMember
}

type canonFlatMember struct {
	klo, khi int32
	vlo, vhi int32
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
	i := SkipWS(in, start+1)
	if i < len(in) && in[i] == '}' {
		return append(dst, "{}"...), i + 1, limit < 0 || limit >= 2
	}
	size := 2
	for {
		if i >= len(in) || in[i] != '"' {
			return dst, 0, false
		}
		ke, canon, esc := v1ScanString(in, i)
		if ke < 0 || !canon || esc {
			return dst, 0, false
		}
		klo, khi := i+1, ke-1
		if i = SkipWS(in, ke); i >= len(in) || in[i] != ':' {
			return dst, 0, false
		}
		if i = SkipWS(in, i+1); i >= len(in) {
			return dst, 0, false
		}
		// The value is kept as written (in[vlo:vhi]) unless it is a number
		// to rewrite (vals[vlo:vhi]).
		vstart, vlo, vhi, rewritten := i, i, 0, false
		switch c := in[i]; {
		case c == '"':
			e, canon, _ := v1ScanString(in, i)
			if e < 0 || !canon {
				return dst, 0, false
			}
			vhi = e
		case c == 't' || c == 'f' || c == 'n':
			if vhi = canonScanLiteral(in, i); vhi < 0 {
				return dst, 0, false
			}
		case c == '-' || canonIsDigit(c):
			e, simple := v1ScanNumber(in, i)
			if e < 0 {
				return dst, 0, false
			}
			vhi, i = e, e
			if num := in[vstart:e]; !simple || !v1NumberIsCanonical(num, true) {
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
		if i = SkipWS(in, i); i >= len(in) {
			return dst, 0, false
		}
		switch in[i] {
		case ',':
			i = SkipWS(in, i+1)
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
