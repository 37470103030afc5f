package structenc

import (
	"encoding/base64"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// A wireEncoder writes values in the protocol buffer encoding of
// google.protobuf.Value: the bytes proto.MarshalOptions{Deterministic:
// true} writes for the Value that encoding/json then structpb give, map
// keys sorted. Writing the encoding straight from the typed value skips
// the Struct's Go maps and Values, which cost more to build and to encode
// than the bytes themselves.
type wireEncoder struct {
	b []byte
	// Stacks of the entries of the maps being written: a map appends its
	// entries, sorts them and writes them; a map inside it appends after
	// them, and each removes its own when done.
	strs  []entry[string]
	bytes []entry[[]byte]
	anys  []entry[any]
}

// An entry is one member of a map being written.
type entry[V any] struct {
	k string
	v V
}

// The tags of google.protobuf.Value's fields (kind), of Struct's fields
// and ListValue's values (both field 1), and of a map entry's key and
// value: field number << 3 | wire type.
const (
	tagNull       = 1<<3 | byte(protowire.VarintType)
	tagNumber     = 2<<3 | byte(protowire.Fixed64Type)
	tagString     = 3<<3 | byte(protowire.BytesType)
	tagBool       = 4<<3 | byte(protowire.VarintType)
	tagStruct     = 5<<3 | byte(protowire.BytesType)
	tagList       = 6<<3 | byte(protowire.BytesType)
	tagRepeated   = 1<<3 | byte(protowire.BytesType)
	tagEntryKey   = 1<<3 | byte(protowire.BytesType)
	tagEntryValue = 2<<3 | byte(protowire.BytesType)
)

// The members a desired object drops: its top-level status, and a null
// creationTimestamp (what typed ObjectMeta encodes) in objects reached
// through objects and lists, not lists of lists.
const (
	memberStatus            = "status"
	memberCreationTimestamp = "creationTimestamp"
)

func (e *wireEncoder) null() { e.b = append(e.b, tagNull, 0) }
func (e *wireEncoder) number(f float64) {
	e.b = protowire.AppendFixed64(append(e.b, tagNumber), math.Float64bits(f))
}

// str writes a string value; s must be valid UTF-8 (validString).
func (e *wireEncoder) str(s string) { e.b = protowire.AppendString(append(e.b, tagString), s) }

func (e *wireEncoder) boolean(v bool) {
	e.b = protowire.AppendVarint(append(e.b, tagBool), protowire.EncodeBool(v))
}

// base64 writes b as a string value in standard base64, as encoding/json
// writes a []byte.
func (e *wireEncoder) base64(b []byte) {
	s := e.open(tagString)
	e.b = base64.StdEncoding.AppendEncode(e.b, b)
	e.close(s)
}

// open writes tag and one byte of room for a length, and returns where
// the field's content starts; close writes the content's length there.
func (e *wireEncoder) open(tag byte) int {
	e.b = append(e.b, tag, 0)
	return len(e.b)
}

func (e *wireEncoder) close(start int) {
	n := len(e.b) - start
	if n < 1<<7 {
		e.b[start-1] = byte(n) //nolint:gosec // A length, below 128.
		return
	}
	// A longer length: move the content up to make room for it.
	extra := protowire.SizeVarint(uint64(n)) - 1
	e.b = slices.Grow(e.b, extra)[:len(e.b)+extra]
	copy(e.b[start+extra:], e.b[start:start+n])
	protowire.AppendVarint(e.b[:start-1], uint64(n))
}

// A member is a Struct member being written: where it starts, and where
// its entry's and its value's contents start.
type member struct{ at, entry, value int }

// member starts the member k; its Value is written next, then endMember.
func (e *wireEncoder) member(k string) member {
	at := len(e.b)
	entry := e.open(tagRepeated)
	e.b = protowire.AppendString(append(e.b, tagEntryKey), k)
	return member{at: at, entry: entry, value: e.open(tagEntryValue)}
}

// endMember ends m, or drops it if it is a null creationTimestamp in an
// object being cleaned.
func (e *wireEncoder) endMember(m member, k string, clean bool) {
	if clean && k == memberCreationTimestamp && len(e.b)-m.value == 2 && e.b[m.value] == tagNull {
		e.b = e.b[:m.at]
		return
	}
	e.close(m.value)
	e.close(m.entry)
}

// writeMap writes the Struct of a map whose entries fill appends to
// stack: sorted by key, as a deterministic encoding orders them, with put
// writing each value. top drops a status member.
func writeMap[V any](e *wireEncoder, stack *[]entry[V], fill func([]entry[V]) []entry[V], clean, top bool, put func(V) error) error {
	base := len(*stack)
	*stack = fill(*stack)
	n := len(sortEntries((*stack)[base:]))
	s := e.open(tagStruct)
	for i := range n {
		// Read from the stack each time: the maps in the values append
		// to it, and may move it.
		x := (*stack)[base+i]
		if top && x.k == memberStatus {
			continue
		}
		m := e.member(x.k)
		if err := put(x.v); err != nil {
			return err
		}
		e.endMember(m, x.k, clean)
	}
	*stack = (*stack)[:base]
	e.close(s)
	return nil
}

// sortEntries sorts a map's entries by key and returns them, with keys
// that are not valid UTF-8 made valid (validString): if two keys then
// collide, encoding/json writes both, in the order of the keys before,
// and decoding keeps the last.
func sortEntries[V any](es []entry[V]) []entry[V] {
	byKey := func(a, b entry[V]) int { return strings.Compare(a.k, b.k) }
	slices.SortFunc(es, byKey)
	if !slices.ContainsFunc(es, func(x entry[V]) bool { return !utf8.ValidString(x.k) }) {
		return es
	}
	for i := range es {
		es[i].k = validString(es[i].k)
	}
	slices.SortStableFunc(es, byKey)
	out := es[:0]
	for i := range es {
		if i+1 < len(es) && es[i+1].k == es[i].k {
			continue
		}
		out = append(out, es[i])
	}
	return out
}

// validString is s with each byte of invalid UTF-8 replaced by U+FFFD, as
// encoding/json writes it.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
