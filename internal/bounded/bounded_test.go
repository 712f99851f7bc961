package bounded

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMap(t *testing.T) {
	m := Map[string, int]{Max: 2}
	m.Put("a", 1)
	m.Put("b", 2)
	m.Put("a", 3) // a key it holds: replaced, nothing forgotten
	v, ok := m.Get("a")
	assert.True(t, ok)
	assert.Equal(t, 3, v)
	assert.Equal(t, 2, m.Len())

	m.Put("c", 4) // one more: the rest are forgotten
	assert.Equal(t, 1, m.Len())
	_, ok = m.Get("b")
	assert.False(t, ok)
	v, ok = m.Get("c")
	assert.True(t, ok)
	assert.Equal(t, 4, v)

	m.Forget("c")
	_, ok = m.Get("c")
	assert.False(t, ok)
	assert.Equal(t, 0, m.Len())
}

func TestMapWithoutRoom(t *testing.T) {
	var m Map[string, int]
	m.Put("a", 1)
	_, ok := m.Get("a")
	assert.False(t, ok)
	assert.Equal(t, 0, m.Len())
}
