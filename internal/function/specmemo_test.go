package function

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// TestDecodeSpecMemo checks a spec decoded again, from specMemo, is what
// decoding gave the first time, and that changing one decoded spec changes
// neither the memo nor later decodes.
func TestDecodeSpecMemo(t *testing.T) {
	xr := exampleRequest(t, productionExample).GetObserved().GetComposite().GetResource().AsMap()
	var first v1alpha1.ArmadaSpec
	if err := decodeSpec(xr, "XArmada", &first); err != nil {
		t.Fatal(err)
	}
	want := first.DeepCopy()
	// Change everything the first decode returned that a later one could
	// share: its top-level fields, and what its pointers, slices and maps
	// hold.
	first.Version = "changed"
	first.Redis.Addrs[0] = "changed"
	*first.Redis.DB = 99
	first.Components.Server.Config.Raw[0] = ' '
	for range 2 {
		var again v1alpha1.ArmadaSpec
		if err := decodeSpec(xr, "XArmada", &again); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, &again); diff != "" {
			t.Errorf("decodeSpec(...) again: -want, +got:\n%s", diff)
		}
		again.Auth.AdminGroups[0] = "changed"
	}

	// A spec that does not decode is not kept: it fails every time.
	bad := map[string]any{"spec": map[string]any{"version": 1.0}}
	for range 2 {
		var s v1alpha1.ArmadaSpec
		if err := decodeSpec(bad, "XArmada", &s); err == nil {
			t.Errorf("decodeSpec(version: 1): no error, want one")
		}
	}
}

// TestSpecMemoBounded checks the memo keeps at most specMemoSize specs.
func TestSpecMemoBounded(t *testing.T) {
	c := &specMemo{}
	for i := range 2 * specMemoSize {
		c.put([]byte(strconv.Itoa(i)), &v1alpha1.ArmadaSpec{})
	}
	n := 0
	for _, byJSON := range c.m {
		n += len(byJSON)
	}
	if n != specMemoSize || c.n != specMemoSize {
		t.Errorf("after %d puts: %d specs kept (counted %d), want %d", 2*specMemoSize, n, c.n, specMemoSize)
	}
	// Putting a spec the full memo already holds evicts nothing.
	last := []byte(strconv.Itoa(2*specMemoSize - 1))
	before := map[string]bool{}
	for _, byJSON := range c.m {
		for k := range byJSON {
			before[k] = true
		}
	}
	c.put(last, &v1alpha1.ArmadaSpec{})
	for k := range before {
		if _, ok := c.get(reflect.TypeFor[*v1alpha1.ArmadaSpec](), []byte(k)); !ok {
			t.Errorf("putting a kept spec again evicted another")
		}
	}
}
