// Package exact tells whether two values are exactly the same, which is
// what a memo needs to reuse a result computed from one for the other.
package exact

import (
	"bytes"
	"math"
	"reflect"
)

// Same reports whether a and b hold exactly the same value: the same
// types all the way down, the same bits in every number (0 and -0
// differ), the same strings and bytes, nil where the other is nil, the
// same map members and list elements, unexported fields included. It is
// stricter than equality of their JSON, which is what makes it safe for a
// memo: whatever a conversion or an encoder reads (exported fields,
// marshalers' unexported state), it reads the same in both, so where Same
// says true both encode alike. Unlike reflect.DeepEqual it keeps no
// record of visited pointers, so values must not be cyclic (composed
// objects and configs are trees), and it allocates nothing for string,
// bytes and unstructured maps, so it costs a small part of an encoding.
func Same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() {
		return !va.IsValid() && !vb.IsValid()
	}
	return va.Type() == vb.Type() && same(va, vb)
}

// same is Same for two values of the same type.
//
//nolint:gocyclo,cyclop // One case per kind of value.
func same(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Complex64, reflect.Complex128:
		ca, cb := a.Complex(), b.Complex()
		return math.Float64bits(real(ca)) == math.Float64bits(real(cb)) &&
			math.Float64bits(imag(ca)) == math.Float64bits(imag(cb))
	case reflect.String:
		return a.String() == b.String()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		return a.Pointer() == b.Pointer() || same(a.Elem(), b.Elem())
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		ea, eb := a.Elem(), b.Elem()
		return ea.Type() == eb.Type() && same(ea, eb)
	case reflect.Struct:
		for i := range a.NumField() {
			if !same(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !same(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		return sameSlice(a, b)
	case reflect.Map:
		return sameMap(a, b)
	default:
		// Functions, channels and unsafe pointers: the same only when
		// both are nil; composed objects hold none.
		return a.IsNil() && b.IsNil()
	}
}

// sameSlice is same for slices: a nil slice encodes as null, an empty one
// as [], so nil is only the same as nil.
func sameSlice(a, b reflect.Value) bool {
	if a.IsNil() || b.IsNil() {
		return a.IsNil() && b.IsNil()
	}
	if a.Len() != b.Len() {
		return false
	}
	if a.Type().Elem().Kind() == reflect.Uint8 {
		return bytes.Equal(a.Bytes(), b.Bytes())
	}
	for i := range a.Len() {
		if !same(a.Index(i), b.Index(i)) {
			return false
		}
	}
	return true
}

// sameMap is same for maps: nil only the same as nil, and the same
// members.
func sameMap(a, b reflect.Value) bool {
	if a.IsNil() || b.IsNil() {
		return a.IsNil() && b.IsNil()
	}
	if a.Len() != b.Len() {
		return false
	}
	if a.Pointer() == b.Pointer() {
		return true
	}
	if a.CanInterface() {
		switch x := a.Interface().(type) {
		case map[string]string:
			y, ok := reflect.TypeAssert[map[string]string](b)
			return ok && sameStringMaps(x, y)
		case map[string][]byte:
			y, ok := reflect.TypeAssert[map[string][]byte](b)
			return ok && sameBytesMaps(x, y)
		case map[string]any:
			y, ok := reflect.TypeAssert[map[string]any](b)
			return ok && sameAnyMaps(x, y)
		}
	}
	it := a.MapRange()
	for it.Next() {
		vb := b.MapIndex(it.Key())
		if !vb.IsValid() || !same(it.Value(), vb) {
			return false
		}
	}
	return true
}

func sameStringMaps(a, b map[string]string) bool {
	for k, va := range a {
		if vb, ok := b[k]; !ok || va != vb {
			return false
		}
	}
	return true
}

func sameBytesMaps(a, b map[string][]byte) bool {
	for k, va := range a {
		vb, ok := b[k]
		if !ok || (va == nil) != (vb == nil) || !bytes.Equal(va, vb) {
			return false
		}
	}
	return true
}

func sameAnyMaps(a, b map[string]any) bool {
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !sameAny(va, vb) {
			return false
		}
	}
	return true
}

// sameAny is Same for the values unstructured objects hold, without
// reflection for the common ones.
func sameAny(a, b any) bool {
	switch va := a.(type) {
	case string:
		vb, ok := b.(string)
		return ok && va == vb
	case bool:
		vb, ok := b.(bool)
		return ok && va == vb
	case int64:
		vb, ok := b.(int64)
		return ok && va == vb
	case float64:
		vb, ok := b.(float64)
		return ok && math.Float64bits(va) == math.Float64bits(vb)
	case map[string]any:
		vb, ok := b.(map[string]any)
		return ok && (va == nil) == (vb == nil) && len(va) == len(vb) && sameAnyMaps(va, vb)
	case []any:
		vb, ok := b.([]any)
		if !ok || (va == nil) != (vb == nil) || len(va) != len(vb) {
			return false
		}
		for i := range va {
			if !sameAny(va[i], vb[i]) {
				return false
			}
		}
		return true
	default:
		return Same(a, b)
	}
}
