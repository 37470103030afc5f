package structenc

// MarshalYAML writes generic config maps as YAML, byte for byte as
// sigs.k8s.io/yaml.Marshal does, without its JSON encode, YAML decode and
// YAML encode round trip.
//
// sigs.k8s.io/yaml.Marshal encodes a value as JSON, decodes that JSON with
// go.yaml.in/yaml/v2 (which picks int, uint or float for each number) and
// encodes the result with yaml/v2's emitter. MarshalYAML reproduces the same
// pipeline in one pass for the values a generated config is made of:
// map[string]any, []any, []string, strings of printable ASCII, bools, nil,
// Go's integer and float types. It writes yaml/v2's block style, natural key
// order, plain, single- or double-quoted scalars as yaml/v2 chooses them,
// and numbers as they come out of the JSON round trip. Anything else, for
// example a value of another type, a non-ASCII or multi-line string, a long
// string yaml/v2 would fold at 80 columns, or a key it would write as a
// complex key, makes MarshalYAML encode the whole value with
// sigs.k8s.io/yaml.Marshal instead, so the output never differs; it is only
// slower. Tests compare the two over varied inputs.

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// yaml/v2's emitter settings: indentation, the width past which it folds
// scalars at spaces, and the longest simple (non-"? ") key.
const (
	indentStep   = 2
	bestWidth    = 80
	maxSimpleKey = 128
)

// MarshalYAML returns what sigs.k8s.io/yaml.Marshal(m) returns.
func MarshalYAML(m map[string]any) ([]byte, error) {
	return AppendYAML(make([]byte, 0, 4096), m)
}

// AppendYAML appends what MarshalYAML(m) returns to dst: a caller that
// encodes several configs can write them all through one buffer.
func AppendYAML(dst []byte, m map[string]any) ([]byte, error) {
	if b, ok := appendFast(dst, m); ok {
		return b, nil
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// YAMLEncodable reports whether MarshalYAML encodes m in one pass, without
// sigs.k8s.io/yaml.
func YAMLEncodable(m map[string]any) bool {
	_, ok := marshalFast(m)
	return ok
}

// marshalFast encodes m, or reports false if m holds anything the fast path
// does not reproduce exactly.
func marshalFast(m map[string]any) ([]byte, bool) {
	return appendFast(nil, m)
}

// appendFast is marshalFast appending to dst; it returns dst unchanged
// (its spare capacity perhaps written) if it reports false.
func appendFast(dst []byte, m map[string]any) ([]byte, bool) {
	if len(m) == 0 {
		// nil is "null", an empty map "{}": leave both to yaml.
		return dst, false
	}
	e := &encoder{buf: dst, lineStart: len(dst)}
	if !e.mapping(m, 0, false) {
		return dst, false
	}
	return e.buf, true
}

type encoder struct {
	buf       []byte
	lineStart int // index in buf where the current line starts
}

func (e *encoder) column() int { return len(e.buf) - e.lineStart }

func (e *encoder) newline() {
	e.buf = append(e.buf, '\n')
	e.lineStart = len(e.buf)
}

const spaces = "                                                                "

func (e *encoder) indent(n int) {
	for n > len(spaces) {
		e.buf = append(e.buf, spaces...)
		n -= len(spaces)
	}
	e.buf = append(e.buf, spaces[:n]...)
}

// mapping writes a non-empty block mapping whose keys start at column
// indent. inline means the first key goes on the current line, after a
// sequence's "- ".
func (e *encoder) mapping(m map[string]any, indent int, inline bool) bool {
	keys := make([]string, 0, len(m))
	for k := range m {
		if len(k) > maxSimpleKey || !printableASCII(k) {
			return false
		}
		keys = append(keys, k)
	}
	// yaml/v2's key order is not a strict order for some key sets (a10,
	// a1b, a9), and it sorts keys in Go's random map order, so its output
	// for those varies from run to run. A stable sort of byte-ordered keys
	// gives the same order whenever yaml/v2's is well defined, and always
	// the same output.
	slices.Sort(keys)
	slices.SortStableFunc(keys, compareASCIIKeys)
	for i, k := range keys {
		if i > 0 || !inline {
			e.indent(indent)
		}
		if !e.scalarString(k, false) {
			return false
		}
		e.buf = append(e.buf, ':')
		if !e.value(m[k], indent, false) {
			return false
		}
	}
	return true
}

// sequence writes a non-empty block sequence whose dashes start at column
// indent; inline as for mapping.
func sequence[T any](e *encoder, items []T, indent int, inline bool) bool {
	for i, v := range items {
		if i > 0 || !inline {
			e.indent(indent)
		}
		e.buf = append(e.buf, '-')
		if !e.value(v, indent, true) {
			return false
		}
	}
	return true
}

// value writes v after a mapping key's ":" (inSeq false) or a sequence's
// "-" (inSeq true) at column indent, and ends the line.
func (e *encoder) value(v any, indent int, inSeq bool) bool {
	switch t := v.(type) {
	case map[string]any:
		switch {
		case t == nil:
			e.buf = append(e.buf, " null"...)
			e.newline()
			return true
		case len(t) == 0:
			e.buf = append(e.buf, " {}"...)
			e.newline()
			return true
		case inSeq:
			e.buf = append(e.buf, ' ')
			return e.mapping(t, indent+indentStep, true)
		}
		e.newline()
		return e.mapping(t, indent+indentStep, false)
	case []any:
		if t != nil {
			return list(e, t, indent, inSeq)
		}
	case []string:
		if t != nil {
			return list(e, t, indent, inSeq)
		}
	}
	// A scalar, or a nil slice: JSON's null.
	e.buf = append(e.buf, ' ')
	if !e.scalar(v) {
		return false
	}
	e.newline()
	return true
}

// list writes a sequence value; yaml/v2 does not indent a sequence in a
// mapping, and puts a sequence in a sequence after "- ".
func list[T any](e *encoder, items []T, indent int, inSeq bool) bool {
	if len(items) == 0 {
		e.buf = append(e.buf, " []"...)
		e.newline()
		return true
	}
	if inSeq {
		e.buf = append(e.buf, ' ')
		return sequence(e, items, indent+indentStep, true)
	}
	e.newline()
	return sequence(e, items, indent, false)
}

// scalar writes a scalar value, as its JSON form decodes and re-encodes.
func (e *encoder) scalar(v any) bool {
	switch t := v.(type) {
	case nil, []any, []string:
		// Only nil slices get here.
		e.buf = append(e.buf, "null"...)
	case string:
		return e.scalarString(t, true)
	case bool:
		e.buf = strconv.AppendBool(e.buf, t)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(t), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(t), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(t), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(t), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, t, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(t), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(t), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(t), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, t, 10)
	case float64:
		return e.float(t, 64)
	case float32:
		return e.float(float64(t), 32)
	default:
		// uint8 is left out on purpose: a []uint8 is base64 in JSON.
		return false
	}
	return true
}

// float writes a float as JSON encodes it and yaml/v2 decodes that text
// (to an int, uint or float64) and encodes it again.
func (e *encoder) float(f float64, bits int) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		// JSON cannot encode these; let yaml report the error.
		return false
	}
	text := jsonFloat(f, bits)
	switch t := resolveNumber(text).(type) {
	case int64:
		e.buf = strconv.AppendInt(e.buf, t, 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, t, 10)
	case float64:
		e.buf = strconv.AppendFloat(e.buf, t, 'g', -1, 64)
	default:
		return false
	}
	return true
}

