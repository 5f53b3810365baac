package quotafile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolguard/toolguard"
	"go.yaml.in/yaml/v4"
)

// MaxSize is the largest file Load, Parse and Apply accept, in bytes
// (1 MiB). A quota declaration is a few lines; anything larger is refused
// before it is parsed.
const MaxSize = 1 << 20

// maxValue bounds every number in a file, so a limit means the same on
// 32-bit and 64-bit platforms.
const maxValue = math.MaxInt32

// maxErrors is how many problems one call reports before it stops.
const maxErrors = 10

// Error is one problem in a quota file. Every error that Parse and Apply
// return is an *Error or an errors.Join of several (the first 10 problems,
// then a note that there are more), so errors.As finds the first. Load also returns the operating system's
// error, wrapped, when the file cannot be read.
type Error struct {
	// File is the name given to Parse or Apply, or the path given to Load.
	File string
	// Line is the 1-based line of the file (of the whole Markdown file for
	// front matter). 0 means the problem concerns the whole file.
	Line int
	// Column is the 1-based column on Line, where the YAML parser or the
	// offending node gives one; 0 means unknown.
	Column int
	// Key is the dotted path of the key concerned, such as
	// "tool_quota.Bash" or "loop_detection.max_retries". Tool names that are
	// not plain words are quoted: tool_quota."web fetch". "" means no key
	// is involved (a malformed document, a file too large).
	Key string
	// Problem says what is wrong and, where it helps, how to fix it.
	Problem string
}

// Error returns "quotafile: FILE:LINE:COLUMN: KEY: PROBLEM", leaving out
// the line, the column and the key when they are not known. FILE is quoted when it is empty or
// holds characters that are not printable.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("quotafile: ")
	b.WriteString(printable(e.File))
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// printable returns text from the file (or its name) as it appears in a
// message: quoted when it is empty or holds characters that would break a
// line of output, such as a newline in a tag written !%0A.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// Load reads the quota file at path and returns the policy it declares,
// layered onto the zero Policy (the defaults). A path ending in .md or
// .markdown is read as a Markdown agent definition (the declaration is in
// its front matter); any other path as a plain YAML quota file. Files
// larger than MaxSize are refused without being read to the end.
func Load(path string) (toolguard.Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return toolguard.Policy{}, fmt.Errorf("quotafile: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return toolguard.Policy{}, fmt.Errorf("quotafile: %w", err)
	}
	return Parse(path, data)
}

// Parse returns the policy declared by data, layered onto the zero Policy
// (the defaults): Apply(toolguard.Policy{}, name, data). name is used in
// errors and chooses the format, as in Load.
func Parse(name string, data []byte) (toolguard.Policy, error) {
	return Apply(toolguard.Policy{}, name, data)
}

// Apply layers the declaration in data onto base, typically a preset, and
// returns the result. name is used in errors and chooses the format: a name
// ending in .md or .markdown (any case) is a Markdown agent definition,
// anything else a plain YAML quota file.
//
// What the file sets replaces what base holds; what it leaves out stays as
// in base:
//
//   - tool_quota replaces base.AgentQuota as a whole (a new Quota, so
//     base's maps are never modified);
//   - loop_detection.same_call_window sets base.WindowLimit (the rolling
//     window's length stays base.Window, and a base that switches the
//     window rule off, Window < 0, keeps it off);
//   - loop_detection.max_retries sets base.MaxFailures.
//
// Every field is checked before anything is applied: on error Apply
// returns base unchanged with an *Error (or a join of them) naming the
// file, the line and the key.
func Apply(base toolguard.Policy, name string, data []byte) (toolguard.Policy, error) {
	d, err := decode(name, data)
	if err != nil {
		return base, err
	}
	if d.preset != "" {
		p, err := toolguard.Preset(d.preset)
		if err != nil { // checked in decode; kept for safety
			return base, &Error{File: name, Key: keyPreset, Problem: err.Error()}
		}
		base = p
	}
	for _, set := range d.set {
		set(&base)
	}
	return base, nil
}

// declaration is what a file declares: a preset to start from, then the
// fields it sets, in the order of the file.
type declaration struct {
	preset string
	set    []func(*toolguard.Policy)
}

// isMarkdown reports whether name is read as a Markdown agent definition.
func isMarkdown(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown":
		return true
	}
	return false
}

