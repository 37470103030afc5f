package function

import (
	"sync"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/function-sdk-go/resource"

	"github.com/armadaproject/armada-crossplane/internal/exact"
)

// DefaultMemoObjects is how many composed objects a Function remembers
// the conversion of unless WithMemoObjects says otherwise: about 28
// production-sized Armadas' worth, some 16 MB (a production-sized Armada
// composes 73 objects, and the memo keeps about 7.6 kB for each:
// BenchmarkMemoFootprint). Beyond it, an arbitrary entry is evicted and
// merely converted again when needed.
const DefaultMemoObjects = 2048

// A structMemo remembers, for each XR and composed resource name, the
// object rendered last time and the Struct it converted to. Crossplane
// calls the function for every XR every few seconds, and most objects
// render the same each time: comparing an object with the one rendered
// before (exact.Same) allocates nothing and costs a small part of
// converting it again, which builds thousands of maps and Values. The memo
// keeps its own deep copy of each object, which nothing else can change,
// and only one exact.Same finds the same as the object converted; a Struct
// is reused only for an object exact.Same finds the same as that copy, and
// never changed in place (responses are only encoded), so a response is
// byte for byte what it would be without the memo.
type structMemo struct {
	// limit is how many objects it keeps at most; none if not positive.
	limit int

	mu sync.Mutex
	// m holds the entries by XR, then by composed resource name.
	m map[string]map[string]memoEntry
	n int
}

// A memoEntry is an object and the Struct it converted to.
type memoEntry struct {
	object client.Object
	s      *structpb.Struct
}

// xrIdentity names an XR for the memo: one recreated with the same name
// has a new UID.
func xrIdentity(xr *resource.Composite) string {
	u := xr.Resource
	return u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName() + "/" + string(u.GetUID())
}

// get returns the Struct kept for the XR's composed resource if o is the
// same as the object it was converted from, or nil.
func (c *structMemo) get(xr, name string, o client.Object) *structpb.Struct {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	e, ok := c.m[xr][name]
	c.mu.Unlock()
	if !ok || !exact.Same(e.object, o) {
		return nil
	}
	return e.s
}

// put keeps s, which o converted to, for the XR's composed resource; the
// caller must not change s. The memo keeps a copy of o, and nothing if the
// copy is not the same as o. A nil memo keeps nothing.
func (c *structMemo) put(xr, name string, o client.Object, s *structpb.Struct) {
	if c == nil || c.limit <= 0 {
		return
	}
	cp, ok := o.DeepCopyObject().(client.Object)
	if !ok || !exact.Same(cp, o) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]map[string]memoEntry{}
	}
	byName := c.m[xr]
	if _, ok := byName[name]; !ok {
		if c.n >= c.limit {
			c.evictOne()
		}
		c.n++
	}
	if byName = c.m[xr]; byName == nil {
		byName = map[string]memoEntry{}
		c.m[xr] = byName
	}
	byName[name] = memoEntry{object: cp, s: s}
}

// evictOne forgets an arbitrary entry.
func (c *structMemo) evictOne() {
	if evictOne(c.m) {
		c.n--
	}
}

// evictOne deletes an arbitrary entry of a two-level map, and the inner
// map it leaves empty, and reports whether there was one.
func evictOne[K1, K2 comparable, V any](m map[K1]map[K2]V) bool {
	for k1, inner := range m {
		for k2 := range inner {
			delete(inner, k2)
			if len(inner) == 0 {
				delete(m, k1)
			}
			return true
		}
		delete(m, k1) // Empty.
	}
	return false
}

// reset forgets every entry.
func (c *structMemo) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.n = nil, 0
}
