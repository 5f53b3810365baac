package toolguard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

type Hash [16]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

func hashArgs(args []byte, ignore []string) Hash {
	var v any
	if len(strings.TrimSpace(string(args))) == 0 {
		args = []byte("{}")
	}
	if err := json.Unmarshal(args, &v); err != nil {
		s := sha256.Sum256(append([]byte("R"), args...))
		var h Hash
		copy(h[:], s[:])
		return h
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range ignore {
			delete(m, k)
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	b, _ := json.Marshal(v)
	s := sha256.Sum256(append([]byte("J"), b...))
	var h Hash
	copy(h[:], s[:])
	return h
}
func digestResult(s string) Hash {
	x := sha256.Sum256([]byte(s))
	var h Hash
	copy(h[:], x[:])
	return h
}
func digestError(s string) Hash {
	x := sha256.Sum256([]byte(s))
	var h Hash
	copy(h[:], x[:])
	return h
}
func topLevelString(args []byte, keys []string) (string, bool) {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return "", false
	}
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s, true
		}
	}
	return "", false
}
func argURL(args []byte) (string, string, bool) {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return "", "", false
	}
	for _, v := range m {
		if s, ok := v.(string); ok && (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) {
			u, err := url.Parse(s)
			if err == nil {
				return u.Host, u.Path, true
			}
		}
	}
	return "", "", false
}
func appendKeyNames(dst, args []byte) []byte {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return dst
	}
	ks := make([]string, 0)
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return append(dst, strings.Join(ks, ",")...)
}
