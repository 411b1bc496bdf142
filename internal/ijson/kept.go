package ijson

import (
	"encoding/json"
	"errors"
	"unsafe"
)

// Kept is JSON text kept to be decoded again and again, each time into a
// value of its own, at the cost of its objects and arrays only: the
// strings, names and numbers of each value share the text's memory, and
// their boxes (a string or json.Number held in an interface, which would
// cost one allocation each) are made once, by [Keep], and handed out
// again. A Kept weighs its text and one box per string and number, a
// fraction of the decoded value it stands for. It is immutable and safe
// for concurrent use.
type Kept struct {
	text     string
	maxDepth int
	boxes    []any // in text order; none for the values of common below
}

// commonStrings and digits are the boxes every Kept shares: the type
// names of JSON Schema and the one-digit numbers, the strings and
// numbers most often found in a schema. Read only.
var (
	commonStrings = map[string]any{"object": "object", "array": "array", "string": "string",
		"number": "number", "integer": "integer", "boolean": "boolean", "null": "null"}
	digits = [10]any{json.Number("0"), json.Number("1"), json.Number("2"), json.Number("3"), json.Number("4"),
		json.Number("5"), json.Number("6"), json.Number("7"), json.Number("8"), json.Number("9")}
)

// errKept is the error of a Kept whose boxes no longer match its text.
var errKept = errors.New("ijson: a kept text and its values disagree")

// Keep decodes text as [Decode] does (the same value and the same
// errors) and returns it with the Kept that decodes it again.
func Keep(text string, maxDepth int) (*Kept, any, error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	k := &Kept{text: text, maxDepth: maxDepth}
	v, err := k.decode(true)
	if err != nil {
		return nil, nil, err
	}
	return k, v, nil
}

// Text returns the text k decodes.
func (k *Kept) Text() string { return k.text }

// Decode returns a new decoding of k's text: maps and slices of its own,
// which the caller may change, holding strings and numbers shared with
// every other decoding.
func (k *Kept) Decode() any {
	v, err := k.decode(false)
	if err != nil {
		// The text decoded once, in Keep, into the very boxes given back.
		panic(err)
	}
	return v
}

func (k *Kept) decode(collect bool) (any, error) {
	d := decoderPool.Get().(*decoder)
	d.data = unsafe.Slice(unsafe.StringData(k.text), len(k.text)) // only read
	d.shared = true
	d.collect = collect
	if !collect {
		d.kept = k.boxes
	}
	d.pos = 0
	d.maxDepth = k.maxDepth
	v, err := d.run()
	if collect {
		k.boxes = d.kept
	} else if err == nil && d.next != len(k.boxes) {
		err = errKept
	}
	d.release()
	if err != nil {
		return nil, err
	}
	return v, nil
}

// leaf returns the string or number s (number says which) as a value:
// boxed anew outside a Kept, else one of the common boxes, or the next
// box of the Kept (made and kept while Keep decodes).
func (d *decoder) leaf(s string, number bool) (any, error) {
	if !d.shared {
		if number {
			return json.Number(s), nil
		}
		return s, nil
	}
	switch {
	case number && len(s) == 1:
		return digits[s[0]-'0'], nil
	case !number:
		if b, ok := commonStrings[s]; ok {
			return b, nil
		}
	}
	if d.collect {
		var b any = s
		if number {
			b = json.Number(s)
		}
		d.kept = append(d.kept, b)
		return b, nil
	}
	if d.next >= len(d.kept) {
		return nil, errKept
	}
	b := d.kept[d.next]
	d.next++
	return b, nil
}
