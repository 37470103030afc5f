package structenc

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A directFunc converts a value of a type with its own MarshalJSON to
// exactly what that MarshalJSON's output decodes to, without writing and
// parsing JSON text. Each is for one type, not one field: every field of
// that type, present or future, goes through it. Anything a directFunc is
// not sure of it leaves to viaJSON.
type directFunc func(e *wireEncoder, v reflect.Value, clean, top, inArray bool) error

// directFuncFor returns the directFunc of t, or nil. The types are the
// marshalers the objects the function composes use most: every container
// port and probe (IntOrString), every resource request (Quantity) and
// every object built as unstructured.
func directFuncFor(t reflect.Type) directFunc {
	switch t {
	case reflect.TypeFor[*unstructured.Unstructured]():
		return unstructuredValue
	case reflect.TypeFor[intstr.IntOrString]():
		return intOrStringValue
	case reflect.TypeFor[*intstr.IntOrString]():
		return nilOr(intOrStringValue)
	case reflect.TypeFor[resource.Quantity]():
		return quantityValue
	case reflect.TypeFor[*resource.Quantity]():
		return nilOr(quantityValue)
	}
	return nil
}

// directFuncsFor returns the directFunc of t, and the one of a pointer to
// t: encoding/json calls a pointer receiver's MarshalJSON on addressable
// values only.
func directFuncsFor(t reflect.Type) (direct, addrDirect directFunc) {
	direct = directFuncFor(t)
	if t.Kind() != reflect.Pointer {
		addrDirect = directFuncFor(reflect.PointerTo(t))
	}
	return direct, addrDirect
}

func nilOr(f directFunc) directFunc {
	return func(e *wireEncoder, v reflect.Value, clean, top, inArray bool) error {
		if v.IsNil() {
			e.null()
			return nil
		}
		return f(e, v.Elem(), clean, top, inArray)
	}
}

// unstructuredValue is (*Unstructured).MarshalJSON: its Object, encoded
// by encoding/json.
func unstructuredValue(e *wireEncoder, v reflect.Value, clean, top, inArray bool) error {
	if v.IsNil() {
		e.null()
		return nil
	}
	u, _ := reflect.TypeAssert[*unstructured.Unstructured](v)
	return e.walk(reflect.ValueOf(u.Object), clean, top, inArray)
}

// intOrStringValue is IntOrString.MarshalJSON.
func intOrStringValue(e *wireEncoder, v reflect.Value, clean, top, inArray bool) error {
	is, _ := reflect.TypeAssert[intstr.IntOrString](v)
	switch is.Type {
	case intstr.Int:
		e.number(float64(is.IntVal))
		return nil
	case intstr.String:
		e.str(validString(is.StrVal))
		return nil
	}
	// MarshalJSON's error, word for word.
	return e.viaJSON(v, clean, top, inArray)
}

// quantityValue is Quantity.MarshalJSON: its canonical string, written
// between quotes without escaping. A string that would need escaping
// (which a parsed or computed Quantity never holds) is left to
// encoding/json, which rejects it.
func quantityValue(e *wireEncoder, v reflect.Value, clean, top, inArray bool) error {
	// On a copy: String caches its result in the Quantity.
	q, _ := reflect.TypeAssert[resource.Quantity](v)
	s := q.String()
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' }) {
		return e.viaJSON(v, clean, top, inArray)
	}
	e.str(s)
	return nil
}
