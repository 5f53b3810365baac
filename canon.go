package toolguard

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/toolguard/toolguard/internal/canon"
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

// scratch is the state of one call being checked or recorded: the scan of
// its arguments and, under the Tracker's lock, the probe, the key's state
// and the outcome the rules read. It is pooled: handed to the rules
// through the detector interface, each would otherwise be allocated per
// call (4 allocations per allowed call; TestAllocsExactPath).
type scratch struct {
	scan  canon.Args
	p     probe
	ks    keyState
	out   outcome
	names []byte // the call's argument names or size (see inspect)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// release clears s and returns it to the pool unless its scan keeps more
// than 1 MiB of scratch space.
func (s *scratch) release() {
	s.p, s.out = probe{}, outcome{}
	if s.scan.Clear() <= 1<<20 {
		scratchPool.Put(s)
	}
}
