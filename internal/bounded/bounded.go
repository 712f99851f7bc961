// Package bounded holds Map, a map safe for concurrent use that never
// holds more than a fixed number of entries. The Redis store keeps in one
// where the records of the tokens it has read are: something a process
// must not let grow without end, and whose loss costs only a slower
// answer.
package bounded

import "sync"

// Map holds at most Max entries: adding one more forgets them all and
// starts again. The zero value holds nothing; set Max.
type Map[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	Max int
}

// Get returns the value under k, if any.
func (b *Map[K, V]) Get(k K) (V, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	v, ok := b.m[k]
	return v, ok
}

// Put sets the value under k.
func (b *Map[K, V]) Put(k K, v V) {
	if b.Max <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[k]; !ok && len(b.m) >= b.Max {
		b.m = nil
	}
	if b.m == nil {
		b.m = make(map[K]V)
	}
	b.m[k] = v
}

// Forget removes the value under k, if any.
func (b *Map[K, V]) Forget(k K) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, k)
}

// Len returns how many entries the map holds.
func (b *Map[K, V]) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.m)
}
