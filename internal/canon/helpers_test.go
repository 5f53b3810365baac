package canon

import (
	"encoding/hex"
	"sync"
)

// Hash is the root package's argument hash, for these tests.
type Hash [16]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

var argsPool = sync.Pool{New: func() any { return new(Args) }}

// hashArgs is the root package's hashArgs: one scan and one hash, with
// the scan's scratch pooled.
func hashArgs(args []byte, ignore []string) Hash {
	c := argsPool.Get().(*Args)
	defer argsPool.Put(c)
	c.Scan(args)
	return Hash(c.Hash(ignore))
}
