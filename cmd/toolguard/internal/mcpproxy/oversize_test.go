package mcpproxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIDScanner(t *testing.T) {
	for _, tt := range []struct {
		in, id, method string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, `7`, "tools/call"},
		{`{"method":"tools/call","params":{"id":1,"a":[{"id":2}],"s":"\"id\":3"},"id":"x\"y"}`, `"x\"y"`, "tools/call"},
		{` { "id" : -1.5e3 , "result" : {"id": 9} } `, `-1.5e3`, ""},
		{`{"id":null,"method":"notifications/x"}`, ``, "notifications/x"},
		{`{"id":{"no":1}}`, ``, ""},
		{`[{"id":1}]`, ``, ""},
		{`{"id":1,"params":{`, ``, ""}, // cut short: no id
		{`{"id":"` + string(make([]byte, 300)) + `"}`, ``, ""},
	} {
		var s idScanner
		// Fed in pieces, as readLine does.
		for i := 0; i < len(tt.in); i += 5 {
			s.feed([]byte(tt.in[i:min(i+5, len(tt.in))]))
		}
		id, method := s.result()
		assert.Equal(t, tt.id, string(id), tt.in)
		assert.Equal(t, tt.method, method, tt.in)
	}
}
