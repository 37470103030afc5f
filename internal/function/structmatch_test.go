package function

import (
	"fmt"
	randv2 "math/rand/v2"
	"reflect"
	"regexp"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestMatchesRandomObjects fills pairs of equal objects of every kind the
// function composes, changes one random value (a string, number, flag,
// pointer, list, map member, or nothing) in the second, and checks that
// matches says the second converts to the first's Struct exactly when
// converting it does.
func TestMatchesRandomObjects(t *testing.T) {
	trickyPattern := regexp.MustCompile(`^(Any|Anys|Lists|Status|Unstructured)$`)
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
			var same, differ int
			for i := range 60 {
				a, b := fill(int64(i)), fill(int64(i))
				what := "nothing"
				if i%6 != 0 {
					what = mutate(r, reflect.ValueOf(b))
				}
				for _, desired := range []bool{false, true} {
					want, err := (&structDecoder{}).typedToStruct(a, desired)
					if err != nil {
						continue
					}
					got, errB := (&structDecoder{}).typedToStruct(b, desired)
					wantMatch := errB == nil && proto.Equal(got, want) && sameSigns(structValueOf(got), structValueOf(want))
					if m := (&structDecoder{}).matches(b, want, desired); m != wantMatch {
						t.Fatalf("%s %d (desired %t), changed %s: matches(...) = %t, want %t", name, i, desired, what, m, wantMatch)
					}
					if wantMatch {
						same++
					} else {
						differ++
					}
				}
			}
			// Both answers must be seen often, or the test shows little.
			if same < 20 || differ < 20 {
				t.Errorf("%s: %d conversions matched and %d differed, want at least 20 of each", name, same, differ)
			}
		})
	}
}

// TestMatchesEdgeValues checks matches on the values the walk treats
// specially.
func TestMatchesEdgeValues(t *testing.T) {
	ts := "2026-01-01T00:00:00Z"
	cases := map[string]struct {
		reason string
		v      any
		want   string
		match  bool
		// status: converted as the XR status is, not as a desired object.
		status bool
	}{
		"NullCreationTimestampDropped": {
			reason: "A desired object's null creationTimestamp is dropped, so an object without one matches.",
			v:      map[string]any{"metadata": map[string]any{"creationTimestamp": nil, "name": "a"}},
			want:   `{"metadata": {"name": "a"}}`,
			match:  true,
		},
		"NullCreationTimestampInStatus": {
			reason: "The XR status keeps a null creationTimestamp, so a Struct without one does not match.",
			v:      map[string]any{"metadata": map[string]any{"creationTimestamp": nil}},
			want:   `{"metadata": {}}`,
			status: true,
		},
		"StatusInStatus": {
			reason: "The XR status keeps a status member.",
			v:      map[string]any{"status": "x"},
			want:   `{}`,
			status: true,
		},
		"CreationTimestampKept": {
			reason: "A set creationTimestamp must be there.",
			v:      map[string]any{"metadata": map[string]any{"creationTimestamp": ts}},
			want:   `{"metadata": {}}`,
		},
		"NullCreationTimestampInWant": {
			reason: "A desired object never holds a null creationTimestamp, so a Struct with one matches nothing.",
			v:      map[string]any{"metadata": map[string]any{"creationTimestamp": nil}},
			want:   `{"metadata": {"creationTimestamp": null}}`,
		},
		"StatusDropped": {
			reason: "A desired object's top-level status is dropped.",
			v:      map[string]any{"status": map[string]any{"a": "b"}, "spec": "x"},
			want:   `{"spec": "x"}`,
			match:  true,
		},
		"ExtraField": {
			reason: "A field the object does not have is a difference.",
			v:      map[string]any{"spec": "x"},
			want:   `{"spec": "x", "other": 1}`,
		},
		"NegativeZero": {
			reason: "0 and -0 encode differently.",
			v:      map[string]any{"n": []any{0.0}},
			want:   `{"n": [-0]}`,
		},
		"NilAndEmptyList": {
			reason: "A nil list is null, an empty one is [].",
			v:      map[string]any{"l": []string(nil)},
			want:   `{"l": []}`,
		},
		"Bytes": {
			reason: "Bytes are compared as their base64.",
			v:      map[string]any{"b": []byte("hello, world")},
			want:   `{"b": "aGVsbG8sIHdvcmxk"}`,
			match:  true,
		},
		"BytesDiffer": {
			reason: "One byte changed is a difference.",
			v:      map[string]any{"b": []byte("hello, worle")},
			want:   `{"b": "aGVsbG8sIHdvcmxk"}`,
		},
		"InvalidUTF8String": {
			reason: "Invalid UTF-8 is compared as the walk writes it.",
			v:      map[string]any{"s": "a\xffb"},
			want:   `{"s": "a\ufffdb"}`,
			match:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := &structpb.Struct{}
			if err := want.UnmarshalJSON([]byte(tc.want)); err != nil {
				t.Fatal(err)
			}
			if got := (&structDecoder{}).matches(tc.v, want, !tc.status); got != tc.match {
				t.Errorf("%s\nmatches(%v, %s) = %t, want %t", tc.reason, tc.v, tc.want, got, tc.match)
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
			add("string", func() { v.SetString(v.String() + "x") })
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