func decode(name string, data []byte) (declaration, error) {
	if len(data) > MaxSize {
		return declaration{}, &Error{File: name, Problem: fmt.Sprintf("file is larger than 1 MiB (%d bytes); a quota declaration is a few lines", MaxSize)}
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	d := &decoder{file: name}
	src := data
	if isMarkdown(name) {
		d.frontMatter = true
		fm, ok, err := extractFrontMatter(name, data)
		if err != nil || !ok {
			return declaration{}, err // no front matter declares nothing
		}
		src, d.lineOffset = fm, 1
	}
	root, err := d.parse(src)
	if err != nil {
		return declaration{}, err
	}
	d.document(root)
	if len(d.errs) > 0 {
		return declaration{}, errors.Join(d.errs...)
	}
	return d.decl, nil
}

// extractFrontMatter returns the YAML between a first line "---" and the
// next line "---" (trailing blanks and CR allowed). ok is false when the
// file does not start with "---".
func extractFrontMatter(name string, data []byte) (fm []byte, ok bool, err error) {
	first, rest, found := bytes.Cut(data, []byte("\n"))
	if !isDelimiter(first) {
		return nil, false, nil
	}
	if !found {
		rest = nil
	}
	start := len(data) - len(rest)
	for off := start; off < len(data); {
		line, _, _ := bytes.Cut(data[off:], []byte("\n"))
		if isDelimiter(line) {
			return data[start:off], true, nil
		}
		off += len(line) + 1
	}
	return nil, false, &Error{File: name, Line: 1, Key: "front matter",
		Problem: `unterminated: no closing "---" line after the opening one`}
}

func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

// decoder walks the YAML node tree and collects the declaration and every
// problem it finds.
type decoder struct {
	file        string
	frontMatter bool // unknown top-level keys are ignored
	lineOffset  int  // lines before the YAML (the opening "---")
	decl        declaration
	fields      map[string]string // Policy field → the key that set it
	errs        []error
}

// parse returns the single document's root node, or nil when the
// document is empty.
func (d *decoder) parse(src []byte) (root *yaml.Node, err error) {
	defer func() {
		// The parser reports errors by panicking internally and recovers
		// them itself; this is a last line of defence for bad input.
		if r := recover(); r != nil {
			root, err = nil, &Error{File: d.file, Problem: "malformed YAML: the parser failed"}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, d.yamlError(src, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, d.yamlError(src, err)
	default:
		problem := "a second YAML document starts here; a quota file holds one"
		if !d.frontMatter {
			problem += " (for a Markdown agent definition, use a name ending in .md)"
		}
		return nil, &Error{File: d.file, Line: d.line(&next), Problem: problem}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	root = doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil // "---" or "~" alone: nothing declared
	}
	return root, nil
}

// yamlError turns an error of the YAML parser into an *Error, with the
// position of its *yaml.LoadError. An alias of an unknown anchor comes
// without a position: it is looked up in src.
func (d *decoder) yamlError(src []byte, err error) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) {
		return &Error{File: d.file, Problem: "malformed YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	line, col, msg := le.Mark.Line, le.Mark.Column, le.Message
	if anchor, ok := strings.CutPrefix(msg, "unknown anchor '"); ok && strings.HasSuffix(anchor, "' referenced") {
		anchor = strings.TrimSuffix(anchor, "' referenced")
		msg = fmt.Sprintf("alias *%s refers to no anchor", printable(clip(anchor)))
		if line == 0 {
			if i := bytes.Index(src, []byte("*"+anchor)); i >= 0 {
				line = 1 + bytes.Count(src[:i], []byte("\n"))
				col = i - bytes.LastIndexByte(src[:i], '\n')
			}
		}
	}
	if line == 0 {
		line, col = 1, 0
	}
	return &Error{File: d.file, Line: line + d.lineOffset, Column: col, Problem: "malformed YAML: " + msg}
}

func (d *decoder) line(n *yaml.Node) int { return n.Line + d.lineOffset }

func (d *decoder) fail(n *yaml.Node, key, format string, args ...any) {
	if len(d.errs) > maxErrors {
		return
	}
	if len(d.errs) == maxErrors {
		d.errs = append(d.errs, &Error{File: d.file, Problem: "too many problems; fix these first"})
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: d.line(n), Column: n.Column, Key: key, Problem: fmt.Sprintf(format, args...)})
}

// Top-level and loop_detection keys.
const (
	keyToolQuota     = "tool_quota"
	keyLoopDetection = "loop_detection"
	keyWindow        = "same_call_window"
	keyRetries       = "max_retries"
	keyDefaults      = "defaults" // in tool_quota: Quota.Default
	keyTools         = "tools"    // in tool_quota: a map of any tool names
)

func (d *decoder) document(root *yaml.Node) {
	if root == nil {
		return
	}
	if !d.kind(root, "", yaml.MappingNode, "a mapping of policy keys (tool_quota, loop_detection, tools, …)") {
		return
	}
	seen := map[string]int{}
	d.pairs(root, func(k, v *yaml.Node) {
		if d.frontMatter && (k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str") {
			return // another tool's business
		}
		name, ok := d.key(k, "", seen)
		if !ok {
			return
		}
		switch name {
		case keyToolQuota:
			d.toolQuota(k, v, keyToolQuota)
		case keyLoopDetection:
			d.loopDetection(v)
		default:
			if !d.frontMatter {
				d.policyKey(k, v, name)
			} else if want := nearMiss(name); want != "" {
				d.fail(k, keyPath("", name), "unknown key; did you mean %s?", want)
			}
		}
	})
}

// nearMiss returns the key name probably meant by a front-matter key that
// differs from it only in case, separators or a plural, or "".
func nearMiss(name string) string {
	n := strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(name))
	n = strings.TrimSuffix(n, "s")
	switch n {
	case "toolquota":
		return keyToolQuota
	case "loopdetection":
		return keyLoopDetection
	}
	return ""
}

// toolQuota reads tool_quota (the agent quota) or platform_quota, named
// key, written at k.
func (d *decoder) toolQuota(k, v *yaml.Node, key string) {
	if !d.kind(v, key, yaml.MappingNode, "a mapping of tool names to limits") {
		return
	}
	q := &toolguard.Quota{}
	reserved := map[string]int{} // defaults and tools
	names := map[string]int{}    // tool names, top level and under tools
	d.pairs(v, func(k, v *yaml.Node) {
		name, ok := d.key(k, key, nil)
		if !ok {
			return
		}
		switch name {
		case keyDefaults:
			if d.unique(k, key, name, reserved) {
				if n, ok := d.limit(v, keyPath(key, name)); ok {
					q.Default = n
				}
			}
		case keyTools:
			if !d.unique(k, key, name, reserved) {
				return
			}
			prefix := keyPath(key, keyTools)
			if !d.kind(v, prefix, yaml.MappingNode,
				`a mapping of tool names to limits (to limit a tool named "tools", write tool_quota: {tools: {tools: N}})`) {
				return
			}
			d.pairs(v, func(k, v *yaml.Node) {
				if name, ok := d.key(k, prefix, nil); ok {
					d.tool(q, k, v, prefix, name, names)
				}
			})
		default:
			d.tool(q, k, v, key, name, names)
		}
	})
	if key == keyPlatformQuota {
		d.setField(k, key, "PlatformQuota", func(p *toolguard.Policy) { p.PlatformQuota = q })
	} else {
		d.setField(k, key, "AgentQuota", func(p *toolguard.Policy) { p.AgentQuota = q })
	}
}

// tool checks the tool name or glob pattern name, written at key k of the
// mapping parent, and its limit v, and adds them to q.
func (d *decoder) tool(q *toolguard.Quota, k, v *yaml.Node, parent, name string, seen map[string]int) {
	key := keyPath(parent, name)
	if !d.unique(k, parent, name, seen) || !d.toolName(k, key, name) {
		return
	}
	if n, ok := d.limit(v, key); ok {
		if q.Tools == nil {
			q.Tools = map[string]int{}
		}
		q.Tools[name] = n
	}
}

func (d *decoder) loopDetection(v *yaml.Node) {
	if !d.kind(v, keyLoopDetection, yaml.MappingNode, "a mapping with same_call_window and max_retries") {
		return
	}
	seen := map[string]int{}
	d.pairs(v, func(k, v *yaml.Node) {
		name, ok := d.key(k, keyLoopDetection, seen)
		if !ok {
			return
		}
		path := keyLoopDetection + "." + name
		switch name {
		case keyWindow:
			if n, ok := d.limit(v, path); ok {
				d.setField(k, path, "WindowLimit", func(p *toolguard.Policy) { p.WindowLimit = n })
			}
		case keyRetries:
			if n, ok := d.limit(v, path); ok {
				d.setField(k, path, "MaxFailures", func(p *toolguard.Policy) { p.MaxFailures = n })
			}
		default:
			d.fail(k, keyPath(keyLoopDetection, name), "%s", unknownKey(name, []string{keyWindow, keyRetries}))
		}
	})
}

// pairs calls f for each key and value of the mapping m.
func (d *decoder) pairs(m *yaml.Node, f func(k, v *yaml.Node)) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		f(m.Content[i], m.Content[i+1])
	}
}

