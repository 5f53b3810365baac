package canon

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The readers of one scan, as the tests call them on a payload.

func topLevelString(args []byte, keys []string, max int) (string, bool) {
	s := argsPool.Get().(*Args)
	defer argsPool.Put(s)
	s.Scan(args)
	_, v, ok := s.StringArg(keys, max)
	return v, ok
}

func argURL(args []byte) (host, path string, ok bool) {
	s := argsPool.Get().(*Args)
	defer argsPool.Put(s)
	s.Scan(args)
	return s.URL()
}

func appendKeyNames(dst, args []byte) []byte {
	s := argsPool.Get().(*Args)
	defer argsPool.Put(s)
	s.Scan(args)
	return s.AppendNames(dst)
}

func argsShape(args []byte) string {
	s := argsPool.Get().(*Args)
	defer argsPool.Put(s)
	s.Scan(args)
	return s.Shape()
}

// argsShapeJSON is the shape as v0.2.0 and earlier wrote it, from
// encoding/json's decoding: the oracle of Args.shape.
func argsShapeJSON(args []byte) string {
	var v any
	if len(args) > InspectMax || json.Unmarshal(args, &v) != nil {
		return cutShape(maskError(string(args[:min(len(args), InspectMax)])))
	}
	var b strings.Builder
	writeShapeJSON(&b, v)
	return cutShape(maskError(b.String()))
}

func writeShapeJSON(b *strings.Builder, v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			b.WriteString(k)
			b.WriteString(": ")
			writeShapeJSON(b, v[k])
			b.WriteByte(' ')
		}
	case []any:
		for _, x := range v {
			writeShapeJSON(b, x)
			b.WriteByte(' ')
		}
	case string:
		b.WriteString(v)
	default:
		fmt.Fprint(b, v)
	}
}

func TestArgsShape(t *testing.T) {
	for _, in := range []string{
		``, `   `, `null`, `{}`, `[]`, `"x"`, `42`, `true`,
		`{"command":"grep -n 'x' ./a.py","timeout":30}`,
		`{"b":[1,2.5,{"y":null,"x":false}],"a":"A\u00e9\ud800z"}`,
		`{"a":1,"a":"second","b":1e300,"c":-0,"d":1e6,"e":0.000001,"f":123456789012345678901}`,
		`{"k":1e400}`, `{"a":`, `not json`, "{\"s\":\"\xff\xfe\"}",
		`{"nested":{"z":{"b":1,"a":2},"y":[[],{}]},"cmd":"npm run test -- --watch"}`,
		`[{"a":1},{"a":1,"a":2}]`,
	} {
		assert.Equal(t, argsShapeJSON([]byte(in)), argsShape([]byte(in)), "%q", in)
	}
	big := []byte(`{"a":"` + strings.Repeat("x", InspectMax) + `"}`)
	assert.Equal(t, argsShapeJSON(big), argsShape(big))
}
