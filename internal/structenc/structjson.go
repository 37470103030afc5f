package structenc

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// jsonToStruct decodes a JSON object, as encoding/json writes it, straight
// into a protobuf Struct: the Struct that json.Unmarshal into a map and
// structpb.NewStruct would give, in one pass and without the map. Numbers
// are float64s, as json.Unmarshal makes them. With desired set it also
// drops what a desired composed resource must not carry: the top-level
// status, and the "creationTimestamp": null that typed ObjectMeta encodes
// (in objects reached through objects and lists, not lists of lists).
func jsonToStruct(b []byte, desired bool) (*structpb.Struct, error) {
	return (&structDecoder{}).decode(b, desired)
}

// structDecoder decodes JSON to Structs. One decoder may decode many
// documents: it allocates Values in blocks and shares repeated short
// strings between them, which is most of what decoding costs otherwise.
type structDecoder struct {
	b []byte
	i int

	values  slab[structpb.Value]
	structs slab[structpb.Struct]
	lists   slab[structpb.ListValue]
	kStr    slab[structpb.Value_StringValue]
	kNum    slab[structpb.Value_NumberValue]
	kBool   slab[structpb.Value_BoolValue]
	kNull   slab[structpb.Value_NullValue]
	kStruct slab[structpb.Value_StructValue]
	kList   slab[structpb.Value_ListValue]
	strs    map[string]string

	// Leaf values, shared by every place in the decoded documents that
	// holds the same one: a response is only encoded, never changed in
	// place, and the same labels, names, ports and flags recur in every
	// object. Sharing them saves most of the allocation, and so of the
	// garbage collection, decoding costs.
	strVals             map[string]*structpb.Value
	numVals             map[float64]*structpb.Value
	trueV, falseV, null *structpb.Value
	// stringMaps are the converted string maps by a hash of their
	// content; see sharedStringMap.
	stringMaps map[uint64][]*structpb.Value
}

// slab hands out pointers to zero values allocated in blocks.
type slab[T any] struct{ free []T }

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, 64)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// maxShared is the longest string decoders share.
const maxShared = 64

// sharedStringsHint is the size a decoder's shared strings start at: the
// production example's response has about 240.
const sharedStringsHint = 256

func (d *structDecoder) shared(b []byte) string {
	if len(b) > maxShared {
		return string(b)
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	s := string(b)
	d.strs[s] = s
	return s
}

func (d *structDecoder) stringValue(s string) *structpb.Value {
	if len(s) > maxShared {
		return d.newStringValue(s)
	}
	if v, ok := d.strVals[s]; ok {
		return v
	}
	if d.strVals == nil {
		// A response holds a few hundred distinct short strings: sized
		// once rather than grown through every doubling.
		d.strVals = make(map[string]*structpb.Value, sharedStringsHint)
	}
	v := d.newStringValue(s)
	d.strVals[s] = v
	return v
}

func (d *structDecoder) newStringValue(s string) *structpb.Value {
	w := d.kStr.next()
	w.StringValue = s
	v := d.values.next()
	v.Kind = w
	return v
}

func (d *structDecoder) numberValue(f float64) *structpb.Value {
	if v, ok := d.numVals[f]; ok && !(f == 0 && math.Signbit(f) != math.Signbit(v.GetNumberValue())) {
		return v
	}
	if d.numVals == nil {
		d.numVals = map[float64]*structpb.Value{}
	}
	w := d.kNum.next()
	w.NumberValue = f
	v := d.values.next()
	v.Kind = w
	if !math.IsNaN(f) { // NaN is no map key.
		d.numVals[f] = v
	}
	return v
}

func (d *structDecoder) boolValue(b bool) *structpb.Value {
	p := &d.falseV
	if b {
		p = &d.trueV
	}
	if *p == nil {
		w := d.kBool.next()
		w.BoolValue = b
		v := d.values.next()
		v.Kind = w
		*p = v
	}
	return *p
}

func (d *structDecoder) nullValue() *structpb.Value {
	if d.null == nil {
		v := d.values.next()
		v.Kind = d.kNull.next()
		d.null = v
	}
	return d.null
}

func (d *structDecoder) structValue(s *structpb.Struct) *structpb.Value {
	w := d.kStruct.next()
	w.StructValue = s
	v := d.values.next()
	v.Kind = w
	return v
}

func (d *structDecoder) listValue(l *structpb.ListValue) *structpb.Value {
	w := d.kList.next()
	w.ListValue = l
	v := d.values.next()
	v.Kind = w
	return v
}

// decode decodes one JSON object; see jsonToStruct.
func (d *structDecoder) decode(b []byte, desired bool) (*structpb.Struct, error) {
	d.b, d.i = b, 0
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, d.errorf("want an object")
	}
	s, err := d.object(desired, desired)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i != len(d.b) {
		return nil, d.errorf("want the end of the input")
	}
	return s, nil
}