// key checks that k is a string key and returns it. With a non-nil seen,
// it also checks that the key was not seen before in its mapping.
func (d *decoder) key(k *yaml.Node, parent string, seen map[string]int) (string, bool) {
	switch {
	case k.Kind == yaml.AliasNode:
		d.fail(k, keyPath(parent, "*"+k.Value), "aliases are not allowed; write the key out")
		return "", false
	case k.Kind != yaml.ScalarNode:
		d.fail(k, keyPath(parent, "?"), "a key must be a string, not %s", describe(k))
		return "", false
	case k.ShortTag() == "!!merge":
		d.fail(k, keyPath(parent, k.Value), "merge keys (<<) are not allowed; write the keys out")
		return "", false
	case k.ShortTag() != "!!str":
		d.fail(k, keyPath(parent, k.Value), "a key must be a string, not %s; quote it", describe(k))
		return "", false
	}
	if seen != nil && !d.unique(k, parent, k.Value, seen) {
		return "", false
	}
	return k.Value, true
}

// unique records the key name of the mapping parent, written at k, in
// seen, and reports a duplicate.
func (d *decoder) unique(k *yaml.Node, parent, name string, seen map[string]int) bool {
	if first, dup := seen[name]; dup {
		d.fail(k, keyPath(parent, name), "duplicate key (first at line %d)", first)
		return false
	}
	seen[name] = d.line(k)
	return true
}

