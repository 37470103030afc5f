package structenc

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// appendStruct appends the encoding of the Struct that v's JSON encoding
// decodes to (v must encode as a JSON object), by walking v with
// encoding/json's rules instead of writing and parsing JSON text.
//
// The walk follows encoding/json (Go 1.26) for structs (field names, tags,
// embedding and its conflicts, omitempty, omitzero), pointers, interfaces,
// strings, booleans, integers, float64s, string-keyed maps, slices and
// []byte (base64). Every other value, for example one whose type has its
// own MarshalJSON or MarshalText, an array, a float32, a map with other
// keys or a struct with a ",string" field, is encoded by encoding/json
// itself and decoded, so it cannot differ either; it is only slower.
func (e *wireEncoder) appendStruct(b []byte, v any, desired bool) ([]byte, error) {
	start := len(b)
	e.b, e.strs, e.bytes, e.anys = b, e.strs[:0], e.bytes[:0], e.anys[:0]
	err := e.walk(reflect.ValueOf(v), desired, desired, false)
	b, e.b = e.b, nil
	if err != nil {
		return b[:start], err
	}
	if b[start] != tagStruct {
		return b[:start], errors.Errorf("cannot encode %T as a Struct: it is no JSON object", v)
	}
	// What follows the Value's tag and length is the Struct's encoding.
	_, k := protowire.ConsumeVarint(b[start+1:])
	copy(b[start:], b[start+1+k:])
	return b[:len(b)-1-k], nil
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// walk writes one value. clean drops null creationTimestamps, top the
// status too; inArray is true for a list's elements.
func (e *wireEncoder) walk(v reflect.Value, clean, top, inArray bool) error {
	if !v.IsValid() {
		e.null()
		return nil
	}
	return e.walkInfo(v, cachedTypeInfo(v.Type()), clean, top, inArray)
}

// walkInfo is walk with v's typeInfo.
func (e *wireEncoder) walkInfo(v reflect.Value, info *typeInfo, clean, top, inArray bool) error {
	if info.direct != nil {
		return info.direct(e, v, clean, top, inArray)
	}
	if info.addrMarshaler && v.CanAddr() {
		if info.addrDirect != nil {
			return info.addrDirect(e, v.Addr(), clean, top, inArray)
		}
		return e.viaJSON(v.Addr(), clean, top, inArray)
	}
	if info.marshaler {
		return e.viaJSON(v, clean, top, inArray)
	}
	switch info.kind {
	case reflect.Bool, reflect.String, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint8:
		if e.scalar(v, info.kind) {
			return nil
		}
	case reflect.Interface:
		if v.IsNil() {
			e.null()
			return nil
		}
		return e.walk(v.Elem(), clean, top, inArray)
	case reflect.Pointer:
		if v.IsNil() {
			e.null()
			return nil
		}
		return e.walkInfo(v.Elem(), info.elemInfo(), clean, top, inArray)
	case reflect.Struct:
		if info.fieldsOK {
			return e.walkStruct(v, info, clean, top)
		}
	case reflect.Map:
		if info.stringKeys {
			return e.walkMap(v, info, clean, top)
		}
	case reflect.Slice:
		switch {
		case v.IsNil():
			e.null()
			return nil
		case info.bytes:
			e.base64(v.Bytes())
			return nil
		case info.elemKind != reflect.Uint8:
			return e.walkSlice(v, info, clean && !inArray)
		}
	default:
		// Left to encoding/json below.
	}
	// Anything else (and Inf and NaN, for encoding/json's error).
	return e.viaJSON(v, clean, top, inArray)
}

// scalar writes a boolean, string, integer or float64 of the given
// kind, and reports whether it did: encoding/json rejects an infinite or
// NaN float64.
func (e *wireEncoder) scalar(v reflect.Value, kind reflect.Kind) bool {
	switch kind {
	case reflect.Bool:
		e.boolean(v.Bool())
	case reflect.String:
		e.str(validString(v.String()))
	case reflect.Float64:
		f := v.Float()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return false
		}
		e.number(f)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.number(float64(v.Int()))
	default: // the unsigned integers
		e.number(float64(v.Uint()))
	}
	return true
}

