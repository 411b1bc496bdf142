package pages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// seg is a run of text as a page shows it: plain text, or one character
// that would change how the text around it displays (or not display at
// all), shown as its escape (⟨U+202E⟩) and named.
type seg struct {
	Text string // plain text, or the escape
	Name string // set for an escape: the character's name
}

// Escaped reports whether s is an escape.
func (s seg) Escaped() bool { return s.Name != "" }

// hidden names the characters shown as escapes: format characters (Cf:
// bidi embeddings, overrides and isolates, marks, zero-width space and
// joiners, the BOM, soft hyphen, tags), controls other than tab and line
// feed, line and paragraph separators, variation selectors, and the
// blank fillers that render as nothing.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.In(r, unicode.Cf, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Variation_Selector):
		return true
	case r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0 || r == 0x2800 || r == 0x034F:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

// charNames are the names of the hidden characters a person is most likely
// to meet; the others are named by their category.
var charNames = map[rune]string{
	0x00AD: "soft hyphen", 0x061C: "Arabic letter mark", 0x180E: "Mongolian vowel separator",
	0x200B: "zero width space", 0x200C: "zero width non-joiner", 0x200D: "zero width joiner",
	0x200E: "left-to-right mark", 0x200F: "right-to-left mark",
	0x202A: "left-to-right embedding", 0x202B: "right-to-left embedding", 0x202C: "pop directional formatting",
	0x202D: "left-to-right override", 0x202E: "right-to-left override",
	0x2060: "word joiner", 0x2066: "left-to-right isolate", 0x2067: "right-to-left isolate",
	0x2068: "first strong isolate", 0x2069: "pop directional isolate",
	0xFEFF: "zero width no-break space (BOM)", 0x2028: "line separator", 0x2029: "paragraph separator",
	0x0000: "null", 0x000D: "carriage return", 0x001B: "escape", 0x3164: "Hangul filler", 0x2800: "Braille blank",
}

func charName(r rune) string {
	if n, ok := charNames[r]; ok {
		return n
	}
	switch {
	case unicode.Is(unicode.Cc, r):
		return "control character"
	case unicode.Is(unicode.Variation_Selector, r):
		return "variation selector"
	case r >= 0xE0000 && r <= 0xE007F:
		return "tag character"
	case r == utf8.RuneError:
		return "replacement character"
	}
	return "invisible character"
}

// segments splits s into plain runs and escapes; n counts the escapes.
func segments(s string) (out []seg, n int) {
	start := 0
	for i, r := range s {
		if !hidden(r) {
			continue
		}
		if i > start {
			out = append(out, seg{Text: s[start:i]})
		}
		out = append(out, seg{Text: fmt.Sprintf("⟨U+%04X⟩", r), Name: charName(r)})
		n++
		start = i + utf8.RuneLen(r)
	}
	if start < len(s) {
		out = append(out, seg{Text: s[start:]})
	}
	return out, n
}

// visible is s with each hidden character written as its escape: for
// paths and names a page shows where no markup marks the escapes.
func visible(s string) string {
	segs, n := segments(s)
	if n == 0 {
		return s
	}
	var b strings.Builder
	for _, g := range segs {
		b.WriteString(g.Text)
	}
	return b.String()
}

// node is a JSON value laid out for a page.
type node struct {
	Kind   string // object, array, string, number, bool, null, raw
	Path   string // its JSON Pointer (RFC 6901), hidden characters escaped
	Fields []field
	Items  []*node
	Text   []seg // a string's
	Lit    string
	Long   bool // a string shown in a scroll box
	Chars  int  // a string's length in characters
	Cut    int  // characters left off (log pages only)
}

type field struct {
	Key  []seg
	Node *node
}

// flag is a hidden character found in a value, where.
type flag struct {
	Path string
	Char string
	Name string
}

// tree lays out JSON text. cut > 0 cuts strings to that many characters
// and arrays and objects to as many members (the log's pages); 0 shows
// everything whole (the confirmation screen: never cut). Hidden characters
// are collected, by path, into flags.
type tree struct {
	cut   int
	flags []flag
	cuts  int
}

// maxShownDepth bounds the nesting laid out as tables; deeper values are
// shown as their JSON text.
const maxShownDepth = 32

// longText is the length from which a string goes in a scroll box.
const longText = 160

func (t *tree) parse(text string) *node {
	if text == "" {
		return nil
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return t.str(text, "", "raw")
	}
	if _, err := d.Token(); err != io.EOF {
		return t.str(text, "", "raw")
	}
	return t.value(v, "", 0)
}

func (t *tree) value(v any, path string, depth int) *node {
	if depth > maxShownDepth {
		b, _ := json.Marshal(v)
		return t.str(string(b), path, "raw")
	}
	switch x := v.(type) {
	case map[string]any:
		n := &node{Kind: "object", Path: visible(path)}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if t.cut > 0 && i >= t.cut {
				n.Cut = len(keys) - i
				t.cuts++
				break
			}
			p := path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			key, _ := segments(k)
			t.collect(k, p+" (name)")
			n.Fields = append(n.Fields, field{Key: key, Node: t.value(x[k], p, depth+1)})
		}
		return n
	case []any:
		n := &node{Kind: "array", Path: visible(path)}
		for i, e := range x {
			if t.cut > 0 && i >= t.cut {
				n.Cut = len(x) - i
				t.cuts++
				break
			}
			n.Items = append(n.Items, t.value(e, path+"/"+strconv.Itoa(i), depth+1))
		}
		return n
	case string:
		return t.str(x, path, "string")
	case json.Number:
		return &node{Kind: "number", Lit: x.String()}
	case bool:
		return &node{Kind: "bool", Lit: strconv.FormatBool(x)}
	case nil:
		return &node{Kind: "null", Lit: "null"}
	}
	return &node{Kind: "raw", Lit: fmt.Sprint(v)}
}

func (t *tree) str(s, path, kind string) *node {
	n := &node{Kind: kind, Path: visible(path), Chars: utf8.RuneCountInString(s)}
	t.collect(s, path)
	if t.cut > 0 && n.Chars > t.cut*8 {
		keep := t.cut * 8
		i := 0
		for j := range s {
			if keep == 0 {
				i = j
				break
			}
			keep--
		}
		n.Cut = n.Chars - t.cut*8
		t.cuts++
		s = s[:i]
	}
	n.Text, _ = segments(s)
	n.Long = len(s) > longText || strings.ContainsRune(s, '\n')
	return n
}

func (t *tree) collect(s, path string) {
	for _, r := range s {
		if hidden(r) {
			if path == "" {
				path = "/"
			}
			t.flags = append(t.flags, flag{Path: visible(path), Char: fmt.Sprintf("U+%04X", r), Name: charName(r)})
		}
	}
}

// pretty indents JSON text for a <pre>, or returns it as it is.
func pretty(text string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(text), "", "  ") != nil {
		return text
	}
	return b.String()
}
