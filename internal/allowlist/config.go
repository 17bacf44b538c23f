package allowlist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// ConfigFileName is the name of the config file that Load looks for.
const ConfigFileName = ".writewatch.yaml"

// A ConfigError reports a problem in a config file.
type ConfigError struct {
	File string // path of the config file
	Line int    // 1-based line number
	Msg  string
}

// Error returns "FILE:LINE: MSG" on one line.
func (e *ConfigError) Error() string {
	msg := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(e.Msg)
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + msg
}

// Names of the built-in defaults, as used under "defaults:" and in
// Entry.Source ("default:" + name).
const (
	DefaultTmp         = "tmp"
	DefaultDev         = "dev"
	DefaultGoCache     = "go-cache"
	DefaultPythonCache = "python-cache"
)

var defaultNames = []string{DefaultTmp, DefaultDev, DefaultGoCache, DefaultPythonCache}

// rawEntry is an allow or deny entry as read from the config file.
type rawEntry struct {
	kind  Kind
	text  string
	line  int
	broad bool // {path: ..., broad: true}
}

type config struct {
	entries  []rawEntry
	defaults map[string]bool // every name in defaultNames
}

func allDefaults(on bool) map[string]bool {
	m := make(map[string]bool, len(defaultNames))
	for _, n := range defaultNames {
		m[n] = on
	}
	return m
}

// parseConfig parses the contents of a config file. Errors are
// *ConfigError.
func parseConfig(file string, data []byte) (*config, error) {
	cfg := &config{defaults: allDefaults(true)}
	fail := func(line int, format string, args ...any) (*config, error) {
		return nil, &ConfigError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // empty file, or comments only
		}
		line, msg := yamlErrorLine(err, data)
		return fail(line, "%s", msg)
	}
	for {
		// Further documents are an error, unless they are empty.
		var extra yaml.Node
		err := decode(dec, &extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, msg := yamlErrorLine(err, data)
			return fail(line, "%s", msg)
		}
		if len(extra.Content) > 0 && !isNull(extra.Content[0]) {
			return fail(extra.Content[0].Line, "more than one YAML document")
		}
	}

	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return cfg, nil
	}
	root := resolve(doc.Content[0])
	if isNull(root) {
		return cfg, nil
	}
	if root.Kind != yaml.MappingNode {
		return fail(root.Line, "the config must be a mapping with the keys allow, deny and defaults, not %s", describe(root))
	}
	src := newSource(data)
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := resolve(root.Content[i]), resolve(root.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return fail(k.Line, "unexpected %s as a key", describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return fail(k.Line, "duplicate key %q (first at line %d)", k.Value, first)
		}
		seen[k.Value] = k.Line
		switch k.Value {
		case "allow", "deny":
			kind := Allow
			if k.Value == "deny" {
				kind = Deny
			}
			entries, err := parseEntries(file, src, k.Value, kind, v)
			if err != nil {
				return nil, err
			}
			cfg.entries = append(cfg.entries, entries...)
		case "defaults":
			if err := parseDefaults(file, v, cfg.defaults); err != nil {
				return nil, err
			}
		default:
			return fail(k.Line, "unknown key %q (known keys: allow, deny, defaults)", k.Value)
		}
	}
	return cfg, nil
}

