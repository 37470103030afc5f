package function

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// setDesired adds the rendered objects and the XR status to the desired
// state, keeping whatever earlier pipeline steps put there (response.To
// copied it from the request).
//
// Each typed object is written once, straight to the protobuf encoding of
// its Struct (structenc.Converter), following its JSON encoding: that
// encoding omits unset fields the way the API server expects, and every
// field a type gains is carried without code here. The encoding is what
// converting through JSON and unstructured maps and encoding the Struct
// gives; the response carries it as it is (structenc.EncodedStruct), so
// the composed objects' Structs are encoded, not built: whoever decodes
// the response reads them.
func setDesired(rsp *fnv1.RunFunctionResponse, objects []armada.Object, xrStatus any, ready bool) error {
	if rsp.GetDesired() == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.GetDesired().GetResources() == nil {
		rsp.Desired.Resources = make(map[string]*fnv1.Resource, len(objects))
	}
	var conv structenc.Converter
	// The objects are written into shared chunks: each into what is left
	// of the last, so that one that outgrows it copies only itself.
	var free []byte
	for _, o := range objects {
		if cap(free) < minFreeBytes {
			free = make([]byte, 0, chunkBytes)
		}
		b, err := conv.AppendStruct(free, o.Object, true)
		if err != nil {
			return errors.Wrapf(err, "cannot convert %s %q", o.Object.GetObjectKind().GroupVersionKind().Kind, o.Key)
		}
		free = b[len(b):]
		r := &fnv1.Resource{Resource: structenc.EncodedStruct(slices.Clip(b)), Ready: fnv1.Ready_READY_FALSE}
		if o.Ready {
			r.Ready = fnv1.Ready_READY_TRUE
		}
		rsp.Desired.Resources[o.Key] = r
	}

	status, err := conv.AppendStruct(nil, xrStatus, false)
	if err != nil {
		return errors.Wrap(err, "cannot encode status")
	}
	if err := setStatus(rsp.GetDesired(), status); err != nil {
		return err
	}
	if !ready {
		// Omitted components would otherwise let the XR count as ready.
		rsp.Desired.Composite.Ready = fnv1.Ready_READY_FALSE
	}
	return nil
}

// The chunks setDesired writes encoded objects into, and the room left
// in one below which it starts the next: the production example's
// response is about 115 kB, in objects of up to about 10 kB.
const (
	chunkBytes   = 32 << 10
	minFreeBytes = 2 << 10
)

// setStatus sets each top-level field of status (a Struct's encoding) in
// the desired XR's status, keeping its other fields, the rest of the
// desired XR and its connection details. Like the SDK's
// GetDesiredCompositeResource and SetDesiredCompositeResource, it does not
// keep an earlier step's readiness.
func setStatus(desired *fnv1.State, status []byte) error {
	xr := desired.GetComposite()
	out := &fnv1.Resource{
		Resource:          &structpb.Struct{Fields: maps.Clone(xr.GetResource().GetFields())},
		ConnectionDetails: xr.GetConnectionDetails(),
	}
	if out.Resource.Fields == nil {
		out.Resource.Fields = map[string]*structpb.Value{}
	}
	if out.ConnectionDetails == nil {
		out.ConnectionDetails = map[string][]byte{}
	}
	desired.Composite = out
	v, ok := out.GetResource().GetFields()["status"]
	if !ok {
		// No earlier step set a status (function-armada is the only step
		// of its compositions): this one is the whole status, encoded.
		out.Resource.Fields["status"] = structpb.NewStructValue(structenc.EncodedStruct(status))
		return nil
	}
	earlier := v.GetStructValue()
	if earlier == nil {
		return errors.New("cannot set status: status is not an object")
	}
	s := &structpb.Struct{}
	if err := proto.Unmarshal(status, s); err != nil {
		return errors.Wrap(err, "cannot decode status")
	}
	fields := maps.Clone(earlier.GetFields())
	if fields == nil {
		fields = map[string]*structpb.Value{}
	}
	maps.Copy(fields, s.GetFields())
	out.Resource.Fields["status"] = structpb.NewStructValue(&structpb.Struct{Fields: fields})
	return nil
}
