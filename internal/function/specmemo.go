package function

import (
	"reflect"
	"sync"
)

// specMemoSize bounds specMemo: a function serving this many XRs keeps
// all their decoded specs; beyond it, an arbitrary entry is evicted and
// merely decoded again when needed.
const specMemoSize = 256

// specs remembers decoded specs.
var specs = &specMemo{}

// A specMemo remembers specs decoded from JSON, keyed by their type and
// the JSON text itself, so a hit is exactly what decoding again would
// give. Crossplane calls the function for every XR every few seconds, with
// a spec that rarely changes; decoding it with encoding/json costs more
// than the deep copy a hit takes. Specs hold references to Secrets, never
// their values. Only specs that decoded without error are kept.
type specMemo struct {
	mu sync.Mutex
	// m holds the specs by type, then by JSON text.
	m map[reflect.Type]map[string]any
	n int
}

// get returns the spec of type typ decoded from b, if one was kept.
func (c *specMemo) get(typ reflect.Type, b []byte) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[typ][string(b)]
	return v, ok
}

// put keeps v, decoded from b; the caller must not change it.
func (c *specMemo) put(b []byte, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[reflect.Type]map[string]any{}
	}
	typ := reflect.TypeOf(v)
	if _, ok := c.m[typ][string(b)]; !ok {
		if c.n >= specMemoSize {
			c.evictOne()
		}
		c.n++
	}
	if c.m[typ] == nil {
		c.m[typ] = map[string]any{}
	}
	c.m[typ][string(b)] = v
}

// evictOne forgets an arbitrary spec.
func (c *specMemo) evictOne() {
	if evictOne(c.m) {
		c.n--
	}
}

// reset forgets every spec.
func (c *specMemo) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.n = nil, 0
}
