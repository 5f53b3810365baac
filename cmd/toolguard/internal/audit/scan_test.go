package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// sameAsDecode checks that scanEpisodeLine, where it reads data, reads
// what decode reads, and that decode reads it too.
func sameAsDecode(t *testing.T, data []byte) (scanned bool) {
	t.Helper()
	var got episodeLine
	if !scanEpisodeLine(data, &got) {
		return false
	}
	var want episodeLine
	if err := decode(data, &want); err != nil {
		t.Fatalf("%q: scanned, but decode fails: %v", data, err)
	}
	if !reflect.DeepEqual(normalLine(got), normalLine(want)) {
		t.Fatalf("%q:\nscanned %#v\ndecoded %#v", data, normalLine(got), normalLine(want))
	}
	return true
}

// normalLine makes empty and nil raw values alike for the comparison.
func normalLine(l episodeLine) episodeLine {
	if len(l.Episode) == 0 {
		l.Episode = nil
	}
	if l.Calls != nil {
		calls := make([]episodeCall, len(*l.Calls))
		for i, c := range *l.Calls {
			if len(c.ID) == 0 {
				c.ID = nil
			}
			if len(c.Args) == 0 {
				c.Args = nil
			}
			calls[i] = c
		}
		l.Calls = &calls
	}
	return l
}

// TestScanEpisodeLineTraces: every record of the bundled traces is read by
// the scanner (the fast path is the one taken), as decode reads it.
func TestScanEpisodeLineTraces(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(tracesDir, "*.jsonl"))
	require.NotEmpty(t, files)
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for l := range bytes.Lines(data) {
			if l = bytes.TrimSpace(l); len(l) == 0 {
				continue
			}
			require.True(t, sameAsDecode(t, l), "%s: a record the scanner passes to decode: %.200s", f, l)
			n++
		}
	}
	t.Logf("%d records", n)
}

var scanSeeds = []string{
	`{"episode":"e","calls":[{"tool":"t","args":{"a":[1,2.5e3,-0,true,false,null,"x\u00e9"]},"result":"r\n","is_error":true,"turn":3,"user_turn":0,"id":7}]}`,
	`{"episode":12,"label":"failure","source":{"x":[{}]},"calls":[]}`,
	`{"episode":"e","calls":null}`,
	`{"episode":"e"}`,
	`{"Episode":"e","calls":[]}`,
	`{"episode":"e","calls":[{"Tool":"t"}]}`,
	`{"episode":"e","calls":[{"tool":"t","turn":1.0}]}`,
	`{"episode":"e","calls":[{"tool":"t","turn":01}]}`,
	`{"episode":"e","calls":[{"tool":"t","turn":12345678901234567890}]}`,
	`{"episode":"e","calls":[{"tool":"t","turn":-3,"user_turn":null,"id":null,"args":null,"result":null,"is_error":null}]}`,
	`{"episode":"e","calls":[{"tool":"t","tool":"u"}]}`,
	`{"episode":"e","calls":[{"tool":"t","result":"bad \x escape"}]}`,
	"{\"episode\":\"e\",\"calls\":[{\"tool\":\"t\",\"result\":\"ctl\x01\"}]}",
	"{\"episode\":\"e\",\"calls\":[{\"tool\":\"\xff\xfe\",\"args\":{\"q\":\"\xff\"}}]}",
	`{"episode":"e","calls":[{"tool":"t","result":"\ud83d\ude00 \ud83d"}]} `,
	`{"episode":"e","calls":[{"tool":"t"}]} x`,
	`{"episode":"e","calls":[{"tool":"t",}]}`,
	`{"episode":"e","calls":[{"tool":"t"]}`,
	` { "episode" : "e" , "calls" : [ { "tool" : "t" , "args" : { } } ] } `,
	`{"episode":"e","ſource":1,"calls":[]}`,
	`{"episode":"e","calls":[{"tool":"t","args":"a\\\"b"}]}`,
	`[]`,
}

// TestScanEpisodeLineCases: records the scanner reads are read as decode
// reads them; those it leaves (a key in another case, twice, a number that
// is not an integer, invalid JSON) fall to decode.
func TestScanEpisodeLineCases(t *testing.T) {
	scanned := 0
	for _, s := range scanSeeds {
		if sameAsDecode(t, []byte(s)) {
			scanned++
		}
	}
	require.Equal(t, 8, scanned)
	for _, s := range []string{`{"Episode":"e","calls":[]}`, `{"episode":"e","calls":[{"tool":"t","turn":1.0}]}`,
		`{"episode":"e","calls":[{"tool":"t","tool":"u"}]}`, `{"episode":"e","calls":[{"tool":"t"}]} x`} {
		var l episodeLine
		require.False(t, scanEpisodeLine([]byte(s), &l), s)
	}
}

// FuzzScanEpisodeLine: whatever the scanner reads, decode reads alike.
func FuzzScanEpisodeLine(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if sameAsDecode(t, b) && !json.Valid(b) {
			t.Fatalf("%q: scanned, but not valid JSON", b)
		}
	})
}
