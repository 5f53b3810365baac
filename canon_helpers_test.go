package toolguard

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/toolguard/toolguard/internal/canon"
)

// The digests as the Tracker takes them (tracker.go), for the tests.
func digestResult(s string) Hash { return Hash(canon.DigestResult(s)) }
func digestError(s string) Hash  { return Hash(canon.DigestError(s)) }

// The canonicalizer's bounds and domain prefixes (internal/canon), as the
// tests of large arguments build and check them.
const (
	canonMaxDepth   = 512
	canonMaxBytes   = 64 << 20
	v1MaxBytes      = 16 << 20
	canonPrefixJSON = "toolguard:j1\x00"
	canonPrefixRaw  = "toolguard:r1\x00"
)

// canonTestSum is the first 16 bytes of SHA-256 over prefix and b.
func canonTestSum(prefix, b string) Hash {
	sum := sha256.Sum256([]byte(prefix + b))
	return Hash(sum[:16])
}

// v1RawHash is how a payload that is not canonicalized hashes.
func v1RawHash(b []byte) Hash { return canonTestSum(canonPrefixRaw, string(b)) }

// canonBenchDoc returns a compact JSON document of about size bytes: an
// array of objects with unsorted keys (internal/canon's benchmark document).
func canonBenchDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"records":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"record %d","id":%d,"score":%d.25,"tags":["alpha","beta","gamma"],`+
			`"path":"/var/data/%d/file.txt","meta":{"owner":"user%d","active":true,"ratio":0.5,"note":null},`+
			`"text":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."}`, i, i, i, i, i)
	}
	b.WriteString(`],"count":1}`)
	return b.Bytes()
}

// hashArgs returns the hash a Tracker takes of a JSON tool-call argument
// payload, with the top-level members whose key is in ignore dropped
// (docs/concepts.md, "How arguments are hashed").
func hashArgs(args []byte, ignore []string) Hash {
	s := getScratch()
	s.scan.Scan(args)
	h := Hash(s.scan.Hash(ignore))
	s.release()
	return h
}
