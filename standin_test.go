package toolguard

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolguard/toolguard/internal/standin"
)

// The stand-in sums hash exactly the text the Tracker's digests hash, in
// one piece or across chunks.
func TestStandinSums(t *testing.T) {
	long := strings.Repeat("cp: cannot stat '/testbed/dir1/*foobar/*': No such file or directory at 2024-05-20T10:00:00Z ", 200)
	for _, s := range []string{"", "ok", "Error: open /tmp/a.txt (line 12)", "took 5 seconds, id 0123456789abcdef0123", long} {
		assert.Equal(t, sha256.Sum256([]byte(maskError(s))), standin.FailureSum(s), s)
		assert.Equal(t, sha256.Sum256([]byte(maskNoise(s))), standin.ResultSum(s), s)
	}
	args := []byte(`{"command":"grep -n 'x' ./a.py","n":12}`)
	var c argScan
	c.scan(args)
	assert.Equal(t, c.shape(), standin.Shape(args))
	assert.Equal(t, standin.Shape([]byte(`{"command":"grep -n 'y' ./b.py","n":3}`)), standin.Shape(args))
}
