package structenc

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A directFunc converts a value of a type with its own MarshalJSON to
// exactly what that MarshalJSON's output decodes to, without writing and
// parsing JSON text. Each is for one type, not one field: every field of
// that type, present or future, goes through it. Anything a directFunc is
// not sure of it leaves to viaJSON.
type directFunc func(d *structDecoder, v reflect.Value, clean, top, inArray bool) (*structpb.Value, error)

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
	return func(d *structDecoder, v reflect.Value, clean, top, inArray bool) (*structpb.Value, error) {
		if v.IsNil() {
			return d.nullValue(), nil
		}
		return f(d, v.Elem(), clean, top, inArray)
	}
}

// unstructuredValue is (*Unstructured).MarshalJSON: its Object, encoded
// by encoding/json.
func unstructuredValue(d *structDecoder, v reflect.Value, clean, top, inArray bool) (*structpb.Value, error) {
	if v.IsNil() {
		return d.nullValue(), nil
	}
	u, _ := reflect.TypeAssert[*unstructured.Unstructured](v)
	return d.walk(reflect.ValueOf(u.Object), clean, top, inArray)
}

// intOrStringValue is IntOrString.MarshalJSON.
func intOrStringValue(d *structDecoder, v reflect.Value, clean, top, inArray bool) (*structpb.Value, error) {
	is, _ := reflect.TypeAssert[intstr.IntOrString](v)
	switch is.Type {
	case intstr.Int:
		return d.numberValue(float64(is.IntVal)), nil
	case intstr.String:
		return d.stringValue(validString(is.StrVal)), nil
	}
	// MarshalJSON's error, word for word.
	return d.viaJSON(v, clean, top, inArray)
}

// quantityValue is Quantity.MarshalJSON: its canonical string, written
// between quotes without escaping. A string that would need escaping
// (which a parsed or computed Quantity never holds) is left to
// encoding/json, which rejects it.
func quantityValue(d *structDecoder, v reflect.Value, clean, top, inArray bool) (*structpb.Value, error) {
	// On a copy: String caches its result in the Quantity.
	q, _ := reflect.TypeAssert[resource.Quantity](v)
	s := q.String()
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' }) {
		return d.viaJSON(v, clean, top, inArray)
	}
	return d.stringValue(s), nil
}
