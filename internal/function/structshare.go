package function

import (
	"encoding/base64"
	"hash/maphash"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// stringMapSeed seeds the hashes that find equal string maps. The hash
// only picks candidates, each compared in full, so the seed changes
// nothing in the output.
var stringMapSeed = maphash.MakeSeed()

// sharedStringMap converts a map[string]string (labels, selectors,
// annotations, which recur across a response's objects) to a Struct
// shared by every equal map in the documents this decoder converts: a
// response is only encoded, never changed in place. It reports false for
// a map with invalid UTF-8, which it leaves to the caller.
func (d *structDecoder) sharedStringMap(m map[string]string) (*structpb.Value, bool) {
	return d.sharedStrings(len(m), func(yield func(k, e string) bool) bool {
		for k, e := range m {
			if !yield(k, e) {
				return false
			}
		}
		return true
	})
}

// sharedAnyStringMap is sharedStringMap for a map[string]any whose values
// are all strings, as an unstructured object's labels are; it reports
// false for any other.
func (d *structDecoder) sharedAnyStringMap(m map[string]any) (*structpb.Value, bool) {
	return d.sharedStrings(len(m), func(yield func(k, e string) bool) bool {
		for k, v := range m {
			e, ok := v.(string)
			if !ok || !yield(k, e) {
				return false
			}
		}
		return true
	})
}

// sharedStrings shares the Struct of a map of n strings, which all yields
// until yield or all itself stops (false: not shared).
func (d *structDecoder) sharedStrings(n int, all func(yield func(k, e string) bool) bool) (*structpb.Value, bool) {
	var h uint64
	ok := all(func(k, e string) bool {
		// Sums are independent of the maps' iteration order.
		h += maphash.String(stringMapSeed, k) ^ (maphash.String(stringMapSeed, e) * 0x9e3779b97f4a7c15)
		return utf8.ValidString(k) && utf8.ValidString(e)
	})
	if !ok {
		return nil, false
	}
	h ^= uint64(n)
	for _, c := range d.stringMaps[h] {
		if sameStrings(c.GetStructValue().GetFields(), n, all) {
			return c, true
		}
	}
	s := d.structs.next()
	s.Fields = make(map[string]*structpb.Value, n)
	all(func(k, e string) bool {
		s.Fields[k] = d.stringValue(e)
		return true
	})
	v := d.structValue(s)
	if d.stringMaps == nil {
		d.stringMaps = map[uint64][]*structpb.Value{}
	}
	d.stringMaps[h] = append(d.stringMaps[h], v)
	return v, true
}

// sameString reports whether v is the string e.
func sameString(v *structpb.Value, e string) bool {
	s, ok := v.GetKind().(*structpb.Value_StringValue)
	return ok && s.StringValue == e
}

// sameStrings reports whether fields hold exactly the n strings all
// yields.
func sameStrings(fields map[string]*structpb.Value, n int, all func(yield func(k, e string) bool) bool) bool {
	return len(fields) == n && all(func(k, e string) bool { return sameString(fields[k], e) })
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
