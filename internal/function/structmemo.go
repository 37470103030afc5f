package function

import (
	"sync"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/resource"
)

// structMemoSize bounds structMemo, in composed objects: about 60
// production-sized Armadas' worth (a few MB); beyond it, an arbitrary
// entry is evicted and merely converted again when needed.
const structMemoSize = 4096

// composedStructs remembers the Struct each composed object last converted to.
var composedStructs = &structMemo{}

// A structMemo remembers, for each XR and composed resource name, the
// Struct the resource's typed object converted to last time. Crossplane
// calls the function for every XR every few seconds, and most objects
// render the same each time: comparing an object with the Struct it gave
// before (structDecoder.matches) allocates nothing and costs a fraction of
// converting it again, which builds thousands of maps and Values. A Struct
// is kept only after it was converted, reused only where the comparison
// finds it exactly what converting would give, and never changed in place
// (responses are only encoded), so a response is byte for byte what it
// would be without the memo.
type structMemo struct {
	mu sync.Mutex
	// m holds the Structs by XR, then by composed resource name.
	m map[string]map[string]*structpb.Struct
	n int
}

// xrIdentity names an XR for the memo: one recreated with the same name
// has a new UID.
func xrIdentity(xr *resource.Composite) string {
	u := xr.Resource
	return u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName() + "/" + string(u.GetUID())
}

// get returns the Struct kept for the XR's composed resource, or nil.
func (c *structMemo) get(xr, name string) *structpb.Struct {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[xr][name]
}

// put keeps s for the XR's composed resource; the caller must not change
// it.
func (c *structMemo) put(xr, name string, s *structpb.Struct) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]map[string]*structpb.Struct{}
	}
	byName := c.m[xr]
	if _, ok := byName[name]; !ok {
		if c.n >= structMemoSize {
			c.evictOne()
		}
		c.n++
	}
	if byName = c.m[xr]; byName == nil {
		byName = map[string]*structpb.Struct{}
		c.m[xr] = byName
	}
	byName[name] = s
}

// evictOne forgets an arbitrary Struct.
func (c *structMemo) evictOne() {
	for xr, byName := range c.m {
		for name := range byName {
			delete(byName, name)
			c.n--
			if len(byName) == 0 {
				delete(c.m, xr)
			}
			return
		}
	}
}

// reset forgets every Struct.
func (c *structMemo) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.n = nil, 0
}