func parseEntries(file string, src *source, key string, kind Kind, v *yaml.Node) ([]rawEntry, error) {
	if isNull(v) {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, &ConfigError{File: file, Line: v.Line,
			Msg: fmt.Sprintf("%s: expected a list of paths or patterns, not %s", key, describe(v))}
	}
	var out []rawEntry
	for _, item := range v.Content {
		e := rawEntry{kind: kind, line: item.Line} // of the alias, for an alias
		item := resolve(item)
		fail := func(line int, format string, args ...any) ([]rawEntry, error) {
			return nil, &ConfigError{File: file, Line: line, Msg: key + " entry" + fmt.Sprintf(format, args...)}
		}
		if item.Kind != yaml.MappingNode {
			text, msg := entryText(src, item)
			if msg != "" {
				return fail(e.line, "%s", msg)
			}
			e.text = text
			out = append(out, e)
			continue
		}
		// {path: PATTERN, broad: true}
		known := "known keys: path, broad"
		if kind == Deny {
			known = "the one key is path"
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, val := resolve(item.Content[i]), resolve(item.Content[i+1])
			if k.Kind != yaml.ScalarNode {
				return fail(k.Line, ": unexpected %s as a key", describe(k))
			}
			if first, dup := seen[k.Value]; dup {
				return fail(k.Line, ": duplicate key %q (first at line %d)", k.Value, first)
			}
			seen[k.Value] = k.Line
			switch {
			case k.Value == "path":
				text, msg := entryText(src, val)
				if msg != "" {
					return fail(val.Line, " path%s", msg)
				}
				e.text = text
			case k.Value == "broad" && kind == Allow:
				on, ok := boolValue(val)
				if !ok {
					return fail(val.Line, ": broad: expected true or false, not %s", describe(val))
				}
				e.broad = on
			default:
				return fail(k.Line, ": unknown key %q (%s)", k.Value, known)
			}
		}
		if _, ok := seen["path"]; !ok {
			return fail(item.Line, ": a mapping needs the key path, the path or pattern of the entry")
		}
		out = append(out, e)
	}
	return out, nil
}

// entryText returns the path or pattern of an entry's scalar node, or a
// message that starts with ": " or " is" and says what is wrong with it.
func entryText(src *source, n *yaml.Node) (string, string) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		if isNull(n) && n.Value == "~" {
			return "", ": ~ alone is YAML's empty value; write '~' for the home directory"
		}
		return "", fmt.Sprintf(": expected a path or pattern, not %s", describe(n))
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float":
	default:
		return "", fmt.Sprintf(": expected a path or pattern, not %s (quote it to use it as a path)", describe(n))
	}
	if n.Value == "" {
		return "", " is empty"
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 && !onItsLine(src, n) {
		return "", fmt.Sprintf(" %s goes on over more than one line, which YAML joins into one entry: "+
			"start each entry on its own line with \"- \" at the same indentation, or quote it if one entry is meant", describe(n))
	}
	return n.Value, ""
}

// onItsLine reports whether a plain scalar is written on the one line where
// it starts. The text of a plain scalar is what is written, so a scalar
// whose text is not on its first line was folded from several lines.
func onItsLine(src *source, n *yaml.Node) bool {
	return bytes.Contains(src.line(n.Line), []byte(n.Value))
}

// source is the text of a config file, with its lines found once.
type source struct {
	data   []byte
	starts []int // starts[i] is the offset of line i+1
}

func newSource(data []byte) *source {
	src := &source{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			src.starts = append(src.starts, i+1)
		}
	}
	return src
}

// line returns line n (1-based) without its newline, or nil.
func (s *source) line(n int) []byte {
	if n < 1 || n > len(s.starts) {
		return nil
	}
	end := len(s.data)
	if n < len(s.starts) {
		end = s.starts[n] - 1
	}
	return s.data[s.starts[n-1]:end]
}

