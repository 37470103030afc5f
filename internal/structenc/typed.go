package structenc

import (
	"cmp"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

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
			return writeMap(e, &e.anys, appendEntries(m), clean, top, func(x any) error {
				return e.walkAny(x, clean, false)
			})
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
		return writeMap(e, &e.anys, appendEntries(x), clean, false, func(x any) error {
			return e.walkAny(x, clean, false)
		})
	}
	return e.walk(reflect.ValueOf(x), clean, false, inArray)
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

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	default:
		return false
	}
}

// A field is one JSON object member of a struct, as encoding/json's
// typeFields finds it.
type field struct {
	name      string
	tag       bool
	index     []int
	typ       reflect.Type
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool
	quoted    bool
}

// value is the field's value in v, a struct of the type it is a field
// of, and whether encoding/json writes it: not if it is omitted, or in an
// embedded struct a nil pointer leaves out.
func (f *field) value(v reflect.Value) (reflect.Value, bool) {
	for _, x := range f.index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	if (f.omitEmpty && isEmptyValue(v)) || (f.omitZero && (f.isZero == nil && v.IsZero() || (f.isZero != nil && f.isZero(v)))) {
		return v, false
	}
	return v, true
}

type isZeroer interface{ IsZero() bool }

var isZeroerType = reflect.TypeFor[isZeroer]()

// typeFields is encoding/json's typeFields (Go 1.26), without what only
// encoding needs.
//
//nolint:gocognit,funlen // A port of encoding/json's typeFields kept close to the original so the two can be compared.
func typeFields(t reflect.Type) []field {
	current := []field{}
	next := []field{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []field
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					t := sf.Type
					if t.Kind() == reflect.Pointer {
						t = t.Elem()
					}
					if !sf.IsExported() && t.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := make([]int, len(f.index)+1)
				copy(index, f.index)
				index[len(f.index)] = i
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if hasOption(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool,
						reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64,
						reflect.String:
						quoted = true
					default:
						// Other kinds ignore ",string".
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					fl := field{
						name: name, tag: tagged, index: index, typ: ft,
						omitEmpty: hasOption(opts, "omitempty"), omitZero: hasOption(opts, "omitzero"), quoted: quoted,
					}
					if fl.omitZero {
						fl.isZero = zeroFunc(sf.Type)
					}
					fields = append(fields, fl)
					if count[f.typ] > 1 {
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, field{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tag != b.tag {
			if a.tag {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		// The dominant field of those named alike: fields are sorted by
		// depth, then tag; two at the same depth and tagging hide each
		// other.
		if dup := fields[i:j]; len(dup) == 1 || len(dup[0].index) != len(dup[1].index) || dup[0].tag != dup[1].tag {
			out = append(out, dup[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

// zeroFunc is encoding/json's IsZero method test for omitzero, or nil to
// use reflect's IsZero.
func zeroFunc(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if v.IsNil() || (v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) {
				return true
			}
			return v.Interface().(isZeroer).IsZero() //nolint:forcetypeassert // Checked by Implements.
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Interface().(isZeroer).IsZero() //nolint:forcetypeassert // Checked by Implements.
		}
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.Interface().(isZeroer).IsZero() //nolint:forcetypeassert // Checked by Implements.
		}
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				v2 := reflect.New(v.Type()).Elem()
				v2.Set(v)
				v = v2
			}
			return v.Addr().Interface().(isZeroer).IsZero() //nolint:forcetypeassert // Checked by Implements.
		}
	}
	return nil
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// isValidTag is encoding/json's test of a tag name.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
