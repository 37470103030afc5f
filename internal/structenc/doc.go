// Package structenc is function-armada's codec: it writes the typed
// objects the renderer builds as the encoded protobuf Structs of a
// RunFunctionResponse (Converter, EncodedStruct), writes generated configs
// as YAML (MarshalYAML, AppendYAML) and dashboards as indented JSON
// (MarshalIndentJSON), and encodes an XR's spec as JSON for decoding
// (AppendJSON). Each gives byte for byte what the standard encoders give
// (encoding/json then structpb and proto's deterministic encoding,
// sigs.k8s.io/yaml, json.MarshalIndent), falling back to them outside what
// it reproduces; the tests compare the two over random inputs. Memo is the
// one memo type, owned by whoever serves the calls.
//
// Nothing in it keeps state between calls but caches of per-type
// information (field lists, as encoding/json keeps them).
package structenc

import "google.golang.org/protobuf/types/known/structpb"

// A Converter writes typed values as protobuf Structs. The zero Converter
// is ready to use; it is not safe for concurrent use.
type Converter struct{ e wireEncoder }

// AppendStruct appends to b the protobuf encoding of the Struct that v's
// JSON encoding decodes to (encoding/json, then structpb.NewStruct): the
// bytes proto.MarshalOptions{Deterministic: true} writes for it, map keys
// in order. v must encode as a JSON object. With desired set it drops
// what a desired composed object must not carry: a top-level status and
// null creationTimestamps.
func (c *Converter) AppendStruct(b []byte, v any, desired bool) ([]byte, error) {
	return c.e.appendStruct(b, v, desired)
}

// EncodedStruct returns a Struct that encodes as b, a Struct's encoding
// (AppendStruct's), without decoding it: b is kept as the message's
// unknown fields, which proto.Marshal writes as they are, so whoever
// decodes the encoded message reads the Struct. Its Fields are empty: to
// read them in this process, encode and decode the message that holds it.
// b must not change afterwards.
func EncodedStruct(b []byte) *structpb.Struct {
	s := &structpb.Struct{}
	s.ProtoReflect().SetUnknown(b)
	return s
}
