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
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// typedToStruct converts a typed value that encodes as a JSON object to
// the Struct its JSON encoding decodes to (see jsonToStruct), by walking
// it with encoding/json's rules instead of writing and parsing JSON text.
//
// The walk follows encoding/json (Go 1.26) for structs (field names, tags,
// embedding and its conflicts, omitempty, omitzero), pointers, interfaces,
// strings, booleans, integers, float64s, string-keyed maps, slices and
// []byte (base64). Every other value, for example one whose type has its
// own MarshalJSON or MarshalText, an array, a float32, a map with other
// keys or a struct with a ",string" field, is encoded by encoding/json
// itself and decoded, so it cannot differ either; it is only slower.
func (d *structDecoder) typedToStruct(v any, desired bool) (*structpb.Struct, error) {
	val, err := d.walk(reflect.ValueOf(v), desired, desired, false)
	if err != nil {
		return nil, err
	}
	s := val.GetStructValue()
	if s == nil {
		return nil, d.errorf("want an object")
	}
	return s, nil
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// walk converts one value. clean and top are jsonToStruct's cleanup;
// inArray is true for a list's elements.
func (d *structDecoder) walk(v reflect.Value, clean, top, inArray bool) (*structpb.Value, error) {
	if !v.IsValid() {
		return d.nullValue(), nil
	}
	return d.walkInfo(v, cachedTypeInfo(v.Type()), clean, top, inArray)
}

// walkInfo is walk with v's typeInfo.
func (d *structDecoder) walkInfo(v reflect.Value, info *typeInfo, clean, top, inArray bool) (*structpb.Value, error) {
	if info.direct != nil {
		return info.direct(d, v, clean, top, inArray)
	}
	if info.addrMarshaler && v.CanAddr() {
		if info.addrDirect != nil {
			return info.addrDirect(d, v.Addr(), clean, top, inArray)
		}
		return d.viaJSON(v.Addr(), clean, top, inArray)
	}
	if info.marshaler {
		return d.viaJSON(v, clean, top, inArray)
	}
	switch info.kind {
	case reflect.Bool:
		return d.boolValue(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return d.numberValue(float64(v.Int())), nil
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint8:
		return d.numberValue(float64(v.Uint())), nil
	case reflect.Float64:
		if f := v.Float(); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return d.numberValue(f), nil
		}
	case reflect.String:
		return d.stringValue(validString(v.String())), nil
	case reflect.Interface:
		if v.IsNil() {
			return d.nullValue(), nil
		}
		return d.walk(v.Elem(), clean, top, inArray)
	case reflect.Pointer:
		if v.IsNil() {
			return d.nullValue(), nil
		}
		return d.walkInfo(v.Elem(), info.elemInfo(), clean, top, inArray)
	case reflect.Struct:
		if info.fieldsOK {
			return d.walkStruct(v, info, clean, top)
		}
	case reflect.Map:
		if info.stringKeys {
			return d.walkMap(v, info, clean, top)
		}
	case reflect.Slice:
		switch {
		case v.IsNil():
			return d.nullValue(), nil
		case info.bytes:
			return d.stringValue(base64String(v.Bytes())), nil
		case info.elemKind != reflect.Uint8:
			return d.walkSlice(v, info, clean && !inArray)
		}
	default:
		// Left to encoding/json below.
	}
	// Anything else (and Inf and NaN, for encoding/json's error).
	return d.viaJSON(v, clean, top, inArray)
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
	// to encoding/json.
	fields     []field
	fieldInfos []atomic.Pointer[typeInfo]
	fieldsOK   bool
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

// viaJSON converts a value through encoding/json and the decoder. A
// pointer to an addressable value makes encoding/json use the same
// pointer-receiver methods the walk would.
func (d *structDecoder) viaJSON(v reflect.Value, clean, top, inArray bool) (*structpb.Value, error) {
	if v.Kind() != reflect.Pointer && v.CanAddr() {
		v = v.Addr()
	}
	if !v.CanInterface() {
		return nil, errors.Errorf("cannot encode %s: an unexported field", v.Type())
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	saved, savedI := d.b, d.i
	defer func() { d.b, d.i = saved, savedI }()
	d.b, d.i = b, 0
	d.space()
	if top && d.i < len(d.b) && d.b[d.i] == '{' {
		s, err := d.object(clean, true)
		if err != nil {
			return nil, err
		}
		return d.structValue(s), nil
	}
	return d.value(clean, inArray)
}

// validString is s with each byte of invalid UTF-8 replaced by U+FFFD, as
// encoding/json writes it.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

func (d *structDecoder) walkStruct(v reflect.Value, info *typeInfo, clean, top bool) (*structpb.Value, error) {
	s := d.structs.next()
	// Most of a Kubernetes struct's fields are usually omitted: a hint of
	// all of them would allocate far more than is used.
	s.Fields = make(map[string]*structpb.Value, min(len(info.fields), 8))
	for i := range info.fields {
		f := &info.fields[i]
		fv, ok := f.value(v)
		if !ok || top && f.name == memberStatus {
			continue
		}
		e, err := d.walkInfo(fv, info.fieldInfo(i, fv), clean, false, false)
		if err != nil {
			return nil, err
		}
		if clean && f.name == memberCreationTimestamp && isNull(e) {
			continue
		}
		s.Fields[f.name] = e
	}
	return d.structValue(s), nil
}

func (d *structDecoder) walkMap(v reflect.Value, info *typeInfo, clean, top bool) (*structpb.Value, error) {
	if v.IsNil() {
		return d.nullValue(), nil
	}
	if x, ok := d.sharedMap(v, top); ok {
		return x, nil
	}
	s := d.structs.next()
	s.Fields = make(map[string]*structpb.Value, v.Len())
	// The common map types without reflection, which allocates for each
	// key and value.
	if v.CanInterface() {
		switch m := v.Interface().(type) {
		case map[string]string:
			for k, e := range m {
				setMember(s, validString(k), d.stringValue(validString(e)), clean, top)
			}
			return d.structValue(s), nil
		case map[string][]byte:
			for k, e := range m {
				x := d.nullValue()
				if e != nil {
					x = d.stringValue(base64String(e))
				}
				setMember(s, validString(k), x, clean, top)
			}
			return d.structValue(s), nil
		case map[string]any:
			for k, e := range m {
				x, err := d.walkAny(e, clean, false)
				if err != nil {
					return nil, err
				}
				setMember(s, validString(k), x, clean, top)
			}
			return d.structValue(s), nil
		}
	}
	elem := info.elemInfo()
	it := v.MapRange()
	for it.Next() {
		e, err := d.walkInfo(it.Value(), elem, clean, false, false)
		if err != nil {
			return nil, err
		}
		setMember(s, validString(it.Key().String()), e, clean, top)
	}
	return d.structValue(s), nil
}

// setMember sets a map's member k in s, but for what a desired object
// drops: the top-level status and a null creationTimestamp.
func setMember(s *structpb.Struct, k string, e *structpb.Value, clean, top bool) {
	if top && k == memberStatus || clean && k == memberCreationTimestamp && isNull(e) {
		return
	}
	s.Fields[k] = e
}

// walkAny is walk for an element of a map[string]any or []any, such as
// an unstructured object's, with its common types switched on rather
// than reflected.
func (d *structDecoder) walkAny(e any, clean, inArray bool) (*structpb.Value, error) {
	switch x := e.(type) {
	case nil:
		return d.nullValue(), nil
	case string:
		return d.stringValue(validString(x)), nil
	case bool:
		return d.boolValue(x), nil
	case int64:
		return d.numberValue(float64(x)), nil
	case map[string]any:
		return d.walkMap(reflect.ValueOf(x), cachedTypeInfo(mapStringAnyType), clean, false)
	}
	return d.walk(reflect.ValueOf(e), clean, false, inArray)
}

var mapStringAnyType = reflect.TypeFor[map[string]any]()

func anySlice(v reflect.Value) ([]any, bool) {
	if !v.CanInterface() {
		return nil, false
	}
	return reflect.TypeAssert[[]any](v)
}

func (d *structDecoder) walkSlice(v reflect.Value, info *typeInfo, clean bool) (*structpb.Value, error) {
	l := d.lists.next()
	l.Values = make([]*structpb.Value, 0, v.Len())
	if a, ok := anySlice(v); ok {
		for _, e := range a {
			x, err := d.walkAny(e, clean, true)
			if err != nil {
				return nil, err
			}
			l.Values = append(l.Values, x)
		}
		return d.listValue(l), nil
	}
	elem := info.elemInfo()
	for i := range v.Len() {
		x, err := d.walkInfo(v.Index(i), elem, clean, false, true)
		if err != nil {
			return nil, err
		}
		l.Values = append(l.Values, x)
	}
	return d.listValue(l), nil
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
