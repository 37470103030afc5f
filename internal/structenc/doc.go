// Package structenc is function-armada's codec: it converts the typed
// objects the renderer builds to the protobuf Structs of a
// RunFunctionResponse (Converter), writes generated configs as YAML
// (MarshalYAML, AppendYAML) and dashboards as indented JSON
// (MarshalIndentJSON), and encodes an XR's spec as JSON for decoding
// (AppendJSON). Each gives byte for byte what the standard encoders give
// (encoding/json then structpb, sigs.k8s.io/yaml, json.MarshalIndent),
// falling back to them outside what it reproduces; the tests compare the
// two over random inputs. Memo is the one memo type, owned by whoever serves the calls.
//
// Nothing in it keeps state between calls but caches of per-type
// information (field lists, as encoding/json keeps them).
package structenc

import "google.golang.org/protobuf/types/known/structpb"

// A Converter converts typed values to Structs. The Structs of one
// Converter share the Struct of equal string maps (labels, selectors),
// which recur across a response's objects; a response is only encoded,
// never changed in place. The zero Converter is ready to use; it is not
// safe for concurrent use.
type Converter struct{ d structDecoder }

// ToStruct converts a typed value that encodes as a JSON object to the
// Struct its JSON encoding decodes to. With desired set it drops what a
// desired composed object must not carry: a top-level status and null
// creationTimestamps.
func (c *Converter) ToStruct(v any, desired bool) (*structpb.Struct, error) {
	return c.d.typedToStruct(v, desired)
}