func parseDefaults(file string, v *yaml.Node, defaults map[string]bool) error {
	if isNull(v) {
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		on, ok := boolValue(v)
		if !ok {
			return &ConfigError{File: file, Line: v.Line,
				Msg: fmt.Sprintf("defaults: expected true, false or a mapping of %s to true or false, not %s",
					strings.Join(defaultNames, ", "), describe(v))}
		}
		for n := range defaults {
			defaults[n] = on
		}
		return nil
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := resolve(v.Content[i]), resolve(v.Content[i+1])
			if k.Kind != yaml.ScalarNode {
				return &ConfigError{File: file, Line: k.Line,
					Msg: fmt.Sprintf("defaults: unexpected %s as a key", describe(k))}
			}
			if _, known := defaults[k.Value]; !known {
				return &ConfigError{File: file, Line: k.Line,
					Msg: fmt.Sprintf("defaults: unknown default %q (known: %s)", k.Value, strings.Join(defaultNames, ", "))}
			}
			if first, dup := seen[k.Value]; dup {
				return &ConfigError{File: file, Line: k.Line,
					Msg: fmt.Sprintf("defaults: duplicate key %q (first at line %d)", k.Value, first)}
			}
			seen[k.Value] = k.Line
			on, ok := boolValue(val)
			if !ok {
				return &ConfigError{File: file, Line: val.Line,
					Msg: fmt.Sprintf("defaults: %s: expected true or false, not %s", k.Value, describe(val))}
			}
			defaults[k.Value] = on
		}
		return nil
	}
	return &ConfigError{File: file, Line: v.Line,
		Msg: fmt.Sprintf("defaults: expected true, false or a mapping, not %s", describe(v))}
}

// decode decodes the next document. The decoder is not expected to panic,
// but a config file must never bring the program down.
func decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: decoder failed: %v", r)
		}
	}()
	return dec.Decode(n)
}

// resolve follows an alias to the node it refers to.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func boolValue(n *yaml.Node) (on, ok bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, false
	}
	return b, true
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "an empty value"
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!str":
			if len(n.Value) > 60 {
				return strconv.Quote(n.Value[:57]) + "..."
			}
			return strconv.Quote(n.Value)
		}
		return "a value tagged " + n.ShortTag()
	}
	return "an unexpected YAML node"
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// splitYAMLError splits a YAML error into the line it names (0 if none) and
// the rest of the message.
func splitYAMLError(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if line, convErr := strconv.Atoi(m[1]); convErr == nil {
			return line, msg[len(m[0]):]
		}
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// yamlErrorLine returns the line of a YAML error, and its message.
//
// The decoder names the line where the enclosing construct starts rather
// than the line of the problem, and names no line when that is the first
// one. So for syntax errors the line is found again as the first line at
// which the text up to there fails the same way.
func yamlErrorLine(err error, data []byte) (int, string) {
	yline, msg := splitYAMLError(err)
	line := max(yline, 1)
	switch {
	case strings.Contains(msg, "control characters") || strings.Contains(msg, "UTF-8") || strings.Contains(msg, "UTF-16"):
		if l := badCharLine(data); l > 0 {
			line = l
		}
	case strings.HasPrefix(msg, "unknown anchor '"):
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		if i := bytes.Index(data, []byte("*"+name)); i >= 0 {
			line = 1 + bytes.Count(data[:i], []byte("\n"))
		}
	case strings.Contains(msg, "end of stream"):
		if yline == 0 {
			line = 1 + bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))
		}
	default:
		if l := firstFailingLine(data, line, msg); l > 0 {
			line = l
		}
	}
	return line, "invalid YAML: " + msg
}

// firstFailingLine returns the first line n >= from such that decoding the
// first n lines of data fails with msg, or 0. The decoder reads left to
// right, so once a prefix fails with msg every longer one does too, and a
// binary search finds n.
func firstFailingLine(data []byte, from int, msg string) int {
	var ends []int // ends[i] is the end of the first i+1 lines
	for off := 0; off < len(data); {
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			off += i + 1
		} else {
			off = len(data)
		}
		ends = append(ends, off)
	}
	fails := func(lines int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[lines-1]]))
		for {
			var doc yaml.Node
			if err := decode(dec, &doc); err != nil {
				_, m := splitYAMLError(err)
				return m == msg
			}
		}
	}
	lo, hi := max(from, 1), len(ends)
	if lo > hi || !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// badCharLine returns the line of the first byte that YAML does not allow
// in a UTF-8 stream, or 0.
func badCharLine(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return line
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || r == 0x85:
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0xd800 && r < 0xe000) || r == 0xfffe || r == 0xffff:
			return line
		}
		i += n
	}
	return 0
}