// kind checks that n is a node of the wanted kind.
func (d *decoder) kind(n *yaml.Node, key string, want yaml.Kind, what string) bool {
	switch {
	case n.Kind == yaml.AliasNode:
		d.fail(n, key, "aliases are not allowed; write the value out")
		return false
	case n.Kind != want || n.ShortTag() != kindTag(want):
		d.fail(n, key, "want %s, got %s", what, describe(n))
		return false
	}
	return true
}

// kindTag is the tag of an untagged node of kind k.
func kindTag(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "!!map"
	case yaml.SequenceNode:
		return "!!seq"
	}
	return ""
}

// isDecimal reports whether s is written as a decimal integer: an optional
// "-", no leading zeros, no hexadecimal, octal or underscores (YAML would
// read 010 as 8).
func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// limit returns the positive integer n holds.
func (d *decoder) limit(n *yaml.Node, key string) (int, bool) {
	if n.Kind == yaml.AliasNode {
		d.fail(n, key, "aliases are not allowed; write the value out")
		return 0, false
	}
	tag := n.ShortTag()
	switch {
	case n.Kind == yaml.ScalarNode && isDecimal(n.Value) &&
		(tag == "!!int" || tag == "!!float" && n.Style&yaml.TaggedStyle == 0):
		// A decimal integer; YAML reads one too large for 64 bits as a float.
	case n.Kind == yaml.ScalarNode && tag == "!!int":
		d.fail(n, key, "write the limit as a decimal integer, got %s", describe(n))
		return 0, false
	default:
		hint := ""
		if n.Kind == yaml.ScalarNode && tag == "!!str" && isDecimal(n.Value) {
			hint = " (remove the quotes)"
		}
		d.fail(n, key, "want a positive integer, got %s%s", describe(n), hint)
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	switch {
	case err != nil || v > maxValue:
		if strings.HasPrefix(n.Value, "-") {
			d.fail(n, key, "negative limit %s (use a positive limit or remove the key)", printable(clip(n.Value)))
		} else {
			d.fail(n, key, "limit %s is too large (at most %d)", printable(clip(n.Value)), maxValue)
		}
	case v < 0:
		d.fail(n, key, "negative limit %d (use a positive limit or remove the key)", v)
	case v == 0:
		d.fail(n, key, "limit 0 is not allowed (use a positive limit or remove the key)")
	default:
		return int(v), true
	}
	return 0, false
}

// describe names what a node holds for an error message, without
// repeating more than a few characters of it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		what := "a mapping"
		if n.Kind == yaml.SequenceNode {
			what = "a list"
		}
		if tag := n.ShortTag(); tag != kindTag(n.Kind) {
			what += " tagged " + printable(clip(tag))
		}
		return what
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return "null"
	case "!!bool", "!!int", "!!float":
		return printable(clip(n.Value))
	case "!!str":
		return strconv.Quote(clip(n.Value))
	default:
		return "a value tagged " + printable(clip(tag))
	}
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 32
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// isPlain reports whether a key is written without quotes in key paths.
func isPlain(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '-', c == '*', c == '?':
		default:
			return false
		}
	}
	return true
}

// keyPath joins a parent key path and a key.
func keyPath(parent, key string) string {
	if !isPlain(key) {
		key = strconv.Quote(clip(key))
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}
