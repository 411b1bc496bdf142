package tooltext

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAppend(t *testing.T) {
	for text, want := range map[string]string{
		"":              "S.",
		"Lists stock":   "Lists stock. S.",
		"Lists stock. ": "Lists stock. S.",
		"Really?":       "Really? S.",
		"Stop!\n":       "Stop! S.",
	} {
		assert.Equal(t, want, Append(text, "S."), "%q", text)
	}
}

func TestRef(t *testing.T) {
	assert.Equal(t, "The id or the exact display name of an actor.", Ref("actor"))
	assert.Equal(t, "The id or the exact display name of a site.", Ref("site"))
}

func TestAtLeastOneOf(t *testing.T) {
	one := func(n any) any { return map[string]any{"required": []any{n}} }
	assert.Equal(t, []string{"a", "b"}, AtLeastOneOf([]any{one("a"), one("b")}))
	for name, anyOf := range map[string]any{
		"not an array":     map[string]any{},
		"empty":            []any{},
		"two required":     []any{map[string]any{"required": []any{"a", "b"}}},
		"another keyword":  []any{map[string]any{"required": []any{"a"}, "type": "object"}},
		"a name not text":  []any{one(1)},
		"a branch not map": []any{true},
	} {
		assert.Nil(t, AtLeastOneOf(anyOf), name)
	}
}
