package function

import (
	"maps"

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
// Each typed object is converted once, straight to the response's Struct,
// following its JSON encoding (structenc.Converter): that encoding omits
// unset fields the way the API server expects, and every field a type
// gains is carried without code here. The result is what converting
// through JSON and unstructured maps gives.
func setDesired(rsp *fnv1.RunFunctionResponse, objects []armada.Object, xrStatus any, ready bool) error {
	if rsp.GetDesired() == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.GetDesired().GetResources() == nil {
		rsp.Desired.Resources = make(map[string]*fnv1.Resource, len(objects))
	}
	var conv structenc.Converter
	for _, o := range objects {
		s, err := conv.ToStruct(o.Object, true)
		if err != nil {
			return errors.Wrapf(err, "cannot convert %s %q", o.Object.GetObjectKind().GroupVersionKind().Kind, o.Key)
		}
		r := &fnv1.Resource{Resource: s, Ready: fnv1.Ready_READY_FALSE}
		if o.Ready {
			r.Ready = fnv1.Ready_READY_TRUE
		}
		rsp.Desired.Resources[o.Key] = r
	}

	status, err := conv.ToStruct(xrStatus, false)
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

// setStatus sets each top-level field of status in the desired XR's
// status, keeping its other fields, the rest of the desired XR and its
// connection details. Like the SDK's GetDesiredCompositeResource and
// SetDesiredCompositeResource, it does not keep an earlier step's
// readiness.
func setStatus(desired *fnv1.State, status *structpb.Struct) error {
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
	fields := map[string]*structpb.Value{}
	if v, ok := out.GetResource().GetFields()["status"]; ok {
		s := v.GetStructValue()
		if s == nil {
			return errors.New("cannot set status: status is not an object")
		}
		fields = maps.Clone(s.GetFields())
		if fields == nil {
			fields = map[string]*structpb.Value{}
		}
	}
	maps.Copy(fields, status.GetFields())
	out.Resource.Fields["status"] = structpb.NewStructValue(&structpb.Struct{Fields: fields})
	desired.Composite = out
	return nil
}