func implementsMarshaler(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Implements(textMarshalerType)
}

// typeInfo is what the walk needs to know of a type.
type typeInfo struct {
	typ  reflect.Type
	kind reflect.Kind
	// addrMarshaler: a pointer to the (non-pointer) type has MarshalJSON
	// or MarshalText, which encoding/json uses on addressable values.
	addrMarshaler bool
	// marshaler: the type itself has MarshalJSON or MarshalText.
	marshaler bool
	// direct and addrDirect convert the type, or an addressable value of
	// it, without encoding/json (see directFuncs).
	direct, addrDirect directFunc
	// fields of a struct, and their types' typeInfos once known; fieldsOK
	// is false for structs with a ",string" field, which the walk leaves
	// to encoding/json. byName are the fields' indexes in the order of
	// their names, the order of a deterministic encoding.
	fields     []field
	fieldInfos []atomic.Pointer[typeInfo]
	fieldsOK   bool
	byName     []int
	// stringKeys: a map whose keys are strings.
	stringKeys bool
	// elemKind is a slice's element kind; bytes a slice encoding/json
	// writes as base64.
	elemKind reflect.Kind
	bytes    bool
	// elem is the typeInfo of a pointer's, slice's or map's element.
	elem atomic.Pointer[typeInfo]
}

func (i *typeInfo) elemInfo() *typeInfo {
	if e := i.elem.Load(); e != nil {
		return e
	}
	e := cachedTypeInfo(i.typ.Elem())
	i.elem.Store(e)
	return e
}

func (i *typeInfo) fieldInfo(n int, v reflect.Value) *typeInfo {
	if f := i.fieldInfos[n].Load(); f != nil {
		return f
	}
	f := cachedTypeInfo(v.Type())
	i.fieldInfos[n].Store(f)
	return f
}

var typeCache sync.Map // map[reflect.Type]*typeInfo

func cachedTypeInfo(t reflect.Type) *typeInfo {
	if i, ok := typeCache.Load(t); ok {
		return i.(*typeInfo) //nolint:forcetypeassert // Only *typeInfos are stored.
	}
	info := &typeInfo{
		typ:           t,
		kind:          t.Kind(),
		addrMarshaler: t.Kind() != reflect.Pointer && implementsMarshaler(reflect.PointerTo(t)),
		marshaler:     implementsMarshaler(t),
	}
	info.direct, info.addrDirect = directFuncsFor(t)
	switch t.Kind() {
	case reflect.Struct:
		info.fields = typeFields(t)
		info.fieldInfos = make([]atomic.Pointer[typeInfo], len(info.fields))
		info.fieldsOK = !slices.ContainsFunc(info.fields, func(f field) bool { return f.quoted })
		info.byName = make([]int, len(info.fields))
		for i := range info.byName {
			info.byName[i] = i
		}
		slices.SortFunc(info.byName, func(a, b int) int { return strings.Compare(info.fields[a].name, info.fields[b].name) })
	case reflect.Map:
		info.stringKeys = t.Key().Kind() == reflect.String
	case reflect.Slice:
		info.elemKind = t.Elem().Kind()
		info.bytes = info.elemKind == reflect.Uint8 && !implementsMarshaler(reflect.PointerTo(t.Elem()))
	default:
		// Nothing more to know.
	}
	typeCache.Store(t, info)
	return info
}