// jsonFloat is encoding/json's text for a float.
func jsonFloat(f float64, bits int) string {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(nil, f, format, -1, bits)
	if format == 'e' {
		// encoding/json writes e-9, not e-09.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}

// scalarString writes a string the way yaml/v2 does: plain when it would
// read back as the same string and the emitter allows it, single-quoted
// when only the emitter objects, double-quoted when it would read back as
// something else. value is false for a mapping key, which yaml/v2 never
// folds.
func (e *encoder) scalarString(s string, value bool) bool {
	a, ok := analyze(s)
	if !ok {
		return false
	}
	style := byte(0)
	switch {
	case !resolvesToString(s) || isBase60Float(s):
		style = '"'
	case !a.plain:
		style = '\''
	}
	n := len(s)
	switch style {
	case '\'':
		n += 2 + a.singleQuotes
	case '"':
		n += 2 + a.escapes
	}
	if value && a.spaces && e.column()+n > bestWidth {
		// yaml/v2 might fold this line at a space.
		return false
	}
	switch {
	case style == 0 || (style == '\'' && a.singleQuotes == 0) || (style == '"' && a.escapes == 0):
		if style != 0 {
			e.buf = append(e.buf, style)
		}
		e.buf = append(e.buf, s...)
		if style != 0 {
			e.buf = append(e.buf, style)
		}
	case style == '\'':
		e.buf = append(e.buf, '\'')
		for i := range len(s) {
			if s[i] == '\'' {
				e.buf = append(e.buf, '\'')
			}
			e.buf = append(e.buf, s[i])
		}
		e.buf = append(e.buf, '\'')
	default:
		e.buf = append(e.buf, '"')
		for i := range len(s) {
			if s[i] == '"' || s[i] == '\\' {
				e.buf = append(e.buf, '\\')
			}
			e.buf = append(e.buf, s[i])
		}
		e.buf = append(e.buf, '"')
	}
	return true
}

// analysis is what one pass over a string finds.
type analysis struct {
	// plain: yaml/v2's emitter allows it as a plain scalar in block
	// context (yaml_emitter_analyze_scalar's block_plain_allowed).
	plain bool
	// spaces: it has a space, where yaml/v2 may fold a long line.
	spaces bool
	// singleQuotes and escapes count what single and double quoting
	// double or escape.
	singleQuotes, escapes int
}

// analyze looks at s once; false if it has anything but printable ASCII
// (spaces included, line breaks and tabs not).
func analyze(s string) (analysis, bool) {
	a := analysis{plain: s != ""}
	for i := range len(s) {
		c := s[i]
		switch {
		case c < 0x20 || c > 0x7e:
			return a, false
		case c == ' ':
			a.spaces = true
			if i+1 < len(s) && s[i+1] == '#' {
				a.plain = false // " #" starts a comment
			}
		case c == ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				a.plain = false // ": " or a trailing ':' is a key
			}
		case c == '\'':
			a.singleQuotes++
		case c == '"' || c == '\\':
			a.escapes++
		}
	}
	if !a.plain {
		return a, true
	}
	c := s[0]
	switch {
	case c == ' ' || s[len(s)-1] == ' ':
		a.plain = false
	case strings.HasPrefix(s, "---") || strings.HasPrefix(s, "..."):
		a.plain = false
	case strings.IndexByte("#,[]{}&*!|>'\"%@`", c) >= 0:
		a.plain = false
	case (c == '?' || c == '-') && (len(s) == 1 || s[1] == ' '):
		a.plain = false
	}
	return a, true
}

// printableASCII reports whether s has only printable ASCII characters
// (spaces included, line breaks and tabs not).
func printableASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
