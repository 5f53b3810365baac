package toolguard

import (
	"crypto/sha256"

	"github.com/toolguard/toolguard/internal/standin"
)

// The hook of cmd/toolguard keeps no raw arguments or results: it keeps
// stand-ins whose masking must be the rules' own (internal/standin).
func init() {
	standin.Register(standinShape, func(s string) [32]byte { return maskSHA(s, false) },
		func(s string) [32]byte { return maskSHA(s, true) })
}

// standinShape returns argScan.shape of args.
func standinShape(args []byte) string {
	var c argScan
	c.scan(args)
	return c.shape()
}

// maskSHA is maskDigest with SHA-256 in place of the per-process maphash:
// stable across processes, so a digest can be kept on disk.
func maskSHA(s string, err bool) [32]byte {
	m := maskState{s: s, err: err}
	h := sha256.New()
	var buf [maskChunk]byte
	for {
		h.Write(m.fill(buf[:0], len(buf)))
		if m.done {
			break
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
