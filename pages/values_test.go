package pages

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHiddenCharactersAreShown: each character that changes how text
// displays, or does not display, becomes a named escape; ordinary text,
// tabs, line feeds and right-to-left letters stay as they are.
func TestHiddenCharactersAreShown(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []seg
	}{
		{"plain", "abc déf", []seg{{Text: "abc déf"}}},
		{"tab and newline stay", "a\tb\nc", []seg{{Text: "a\tb\nc"}}},
		{"Hebrew letters stay", "שלום", []seg{{Text: "שלום"}}},
		{"right-to-left override", "in\u202Efdp.exe", []seg{{Text: "in"}, {Text: "⟨U+202E⟩", Name: "right-to-left override"}, {Text: "fdp.exe"}}},
		{"zero width space", "pay\u200Bpal", []seg{{Text: "pay"}, {Text: "⟨U+200B⟩", Name: "zero width space"}, {Text: "pal"}}},
		{"isolate and pop", "\u2067x\u2069", []seg{{Text: "⟨U+2067⟩", Name: "right-to-left isolate"}, {Text: "x"}, {Text: "⟨U+2069⟩", Name: "pop directional isolate"}}},
		{"BOM", "\uFEFF", []seg{{Text: "⟨U+FEFF⟩", Name: "zero width no-break space (BOM)"}}},
		{"carriage return", "a\rb", []seg{{Text: "a"}, {Text: "⟨U+000D⟩", Name: "carriage return"}, {Text: "b"}}},
		{"tag character", "\U000E0041", []seg{{Text: "⟨U+E0041⟩", Name: "tag character"}}},
		{"variation selector", "\uFE0F", []seg{{Text: "⟨U+FE0F⟩", Name: "variation selector"}}},
		{"Hangul filler", "\u3164", []seg{{Text: "⟨U+3164⟩", Name: "Hangul filler"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := segments(c.in)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestTreeCutsOnlyWhenAsked: the confirmation screen's tree (cut 0)
// keeps every member and character; the log's cuts and counts what it
// left off. Hidden characters in member names are flagged too.
func TestTreeCutsOnlyWhenAsked(t *testing.T) {
	text := `{"a":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","b":[1,2,3,4,5],"k\u202e":true}`
	whole := &tree{}
	n := whole.parse(text)
	assert.Len(t, n.Fields, 3)
	assert.Len(t, n.Fields[1].Node.Items, 5)
	assert.Zero(t, whole.cuts)
	assert.Equal(t, []flag{{Path: "/k⟨U+202E⟩ (name)", Char: "U+202E", Name: "right-to-left override"}}, whole.flags)

	cut := &tree{cut: 2}
	n = cut.parse(text)
	assert.Len(t, n.Fields, 2)
	assert.Equal(t, 1, n.Cut)
	assert.Len(t, n.Fields[1].Node.Items, 2)
	assert.Equal(t, 3, n.Fields[1].Node.Items[0].Cut+n.Fields[1].Node.Cut)
	assert.Equal(t, 42-16, n.Fields[0].Node.Cut)
}

// TestTreeOfNotJSON: text that is not JSON is shown as it is.
func TestTreeOfNotJSON(t *testing.T) {
	n := (&tree{}).parse(`{"a":1} trailing`)
	assert.Equal(t, "raw", n.Kind)
	assert.Nil(t, (&tree{}).parse(""))
}
