package structenc

import "sync"

// A Memo remembers up to a fixed number of values by key, for work whose
// result depends only on the key (the key must hold every input, for
// example a SHA-256 of them all), so a value it returns is exactly what
// computing again gives. Beyond its limit an arbitrary entry is evicted and
// merely computed again when needed. It is safe for concurrent use; a nil
// Memo, or one with no room, remembers nothing. Values kept must not be
// changed.
//
// A Memo is owned by whoever serves the calls (the Function) and passed
// down explicitly: nothing in the render path keeps state of its own.
type Memo[K comparable, V any] struct {
	limit int

	mu sync.Mutex
	m  map[K]V
}

// NewMemo returns a Memo that keeps at most limit values.
func NewMemo[K comparable, V any](limit int) *Memo[K, V] {
	return &Memo[K, V]{limit: limit}
}

// Get returns the value kept for k, if any.
func (c *Memo[K, V]) Get(k K) (V, bool) {
	if c == nil {
		var zero V
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// Put keeps v for k, evicting an arbitrary entry when the Memo is full.
func (c *Memo[K, V]) Put(k K, v V) {
	if c == nil || c.limit <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[K]V)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.limit {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}

// Len is how many values the Memo keeps.
func (c *Memo[K, V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
