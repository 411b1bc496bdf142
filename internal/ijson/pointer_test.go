package ijson

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPointer(t *testing.T) {
	cases := []struct {
		name   string
		tokens []string
		want   string
	}{
		{"root", nil, ""},
		{"empty token", []string{""}, "/"},
		{"plain", []string{"a", "0", "b c"}, "/a/0/b c"},
		{"tilde and slash", []string{"a/b", "m~n", "~1"}, "/a~1b/m~0n/~01"},
		{"unicode", []string{"é", "😂"}, "/é/😂"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Pointer(c.tokens))
			ptr := ""
			for _, tok := range c.tokens {
				ptr = AppendToken(ptr, tok)
			}
			assert.Equal(t, c.want, ptr, "AppendToken one by one")
			assert.Equal(t, c.want, string(appendTokens(c.tokens)), "appendToken")
		})
	}
	assert.Equal(t, "/a/12", AppendIndex("/a", 12))
}

func appendTokens(tokens []string) []byte {
	var p []byte
	for _, tok := range tokens {
		p = appendToken(p, tok)
	}
	return p
}

func TestPosition(t *testing.T) {
	for _, c := range []struct {
		text      string
		off       int64
		line, col int
	}{
		{"", 0, 1, 1},
		{`{"a":1,}`, 7, 1, 8},
		{"{\n  \"a\": 1,\n}", 12, 3, 1},
		{"{\r\n}", 3, 2, 1},
		{`"é" x`, 5, 1, 5},
		{"\xff\xfe!", 2, 1, 3},
		{"ab", 9, 1, 3},
	} {
		line, col := Position([]byte(c.text), c.off)
		if line != c.line || col != c.col {
			t.Errorf("Position(%q, %d) = %d:%d, want %d:%d", c.text, c.off, line, col, c.line, c.col)
		}
	}
}
