package function

import (
	"encoding/base64"
	"math"
	"reflect"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// matches reports whether typedToStruct(v, desired) would give a Struct
// equal to want, without building one: it follows the walk (typed.go)
// step by step and compares where the walk would allocate. It is exact
// where it says true; where it is unsure (a value the walk leaves to
// encoding/json) it converts that one value
// and compares the result, or says false, which only costs the caller a
// conversion.
func (d *structDecoder) matches(v any, want *structpb.Struct, desired bool) bool {
	if want == nil {
		return false
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return false
	}
	return d.matchInfo(rv, cachedTypeInfo(rv.Type()), structValueOf(want), desired, desired, false)
}

// structValueOf wraps s as a Value for the walk's comparisons; it is
// never encoded.
func structValueOf(s *structpb.Struct) *structpb.Value {
	return &structpb.Value{Kind: &structpb.Value_StructValue{StructValue: s}}
}

// nullMatch is what a null member is compared with.
var nullMatch = structpb.NewNullValue()

// match is walk's comparison.
func (d *structDecoder) match(v reflect.Value, want *structpb.Value, clean, top, inArray bool) bool {
	if !v.IsValid() {
		return isNull(want)
	}
	return d.matchInfo(v, cachedTypeInfo(v.Type()), want, clean, top, inArray)
}

// matchInfo is walkInfo's comparison.
func (d *structDecoder) matchInfo(v reflect.Value, info *typeInfo, want *structpb.Value, clean, top, inArray bool) bool {
	if info.direct != nil || info.addrMarshaler && v.CanAddr() || info.marshaler {
		return d.matchMarshaler(v, info, want, clean, top, inArray)
	}
	switch info.kind {
	case reflect.Bool:
		w, ok := want.GetKind().(*structpb.Value_BoolValue)
		return ok && w.BoolValue == v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return numberIs(want, float64(v.Int()))
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint8:
		return numberIs(want, float64(v.Uint()))
	case reflect.Float64:
		if f := v.Float(); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return numberIs(want, f)
		}
	case reflect.String:
		return stringIs(want, v.String())
	case reflect.Interface:
		if v.IsNil() {
			return isNull(want)
		}
		return d.match(v.Elem(), want, clean, top, inArray)
	case reflect.Pointer:
		if v.IsNil() {
			return isNull(want)
		}
		return d.matchInfo(v.Elem(), info.elemInfo(), want, clean, top, inArray)
	case reflect.Struct:
		if info.fieldsOK {
			return d.matchStruct(v, info, want, clean, top)
		}
	case reflect.Map:
		if info.stringKeys {
			return d.matchMap(v, info, want, clean, top)
		}
	case reflect.Slice:
		switch {
		case v.IsNil():
			return isNull(want)
		case info.bytes:
			return base64Is(want, v.Bytes())
		case info.elemKind != reflect.Uint8:
			return d.matchSlice(v, info, want, clean && !inArray)
		}
	default:
	}
	return d.convertAndCompare(v, info, want, clean, top, inArray)
}

var (
	unstructuredPtrType = reflect.TypeFor[*unstructured.Unstructured]()
	intOrStringType     = reflect.TypeFor[intstr.IntOrString]()
	intOrStringPtrType  = reflect.TypeFor[*intstr.IntOrString]()
)

// matchMarshaler compares a value of a type with its own encoding: the
// types directFuncFor converts most often without building anything, any
// other by converting it.
func (d *structDecoder) matchMarshaler(v reflect.Value, info *typeInfo, want *structpb.Value, clean, top, inArray bool) bool {
	switch info.typ {
	case unstructuredPtrType:
		if v.IsNil() {
			return isNull(want)
		}
		u, _ := reflect.TypeAssert[*unstructured.Unstructured](v)
		return d.match(reflect.ValueOf(u.Object), want, clean, top, inArray)
	case intOrStringPtrType:
		if v.IsNil() {
			return isNull(want)
		}
		return d.matchInfo(v.Elem(), info.elemInfo(), want, clean, top, inArray)
	case intOrStringType:
		switch is, _ := reflect.TypeAssert[intstr.IntOrString](v); is.Type {
		case intstr.Int:
			return numberIs(want, float64(is.IntVal))
		case intstr.String:
			return stringIs(want, is.StrVal)
		}
	}
	return d.convertAndCompare(v, info, want, clean, top, inArray)
}

