package canon

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The SHA-256 sums the hook keeps hash exactly the text the Tracker's
// digests hash, in one piece or across chunks.
func TestSHASums(t *testing.T) {
	long := strings.Repeat("cp: cannot stat '/testbed/dir1/*foobar/*': No such file or directory at 2024-05-20T10:00:00Z ", 200)
	for _, s := range []string{"", "ok", "Error: open /tmp/a.txt (line 12)", "took 5 seconds, id 0123456789abcdef0123", long} {
		assert.Equal(t, sha256.Sum256([]byte(maskError(s))), FailureSHA(s), s)
		assert.Equal(t, sha256.Sum256([]byte(maskNoise(s))), ResultSHA(s), s)
	}
	args := []byte(`{"command":"grep -n 'x' ./a.py","n":12}`)
	var c Args
	c.Scan(args)
	assert.Equal(t, c.Shape(), ShapeOf(args))
	assert.Equal(t, ShapeOf([]byte(`{"command":"grep -n 'y' ./b.py","n":3}`)), ShapeOf(args))
}
