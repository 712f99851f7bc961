package redisstore

import "sync"

// bounded is a map safe for concurrent use that holds at most max entries:
// adding one more forgets them all and starts again. The Store keeps what
// it remembers of Redis in it (locations.go, lists.go), which a process
// must not let grow without end, and whose loss costs only a slower read.
type bounded[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	v, ok := b.m[k]
	return v, ok
}

func (b *bounded[K, V]) put(k K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[k]; !ok && len(b.m) >= b.max {
		b.m = nil
	}
	if b.m == nil {
		b.m = make(map[K]V)
	}
	b.m[k] = v
}

func (b *bounded[K, V]) forget(k K) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, k)
}
