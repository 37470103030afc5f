package armada

import (
	"sync"

	"github.com/armadaproject/armada-crossplane/internal/exact"
)

// encodeMemoSize bounds each encodeMemo: a function serving this many
// dashboards or component configs keeps all their encodings (some ten MB
// for configs at most); beyond it, an arbitrary entry is evicted and
// merely encoded again when needed.
const encodeMemoSize = 1024

// An encodeMemo remembers, by key, a value and what encoding it gave.
// Crossplane calls the function every few seconds per Armada, and most
// calls build the same dashboards and configs again: comparing one with
// the value encoded before (exact.Same) costs a small part of encoding it
// again. The key only says where to look; a result is reused only for a
// value exactly the same as the one it was encoded from, so what the memo
// returns is what encoding would. Values kept must not be changed after
// encode, nor the results it returns.
type encodeMemo[V, R any] struct {
	mu sync.Mutex
	m  map[string]encoded[V, R]
}

// encoded is a value and its encoding.
type encoded[V, R any] struct {
	v V
	r R
}

// encode returns enc(v), from the memo if v is the value last encoded
// under key.
func (c *encodeMemo[V, R]) encode(key string, v V, enc func(V) (R, error)) (R, error) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && exact.Same(e.v, v) {
		return e.r, nil
	}
	r, err := enc(v)
	if err != nil {
		return r, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]encoded[V, R]{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= encodeMemoSize {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[key] = encoded[V, R]{v: v, r: r}
	return r, nil
}

// reset forgets every entry.
func (c *encodeMemo[V, R]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

// ForgetEncodings empties the memos of encoded dashboards and configs, as
// a process starting afresh has them. Serving never needs it; benchmarks
// of a first call do.
func ForgetEncodings() {
	dashboardJSONs.reset()
	configYAMLs.reset()
}