// convertAndCompare converts v as the walk does and compares: for the
// values the walk leaves to their own encodings, which are small.
func (d *structDecoder) convertAndCompare(v reflect.Value, info *typeInfo, want *structpb.Value, clean, top, inArray bool) bool {
	got, err := d.walkInfo(v, info, clean, top, inArray)
	return err == nil && proto.Equal(got, want) && sameSigns(got, want)
}

// sameSigns reports whether two equal Values' numbers have the same
// signs: proto.Equal counts 0 and -0 equal, which encode differently.
func sameSigns(a, b *structpb.Value) bool {
	switch x := a.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return math.Signbit(x.NumberValue) == math.Signbit(b.GetNumberValue())
	case *structpb.Value_StructValue:
		for k, e := range x.StructValue.GetFields() {
			if !sameSigns(e, b.GetStructValue().GetFields()[k]) {
				return false
			}
		}
	case *structpb.Value_ListValue:
		for i, e := range x.ListValue.GetValues() {
			if !sameSigns(e, b.GetListValue().GetValues()[i]) {
				return false
			}
		}
	}
	return true
}

func numberIs(want *structpb.Value, f float64) bool {
	w, ok := want.GetKind().(*structpb.Value_NumberValue)
	return ok && w.NumberValue == f && math.Signbit(w.NumberValue) == math.Signbit(f)
}

// stringIs compares as the walk converts: invalid UTF-8 replaced.
func stringIs(want *structpb.Value, s string) bool {
	w, ok := want.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return false
	}
	if utf8.ValidString(s) {
		return w.StringValue == s
	}
	return w.StringValue == validString(s)
}

// base64Is reports whether want is b's standard base64 encoding, encoding
// it in chunks rather than whole.
func base64Is(want *structpb.Value, b []byte) bool {
	w, ok := want.GetKind().(*structpb.Value_StringValue)
	if !ok || len(w.StringValue) != base64.StdEncoding.EncodedLen(len(b)) {
		return false
	}
	s := w.StringValue
	var buf [1024]byte
	for len(b) > 0 {
		n := min(len(b), 768)
		e := buf[:base64.StdEncoding.EncodedLen(n)]
		base64.StdEncoding.Encode(e, b[:n])
		if string(e) != s[:len(e)] {
			return false
		}
		s, b = s[len(e):], b[n:]
	}
	return true
}

// matchStruct is walkStruct's comparison: every member the walk would set
// is in want and matches, and want has no other.
func (d *structDecoder) matchStruct(v reflect.Value, info *typeInfo, want *structpb.Value, clean, top bool) bool {
	w, ok := want.GetKind().(*structpb.Value_StructValue)
	if !ok {
		return false
	}
	fields := w.StructValue.GetFields()
	n := 0
	for i := range info.fields {
		f := &info.fields[i]
		fv, ok := f.value(v)
		if !ok || top && f.name == memberStatus {
			continue
		}
		fi := info.fieldInfo(i, fv)
		e, ok := fields[f.name]
		switch {
		case !ok && clean && f.name == memberCreationTimestamp:
			// Dropped only if it is null.
			if !d.matchInfo(fv, fi, nullMatch, clean, false, false) {
				return false
			}
		case !ok || clean && f.name == memberCreationTimestamp && isNull(e) || !d.matchInfo(fv, fi, e, clean, false, false):
			return false
		default:
			n++
		}
	}
	return n == len(fields)
}

