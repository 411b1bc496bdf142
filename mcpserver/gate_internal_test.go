package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShorten(t *testing.T) {
	assert.Equal(t, "abc", shorten("abc", 3))
	assert.Equal(t, "ab…", shorten("abc", 2))
	assert.Equal(t, "a…", shorten("aé", 2), "never half a character")
	assert.Equal(t, "…", shorten("é", 1))
}

// The request state binds the change to the principal, the tool and the
// arguments, under the server's key.
func TestRequestState(t *testing.T) {
	s := newRequestState([]byte("key"))
	args := json.RawMessage(`{"b":1,"a":2}`)
	state := s.sign("c1", "eve", "shop-discard", args)
	id, ok := s.verify(state, "eve", "shop-discard", json.RawMessage(`{"a":2,"b":1}`))
	assert.True(t, ok, "the same arguments in another member order")
	assert.Equal(t, "c1", id)
	for name, bad := range map[string]func() (string, bool){
		"another principal": func() (string, bool) { return s.verify(state, "mallory", "shop-discard", args) },
		"another tool":      func() (string, bool) { return s.verify(state, "eve", "shop-restock", args) },
		"other arguments":   func() (string, bool) { return s.verify(state, "eve", "shop-discard", json.RawMessage(`{"a":3,"b":1}`)) },
		"another key": func() (string, bool) {
			return newRequestState([]byte("other")).verify(state, "eve", "shop-discard", args)
		},
		"another change": func() (string, bool) { return s.verify("c2"+state[2:], "eve", "shop-discard", args) },
		"no signature":   func() (string, bool) { return s.verify("c1", "eve", "shop-discard", args) },
	} {
		_, ok := bad()
		assert.False(t, ok, name)
	}
}