func (d *structDecoder) errorf(format string, args ...any) error {
	return errors.Errorf("cannot decode JSON at offset %d: "+format, append([]any{d.i}, args...)...)
}

func (d *structDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// object decodes an object at '{'. clean drops null creationTimestamps;
// top drops status too.
func (d *structDecoder) object(clean, top bool) (*structpb.Struct, error) {
	d.i++ // '{'
	s := d.structs.next()
	s.Fields = map[string]*structpb.Value{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return s, nil
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, d.errorf("want a key")
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, d.errorf("want ':'")
		}
		d.i++
		d.space()
		v, err := d.value(clean, false)
		if err != nil {
			return nil, err
		}
		drop := (top && k == memberStatus) || (clean && k == memberCreationTimestamp && isNull(v))
		if !drop {
			s.Fields[k] = v
		}
		d.space()
		if d.i >= len(d.b) {
			return nil, d.errorf("want ',' or '}'")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return s, nil
		default:
			return nil, d.errorf("want ',' or '}'")
		}
	}
}

// The members a desired object drops: its top-level status, and a null
// creationTimestamp anywhere.
const (
	memberStatus            = "status"
	memberCreationTimestamp = "creationTimestamp"
)

func isNull(v *structpb.Value) bool {
	_, ok := v.GetKind().(*structpb.Value_NullValue)
	return ok
}

// array decodes an array at '['. Objects in it keep clean; objects in
// arrays in it are not cleaned.
func (d *structDecoder) array(clean bool) (*structpb.ListValue, error) {
	d.i++ // '['
	l := d.lists.next()
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return l, nil
	}
	for {
		d.space()
		v, err := d.value(clean, true)
		if err != nil {
			return nil, err
		}
		l.Values = append(l.Values, v)
		d.space()
		if d.i >= len(d.b) {
			return nil, d.errorf("want ',' or ']'")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return l, nil
		default:
			return nil, d.errorf("want ',' or ']'")
		}
	}
}

// value decodes any value; inArray is true for an array's elements.
func (d *structDecoder) value(clean, inArray bool) (*structpb.Value, error) {
	if d.i >= len(d.b) {
		return nil, d.errorf("want a value")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		s, err := d.object(clean, false)
		if err != nil {
			return nil, err
		}
		return d.structValue(s), nil
	case c == '[':
		l, err := d.array(clean && !inArray)
		if err != nil {
			return nil, err
		}
		return d.listValue(l), nil
	case c == '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return d.stringValue(s), nil
	case c == 't':
		return d.literal("true", func() *structpb.Value { return d.boolValue(true) })
	case c == 'f':
		return d.literal("false", func() *structpb.Value { return d.boolValue(false) })
	case c == 'n':
		return d.literal("null", d.nullValue)
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, d.errorf("unexpected %q", d.b[d.i])
}

func (d *structDecoder) literal(text string, v func() *structpb.Value) (*structpb.Value, error) {
	if len(d.b)-d.i < len(text) || string(d.b[d.i:d.i+len(text)]) != text {
		return nil, d.errorf("want %s", text)
	}
	d.i += len(text)
	return v(), nil
}

func (d *structDecoder) number() (*structpb.Value, error) {
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		d.i++
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot decode JSON number at offset %d", start)
	}
	return d.numberValue(f), nil
}

// string decodes a string at '"'. Invalid UTF-8 and lone surrogates become
// U+FFFD, as encoding/json makes them.
func (d *structDecoder) string() (string, error) {
	d.i++ // '"'
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			if utf8.Valid(s) {
				return d.shared(s), nil
			}
			return string([]rune(string(s))), nil
		}
		if c == '\\' {
			return d.escaped(start)
		}
		d.i++
	}
	return "", d.errorf("unterminated string")
}

// escaped decodes the rest of a string that has escapes.
func (d *structDecoder) escaped(start int) (string, error) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if utf8.Valid(out) {
				return string(out), nil
			}
			return string([]rune(string(out))), nil
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			break
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", d.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if lo, ok := d.hex4(); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
						r2 = utf16.DecodeRune(r, lo)
					} else {
						d.i = save
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", d.errorf("invalid escape %q", e)
		}
	}
	return "", d.errorf("unterminated string")
}

func (d *structDecoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}