// matchMap is walkMap's comparison.
func (d *structDecoder) matchMap(v reflect.Value, info *typeInfo, want *structpb.Value, clean, top bool) bool {
	if v.IsNil() {
		return isNull(want)
	}
	w, ok := want.GetKind().(*structpb.Value_StructValue)
	if !ok {
		return false
	}
	m := memberMatcher{fields: w.StructValue.GetFields(), clean: clean, top: top}
	if v.CanInterface() {
		if matched, ok := d.matchCommonMap(v.Interface(), &m); ok {
			return matched
		}
	}
	elem := info.elemInfo()
	it := v.MapRange()
	for it.Next() {
		if w, ok := m.want(it.Key().String()); !ok || w != nil && !d.matchInfo(it.Value(), elem, w, clean, false, false) {
			return false
		}
	}
	return m.all()
}

// matchCommonMap is matchMap for the map types walkMap converts without
// reflection; it reports false for any other.
func (d *structDecoder) matchCommonMap(x any, m *memberMatcher) (matched, ok bool) {
	switch x := x.(type) {
	case map[string]string:
		for k, e := range x {
			if w, ok := m.want(k); !ok || w != nil && !stringIs(w, e) {
				return false, true
			}
		}
	case map[string][]byte:
		for k, e := range x {
			if w, ok := m.want(k); !ok || w != nil && !bytesIs(w, e) {
				return false, true
			}
		}
	case map[string]any:
		for k, e := range x {
			if w, ok := m.want(k); !ok || w != nil && !d.matchAny(e, w, m.clean, false) {
				return false, true
			}
		}
	default:
		return false, false
	}
	return m.all(), true
}

// bytesIs is base64Is for a map's member, null if nil.
func bytesIs(want *structpb.Value, b []byte) bool {
	if b == nil {
		return isNull(want)
	}
	return base64Is(want, b)
}

// memberMatcher compares a map's members with a Struct's fields, as
// setMember would set them.
type memberMatcher struct {
	fields     map[string]*structpb.Value
	clean, top bool
	n          int
}

// want returns the Value member k must equal, nil if setMember drops it
// whatever it is, or false if no value of member k can match.
func (m *memberMatcher) want(k string) (*structpb.Value, bool) {
	// As setMember sets it. Two keys that become the same one when made
	// valid are counted twice, so they match nothing, where the walk keeps
	// either: the caller converts them, as without a match.
	k = validString(k)
	if m.top && k == memberStatus {
		return nil, true
	}
	e, ok := m.fields[k]
	switch {
	case !ok && m.clean && k == memberCreationTimestamp:
		// Dropped only if it is null.
		return nullMatch, true
	case !ok || m.clean && k == memberCreationTimestamp && isNull(e):
		return nil, false
	}
	m.n++
	return e, true
}

// all reports whether every field was matched by a member.
func (m *memberMatcher) all() bool { return m.n == len(m.fields) }

// matchAny is walkAny's comparison.
func (d *structDecoder) matchAny(e any, want *structpb.Value, clean, inArray bool) bool {
	switch x := e.(type) {
	case nil:
		return isNull(want)
	case string:
		return stringIs(want, x)
	case bool:
		w, ok := want.GetKind().(*structpb.Value_BoolValue)
		return ok && w.BoolValue == x
	case int64:
		return numberIs(want, float64(x))
	case map[string]any:
		return d.matchMap(reflect.ValueOf(x), cachedTypeInfo(mapStringAnyType), want, clean, false)
	}
	return d.match(reflect.ValueOf(e), want, clean, false, inArray)
}

// matchSlice is walkSlice's comparison.
func (d *structDecoder) matchSlice(v reflect.Value, info *typeInfo, want *structpb.Value, clean bool) bool {
	w, ok := want.GetKind().(*structpb.Value_ListValue)
	if !ok || len(w.ListValue.GetValues()) != v.Len() {
		return false
	}
	values := w.ListValue.GetValues()
	if a, ok := anySlice(v); ok {
		for i, e := range a {
			if !d.matchAny(e, values[i], clean, true) {
				return false
			}
		}
		return true
	}
	elem := info.elemInfo()
	for i := range v.Len() {
		if !d.matchInfo(v.Index(i), elem, values[i], clean, false, true) {
			return false
		}
	}
	return true
}