// viaJSON writes a value as encoding/json encodes it, decoded. A pointer
// to an addressable value makes encoding/json use the same
// pointer-receiver methods the walk would.
func (e *wireEncoder) viaJSON(v reflect.Value, clean, top, inArray bool) error {
	if v.Kind() != reflect.Pointer && v.CanAddr() {
		v = v.Addr()
	}
	if !v.CanInterface() {
		return errors.Errorf("cannot encode %s: an unexported field", v.Type())
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	var decoded any
	if err := json.Unmarshal(b, &decoded); err != nil {
		return errors.Wrapf(err, "cannot decode the JSON encoding of %s", v.Type())
	}
	return e.walk(reflect.ValueOf(decoded), clean, top, inArray)
}

func (e *wireEncoder) walkStruct(v reflect.Value, info *typeInfo, clean, top bool) error {
	s := e.open(tagStruct)
	for _, i := range info.byName {
		f := &info.fields[i]
		fv, ok := f.value(v)
		if !ok || top && f.name == memberStatus {
			continue
		}
		m := e.member(f.name)
		if err := e.walkInfo(fv, info.fieldInfo(i, fv), clean, false, false); err != nil {
			return err
		}
		e.endMember(m, f.name, clean)
	}
	e.close(s)
	return nil
}

func (e *wireEncoder) walkMap(v reflect.Value, info *typeInfo, clean, top bool) error {
	if v.IsNil() {
		e.null()
		return nil
	}
	// The common map types without reflection, which allocates for each
	// key and value.
	if v.CanInterface() {
		switch m := v.Interface().(type) {
		case map[string]string:
			return writeMap(e, &e.strs, appendEntries(m), clean, top, func(s string) error {
				e.str(validString(s))
				return nil
			})
		case map[string][]byte:
			return writeMap(e, &e.bytes, appendEntries(m), clean, top, func(b []byte) error {
				if b == nil {
					e.null()
					return nil
				}
				e.base64(b)
				return nil
			})
		case map[string]any:
			return e.anyMap(m, clean, top)
		}
	}
	// Any other map through its values' reflect.Values, apart from the
	// stacks, which hold the common types only.
	elem := info.elemInfo()
	var es []entry[reflect.Value]
	fill := func(es []entry[reflect.Value]) []entry[reflect.Value] {
		es = slices.Grow(es, v.Len())
		for it := v.MapRange(); it.Next(); {
			es = append(es, entry[reflect.Value]{k: it.Key().String(), v: it.Value()})
		}
		return es
	}
	return writeMap(e, &es, fill, clean, top, func(x reflect.Value) error {
		return e.walkInfo(x, elem, clean, false, false)
	})
}

// appendEntries returns a fill for writeMap that appends m's entries.
func appendEntries[V any](m map[string]V) func([]entry[V]) []entry[V] {
	return func(es []entry[V]) []entry[V] {
		for k, v := range m {
			es = append(es, entry[V]{k: k, v: v})
		}
		return es
	}
}

// walkAny is walk for an element of a map[string]any or []any, such as
// an unstructured object's, with its common types switched on rather
// than reflected.
func (e *wireEncoder) walkAny(x any, clean, inArray bool) error {
	switch x := x.(type) {
	case nil:
		e.null()
		return nil
	case string:
		e.str(validString(x))
		return nil
	case bool:
		e.boolean(x)
		return nil
	case int64:
		e.number(float64(x))
		return nil
	case map[string]any:
		return e.anyMap(x, clean, false)
	}
	return e.walk(reflect.ValueOf(x), clean, false, inArray)
}

// anyMap writes a map[string]any, such as an unstructured object's.
func (e *wireEncoder) anyMap(m map[string]any, clean, top bool) error {
	return writeMap(e, &e.anys, appendEntries(m), clean, top, func(x any) error {
		return e.walkAny(x, clean, false)
	})
}

func anySlice(v reflect.Value) ([]any, bool) {
	if !v.CanInterface() {
		return nil, false
	}
	return reflect.TypeAssert[[]any](v)
}

func (e *wireEncoder) walkSlice(v reflect.Value, info *typeInfo, clean bool) error {
	l := e.open(tagList)
	if a, ok := anySlice(v); ok {
		for _, x := range a {
			at := e.open(tagRepeated)
			if err := e.walkAny(x, clean, true); err != nil {
				return err
			}
			e.close(at)
		}
		e.close(l)
		return nil
	}
	elem := info.elemInfo()
	for i := range v.Len() {
		at := e.open(tagRepeated)
		if err := e.walkInfo(v.Index(i), elem, clean, false, true); err != nil {
			return err
		}
		e.close(at)
	}
	e.close(l)
	return nil
}
