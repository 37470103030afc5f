package function

import (
	"bytes"
	"fmt"
	randv2 "math/rand/v2"
	"reflect"
	"regexp"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/armadaproject/armada-crossplane/internal/exact"
)

// TestExactSameRandomObjects fills pairs of equal objects of every kind
// the function composes, changes one random value (a string, number,
// flag, pointer, list, map member, or nothing) in the second, and checks
// that exact.Same says the two are the same exactly when reflect.DeepEqual
// does, and that where it says so they convert to the same bytes, which
// is what structMemo relies on.
func TestExactSameRandomObjects(t *testing.T) {
	trickyPattern := regexp.MustCompile(`^(Any|Anys|Lists|Status|Unstructured)$`)
	wire := func(v any) []byte {
		s, err := (&structDecoder{}).typedToStruct(v, true)
		if err != nil {
			return []byte("error: " + err.Error())
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, newObject := range composedTypes {
		name := reflect.TypeOf(newObject()).Elem().String()
		t.Run(name, func(t *testing.T) {
			r := randv2.New(randv2.NewPCG(1, 2)) //nolint:gosec // Deterministic test data.
			fill := func(seed int64) any {
				o := newObject()
				if tr, ok := o.(*tricky); ok {
					newSeededFiller(seed).SkipFieldsWithPattern(trickyPattern).Fill(tr)
					fillTricky(tr, randv2.New(randv2.NewPCG(uint64(seed), 0))) //nolint:gosec // Deterministic test data.
				} else {
					newSeededFiller(seed).Fill(o)
				}
				return o
			}
			var sameSeen, differSeen int
			for i := range 60 {
				a, b := fill(int64(i)), fill(int64(i))
				what := "nothing"
				if i%6 != 0 {
					what = mutate(r, reflect.ValueOf(b))
				}
				got, want := exact.Same(a, b), reflect.DeepEqual(a, b)
				if got != want {
					t.Fatalf("%s %d, changed %s: exact.Same(...) = %t, reflect.DeepEqual(...) = %t", name, i, what, got, want)
				}
				if got && !bytes.Equal(wire(a), wire(b)) {
					t.Fatalf("%s %d, changed %s: exact.Same(...) = true, but the two convert differently", name, i, what)
				}
				if got {
					sameSeen++
				} else {
					differSeen++
				}
			}
			// Both answers must be seen often, or the test shows little.
			if sameSeen < 10 || differSeen < 20 {
				t.Errorf("%s: %d pairs the same and %d different, want at least 10 and 20", name, sameSeen, differSeen)
			}
		})
	}
}

// mutate changes one value reachable from v, chosen at random, and says
// which; it changes nothing if nothing can be changed.
func mutate(r *randv2.Rand, v reflect.Value) string {
	var changes []change
	collectChanges(v, "", &changes, 0)
	if len(changes) == 0 {
		return "nothing (nothing to change)"
	}
	c := changes[r.IntN(len(changes))]
	c.apply()
	return c.what
}

type change struct {
	what  string
	apply func()
}

// collectChanges lists the changes that can be made to v and what it
// holds.
//
//nolint:cyclop // One case per kind of value.
func collectChanges(v reflect.Value, path string, out *[]change, depth int) {
	if depth > 20 {
		return
	}
	add := func(what string, apply func()) {
		*out = append(*out, change{what: path + ": " + what, apply: apply})
	}
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			add("string grown", func() { v.SetString(v.String() + "x") })
			if s := v.String(); s != "" {
				// The same length, one byte different.
				add("string changed", func() { v.SetString(string(s[0]^1) + s[1:]) })
			}
		}
	case reflect.Bool:
		if v.CanSet() {
			add("bool", func() { v.SetBool(!v.Bool()) })
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.CanSet() {
			add("int", func() { v.SetInt(v.Int() ^ 1) })
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if v.CanSet() {
			add("uint", func() { v.SetUint(v.Uint() ^ 1) })
		}
	case reflect.Float32, reflect.Float64:
		if v.CanSet() {
			add("float", func() { v.SetFloat(v.Float() + 1.5) })
		}
	case reflect.Pointer:
		if v.IsNil() {
			if v.CanSet() {
				add("nil pointer set", func() { v.Set(reflect.New(v.Type().Elem())) })
			}
			return
		}
		if v.CanSet() {
			add("pointer made nil", func() { v.SetZero() })
		}
		collectChanges(v.Elem(), path+"*", out, depth+1)
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.CanSet() {
			add("interface made nil", func() { v.SetZero() })
		}
		// Maps and list elements in an interface change in place.
		collectChanges(v.Elem(), path, out, depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				collectChanges(v.Field(i), path+"."+v.Type().Field(i).Name, out, depth+1)
			}
		}
	case reflect.Slice:
		if v.CanSet() {
			if v.IsNil() {
				add("nil list made empty", func() { v.Set(reflect.MakeSlice(v.Type(), 0, 0)) })
				return
			}
			add("list made nil", func() { v.SetZero() })
			add("list grown", func() { v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem()))) })
		}
		for i := range v.Len() {
			collectChanges(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out, depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			if v.CanSet() {
				add("nil map made empty", func() { v.Set(reflect.MakeMap(v.Type())) })
			}
			return
		}
		if v.CanSet() {
			add("map made nil", func() { v.SetZero() })
		}
		for _, k := range v.MapKeys() {
			add(fmt.Sprintf("member %v deleted", k), func() { v.SetMapIndex(k, reflect.Value{}) })
			add(fmt.Sprintf("member %v zeroed", k), func() { v.SetMapIndex(k, reflect.Zero(v.Type().Elem())) })
			// A copy of the member, changed and put back.
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			var inner []change
			collectChanges(e, fmt.Sprintf("%s[%v]", path, k), &inner, depth+1)
			for _, c := range inner {
				*out = append(*out, change{what: c.what, apply: func() { c.apply(); v.SetMapIndex(k, e) }})
			}
		}
	default:
	}
}
