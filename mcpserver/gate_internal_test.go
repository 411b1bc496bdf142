package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The question shows every character of the arguments; those that change
// how text displays without being seen are written as JSON escapes, which
// read the same to JSON.
func TestVisible(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", "abc"},
		{"é ü 日本", "é ü 日本"},
		{"a\u202eb", "a\\u202eb"},
		{"\u202e\u202d\u2066\u2069", "\\u202e\\u202d\\u2066\\u2069"},
		{"zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"},
		{"line\u2028para\u2029", "line\\u2028para\\u2029"},
	} {
		assert.Equal(t, c.want, visible(c.in), "%q", c.in)
	}
}

// The request state binds the change to the principal, the tool and the
// arguments, under the server's key.
func TestRequestState(t *testing.T) {
	s, err := newRequestState([]byte("key"))
	require.NoError(t, err)
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
			other, err := newRequestState([]byte("other"))
			require.NoError(t, err)
			return other.verify(state, "eve", "shop-discard", args)
		},
		"another change": func() (string, bool) { return s.verify("c2"+state[2:], "eve", "shop-discard", args) },
		"no signature":   func() (string, bool) { return s.verify("c1", "eve", "shop-discard", args) },
	} {
		_, ok := bad()
		assert.False(t, ok, name)
	}
}
