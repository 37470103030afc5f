package structenc

import (
	"encoding/base64"
	"hash/maphash"
	"reflect"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// stringMapSeed seeds the hashes that find equal string maps. The hash
// only picks candidates, each compared in full, so the seed changes
// nothing in the output.
var stringMapSeed = maphash.MakeSeed()

// sharedMap is sharedStringMap or sharedAnyStringMap for a map of either
// type; it reports false for any other, and for a top-level object, whose
// status a desired object drops.
func (d *structDecoder) sharedMap(v reflect.Value, top bool) (*structpb.Value, bool) {
	if top || !v.CanInterface() {
		return nil, false
	}
	switch m := v.Interface().(type) {
	case map[string]string:
		return d.sharedStringMap(m)
	case map[string]any:
		return d.sharedAnyStringMap(m)
	}
	return nil, false
}

// sharedStringMap converts a map[string]string (labels, selectors,
// annotations, which recur across a response's objects) to a Struct
// shared by every equal map in the documents this decoder converts: a
// response is only encoded, never changed in place. It reports false for
// a map with invalid UTF-8, which it leaves to the caller.
func (d *structDecoder) sharedStringMap(m map[string]string) (*structpb.Value, bool) {
	return sharedStrings(d, m, stringOf)
}

// sharedAnyStringMap is sharedStringMap for a map[string]any whose values
// are all strings, as an unstructured object's labels are; it reports
// false for any other.
func (d *structDecoder) sharedAnyStringMap(m map[string]any) (*structpb.Value, bool) {
	return sharedStrings(d, m, anyStringOf)
}

func stringOf(s string) (string, bool) { return s, true }

func anyStringOf(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

// sharedStrings shares the Struct of a map whose values str makes
// strings; it reports false if str cannot.
func sharedStrings[V any](d *structDecoder, m map[string]V, str func(V) (string, bool)) (*structpb.Value, bool) {
	var h uint64
	for k, v := range m {
		e, ok := str(v)
		if !ok {
			return nil, false
		}
		// Sums are independent of the maps' iteration order.
		h += maphash.String(stringMapSeed, k) ^ (maphash.String(stringMapSeed, e) * 0x9e3779b97f4a7c15)
	}
	h ^= uint64(len(m))
	// A shared Struct holds only valid UTF-8 (see below), so a map equal to
	// one is valid too and needs no check of its own.
	for _, c := range d.stringMaps[h] {
		if sameStrings(c.GetStructValue().GetFields(), m, str) {
			return c, true
		}
	}
	for k, v := range m {
		if e, _ := str(v); !utf8.ValidString(k) || !utf8.ValidString(e) {
			return nil, false
		}
	}
	s := d.structs.next()
	s.Fields = make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		e, _ := str(v)
		s.Fields[k] = d.stringValue(e)
	}
	x := d.structValue(s)
	if d.stringMaps == nil {
		// Sized once rather than grown through every doubling: of 32,
		// 64 and 128, 64 allocated least on the production example.
		d.stringMaps = make(map[uint64][]*structpb.Value, 64)
	}
	d.stringMaps[h] = append(d.stringMaps[h], x)
	return x, true
}

// sameStrings reports whether fields hold exactly m's values, made
// strings by str.
func sameStrings[V any](fields map[string]*structpb.Value, m map[string]V, str func(V) (string, bool)) bool {
	if len(fields) != len(m) {
		return false
	}
	for k, v := range m {
		e, ok := str(v)
		f, _ := fields[k].GetKind().(*structpb.Value_StringValue)
		if !ok || f == nil || f.StringValue != e {
			return false
		}
	}
	return true
}

// base64String is base64.StdEncoding.EncodeToString(b) in one allocation,
// not two: Secret data, a response's largest strings, is encoded once.
func base64String(b []byte) string {
	var sb strings.Builder
	sb.Grow(base64.StdEncoding.EncodedLen(len(b)))
	// Chunks of a multiple of 3 bytes encode without padding, so their
	// encodings join into the whole one.
	var buf [1024]byte
	for len(b) > 0 {
		n := min(len(b), 768)
		base64.StdEncoding.Encode(buf[:], b[:n])
		sb.Write(buf[:base64.StdEncoding.EncodedLen(n)])
		b = b[n:]
	}
	return sb.String()
}
