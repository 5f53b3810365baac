package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzText: a JSON string decodes to what encoding/json decodes, or is
// refused where encoding/json refuses it.
func FuzzText(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\tc\"d\\e\/f"`, `"\u00e9\u4e2d\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`,
		`"\ud83d\u0041"`, "\"\xff\xfeok\"", "\"bad\x01\"", `"\x"`, `"\u12"`, `"trailing\"`, `null`, `"é中😀"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		wantErr := json.Unmarshal(b, &want)
		var got text
		gotErr := got.UnmarshalJSON(b)
		if string(b) == "null" {
			return
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: encoding/json err %v, text err %v", b, wantErr, gotErr)
		}
		if wantErr == nil && string(got) != want {
			t.Fatalf("%q: encoding/json %q, text %q", b, want, got)
		}
	})
}

// FuzzCountChars: countChars counts the code points of valid UTF-8, and
// hasControl finds what encoding/json refuses unescaped in a string.
func FuzzCountChars(f *testing.F) {
	for _, s := range []string{"", "plain ascii text of some length", "é中😀 mixed ascii and more", "\x00\x1f\"", strings.Repeat("ab\"c", 5)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) {
			if got, want := countChars(s), utf8.RuneCountInString(s); got != want {
				t.Fatalf("%q: countChars %d, want %d", s, got, want)
			}
		}
		want := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == '"' }) >= 0
		if got := hasControl([]byte(s)); got != want {
			t.Fatalf("%q: hasControl %v, want %v", s, got, want)
		}
	})
}

// FuzzASCIIText: asciiText accepts exactly ASCII without control
// characters and quotes.
func FuzzASCIIText(f *testing.F) {
	for _, s := range []string{"", "plain ascii text of some length", "é", "tab\there", `quote"d`, "0123456789abcdef\x7f", "\x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r >= utf8.RuneSelf }) < 0
		if got := asciiText([]byte(s)); got != want {
			t.Fatalf("%q: asciiText %v, want %v", s, got, want)
		}
	})
}
