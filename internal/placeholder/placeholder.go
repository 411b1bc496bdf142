// Package placeholder implements the placeholders of call-only batches: it
// finds "${...}" in the strings of a step's "with" value, tells paths such as
// "${plant.id}" from other text such as "${now()}", and replaces each path by
// the value it names among the results of earlier steps.
//
// The grammar and the rules for arrays and missing values are written up for
// users in docs/batches.md (section "Placeholders"); the doc comments below
// give the same rules from the caller's side.
//
// Values are JSON values as encoding/json decodes them: map[string]any,
// []any, string, bool, nil, json.Number (float64 and int are accepted too).
// Only map[string]any and []any are walked; any other Go type is a scalar
// here, so a caller whose scope holds typed Go values (structs, []string...)
// should turn them into JSON values first.
package placeholder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Defaults of [Limits]; a zero or negative field means its default.
const (
	DefaultMaxLength       = 256
	DefaultMaxPlaceholders = 1000
	DefaultMaxDepth        = 64
	DefaultMaxBytes        = 1 << 20
)

// Limits bounds the work of [Substitute] and [Paths]. The zero value gives
// the defaults.
type Limits struct {
	// MaxLength is the largest number of bytes allowed between "${" and
	// "}" of any placeholder, whether it is a path or not. A longer one is
	// an error of kind TooLong. Default 256.
	MaxLength int
	// MaxPlaceholders is the largest number of placeholders (paths or not)
	// in all the strings of one value. One more is an error of kind
	// TooMany. Default 1000.
	MaxPlaceholders int
	// MaxDepth is how deeply objects and arrays may nest: a top-level
	// object or array is at depth 1, a container inside it at depth 2...
	// Scalars do not count. A container deeper than this, in the walked
	// value or in a value a whole-string placeholder copies into it, is an
	// error of kind TooDeep. Default 64.
	MaxDepth int
	// MaxBytes bounds what one Substitute copies in from the scope and
	// writes as text, and the walks of its wildcards: a string counts its
	// length, a member its name's length, any other value (an object or an
	// array too) 8, and each entry a "*" visits 1. Past it, an error of
	// kind TooLarge: a placeholder repeated many times over a large result
	// would otherwise multiply memory or time. Default 1 MiB.
	MaxBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxLength <= 0 {
		l.MaxLength = DefaultMaxLength
	}
	if l.MaxPlaceholders <= 0 {
		l.MaxPlaceholders = DefaultMaxPlaceholders
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// SegmentKind tells what a [Segment] of a path is.
type SegmentKind uint8

const (
	// FieldSegment is an identifier: [A-Za-z_][A-Za-z0-9_]*.
	FieldSegment SegmentKind = iota
	// IndexSegment is a decimal array index: 0 or [1-9][0-9]*.
	IndexSegment
	// WildcardSegment is "*": every entry of an array.
	WildcardSegment
)

// Segment is one step of a [Path] after its name.
type Segment struct {
	Kind SegmentKind
	// Text is the segment as written: the identifier, the digits of an
	// index, or "*". On an object, a field or an index segment takes the
	// member named Text.
	Text string
	// Index is the value of an IndexSegment, math.MaxInt when the digits
	// do not fit an int (no array is that long); 0 for other kinds.
	Index int
}

// Path is a parsed placeholder path: name ("." segment)*.
type Path struct {
	// Name is the first segment, the name of a result in scope.
	Name     string
	Segments []Segment
}

// String gives the path as written inside "${" and "}".
func (p Path) String() string {
	var b strings.Builder
	b.WriteString(p.Name)
	for _, s := range p.Segments {
		b.WriteByte('.')
		b.WriteString(s.Text)
	}
	return b.String()
}

// ParsePath parses the text between "${" and "}". It reports false when the
// text is not a path (for example "now()", "" or "a..b"); such a placeholder
// is literal text, not an error.
func ParsePath(inner string) (Path, bool) {
	name, segs, ok := parsePath(inner, nil)
	if !ok {
		return Path{}, false
	}
	return Path{Name: name, Segments: segs}, true
}

// parsePath appends the segments of inner to segs, so that a caller can pass
// a buffer on its stack and parse without allocating.
func parsePath(inner string, segs []Segment) (string, []Segment, bool) {
	n := identLen(inner)
	if n == 0 {
		return "", segs, false
	}
	name, rest := inner[:n], inner[n:]
	for rest != "" {
		if rest[0] != '.' {
			return "", segs, false
		}
		seg, m := parseSegment(rest[1:])
		if m == 0 {
			return "", segs, false
		}
		segs = append(segs, seg)
		rest = rest[1+m:]
	}
	return name, segs, true
}

// parseSegment reads one segment at the start of s and returns it with the
// number of bytes it takes, 0 when s does not start with a segment.
func parseSegment(s string) (Segment, int) {
	if s == "" {
		return Segment{}, 0
	}
	switch c := s[0]; {
	case c == '*':
		return Segment{Kind: WildcardSegment, Text: "*"}, 1
	case c == '0':
		// A leading zero is an index only on its own: "01" fails at the
		// next byte, which is not ".".
		return Segment{Kind: IndexSegment, Text: "0"}, 1
	case '1' <= c && c <= '9':
		n := 1
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		idx, err := strconv.Atoi(s[:n])
		if err != nil {
			idx = math.MaxInt
		}
		return Segment{Kind: IndexSegment, Text: s[:n], Index: idx}, n
	default:
		n := identLen(s)
		return Segment{Kind: FieldSegment, Text: s[:n]}, n
	}
}

// identLen is the length of the identifier at the start of s, 0 if none.
func identLen(s string) int {
	if s == "" || !(isLetter(s[0]) || s[0] == '_') {
		return 0
	}
	n := 1
	for n < len(s) && (isLetter(s[n]) || isDigit(s[n]) || s[n] == '_') {
		n++
	}
	return n
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// nextPlaceholder finds the first placeholder of s at or after byte i: from
// "${" to the first "}" after it. It returns -1, -1 when there is none; once
// no "}" follows a "${", no later "${" can close either.
func nextPlaceholder(s string, i int) (start, end int) {
	j := strings.Index(s[i:], "${")
	if j < 0 {
		return -1, -1
	}
	start = i + j
	k := strings.IndexByte(s[start+2:], '}')
	if k < 0 {
		return -1, -1
	}
	return start, start + 2 + k + 1
}

// Resolve walks the segments of p (not its name) from root and returns the
// value they reach, or false when they reach nothing:
//
//   - on an object, a field or index segment takes the member of that name
//     ("0" is a member name there); "*" reaches nothing;
//   - on an array, an index takes that entry, "*" applies the rest of the
//     path to every entry and gives the array of what they reach (entries
//     reaching nothing are left out, an empty array gives an empty array, a
//     "*" under another "*" gives nested arrays, never flattened), and a
//     field segment applies to entry 0 (nothing if the array is empty);
//   - a missing member, an index out of range, or any segment on a scalar
//     reaches nothing.
//
// The result may share maps and slices with root; [Substitute] copies them.
func Resolve(p Path, root any) (any, bool) {
	budget := math.MaxInt
	return resolve(root, p.Segments, &budget)
}

// resolve walks v along segs. Each entry a "*" visits costs one of
// *budget; once it is spent the walk stops, and the caller, seeing it
// below zero, discards what was reached.
func resolve(v any, segs []Segment, budget *int) (any, bool) {
	for i := 0; i < len(segs); {
		seg := segs[i]
		switch node := v.(type) {
		case map[string]any:
			if seg.Kind == WildcardSegment {
				return nil, false
			}
			m, ok := node[seg.Text]
			if !ok {
				return nil, false
			}
			v = m
			i++
		case []any:
			switch seg.Kind {
			case WildcardSegment:
				return resolveEach(node, segs[i+1:], budget), true
			case IndexSegment:
				if seg.Index >= len(node) {
					return nil, false
				}
				v = node[seg.Index]
				i++
			default:
				if len(node) == 0 {
					return nil, false
				}
				v = node[0] // and the same segment again, on entry 0
			}
		default:
			return nil, false
		}
	}
	return v, true
}

func resolveEach(entries []any, rest []Segment, budget *int) []any {
	if *budget -= len(entries); *budget < 0 {
		return nil
	}
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		r, ok := resolve(e, rest, budget)
		if *budget < 0 {
			return nil
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// Ref is one path placeholder found by [Paths].
type Ref struct {
	// Pointer is the RFC 6901 JSON Pointer of the string holding the
	// placeholder, inside the value given to Paths ("" for the value itself).
	Pointer string
	// Name is the first segment of the path: the result it needs.
	Name string
}

// Paths lists the path placeholders of v, in a fixed order (object members
// by byte order of their names, arrays in order, strings left to right), so
// that a batch can be checked whole before any call: each Name must be set
// by an earlier step. Placeholders that are not paths are not listed.
//
// Paths applies the same limits as [Substitute] and returns the same
// *Error of kind TooLong, TooMany or TooDeep for the same value (Substitute
// can also fail with TooDeep for a value it copies in, which Paths cannot
// see).
func Paths(v any, limits Limits) ([]Ref, error) {
	w := walker{limits: limits.withDefaults()}
	var refs []Ref
	err := w.paths(v, &refs)
	return refs, err
}

func (w *walker) paths(v any, refs *[]Ref) error {
	switch x := v.(type) {
	case string:
		for start, end := nextPlaceholder(x, 0); start >= 0; start, end = nextPlaceholder(x, end) {
			inner := x[start+2 : end-1]
			if err := w.count(inner); err != nil {
				return err
			}
			var buf [8]Segment
			if name, _, ok := parsePath(inner, buf[:0]); ok {
				*refs = append(*refs, Ref{Pointer: w.pointer(), Name: name})
			}
		}
	case map[string]any:
		if err := w.enter(); err != nil {
			return err
		}
		var buf [8]string
		for _, k := range sortedKeys(x, buf[:0]) {
			w.push(token{key: k})
			err := w.paths(x[k], refs)
			w.pop()
			if err != nil {
				return err
			}
		}
		w.depth--
	case []any:
		if err := w.enter(); err != nil {
			return err
		}
		for i, e := range x {
			w.push(token{index: i, isIndex: true})
			err := w.paths(e, refs)
			w.pop()
			if err != nil {
				return err
			}
		}
		w.depth--
	}
	return nil
}

// Substitute returns a copy of v in which every path placeholder is replaced
// (v itself is never changed). lookup gives the value of a name in scope
// (nil: nothing is in scope); text gives the text of a non-string value
// inside a longer string (the root package passes its RFC 8785
// CanonicalJSON; nil means encoding/json without HTML escaping).
//
// Rules:
//   - a string that is one path placeholder and nothing else ("${p.id}")
//     becomes the value reached, of whatever type, with its maps and slices
//     copied; a string with placeholders in text ("Plant ${p.name}!")
//     gets the text of each value: a string as it is, any other value
//     through text. Substituted text is not scanned again;
//   - placeholders that are not paths, a "$" not followed by "{", and a
//     "${" with no "}" after it are kept as literal text (no escapes);
//   - something that resolves to nothing (see [Resolve]) is left out: an
//     object member is dropped, an array element is dropped (the array gets
//     shorter), a string with any path that reaches nothing resolves to
//     nothing as a whole, and at the top level ok is false;
//   - objects and arrays are walked at any depth; object keys are never
//     substituted; values of other Go types are kept as they are.
//
// Errors are *[Error]: UnknownReference when a path's name is not in scope
// (even if another placeholder of the string reaches nothing), TooLong,
// TooMany and TooDeep past limits, Text when text fails. Object members are
// visited by byte order of their names, so the error reported is the same
// from run to run.
func Substitute(v any, lookup func(name string) (any, bool), text func(v any) (string, error), limits Limits) (out any, ok bool, err error) {
	if text == nil {
		text = jsonText
	}
	w := walker{limits: limits.withDefaults(), lookup: lookup, text: text}
	return w.substitute(v)
}

// walker holds the state of one Substitute or Paths call. The pointer of
// the current position is kept as tokens and only spelled out when an error
// or a Ref needs it.
type walker struct {
	limits Limits
	lookup func(string) (any, bool)
	text   func(any) (string, error)
	n      int // placeholders seen
	bytes  int // what was copied in and written, counted as MaxBytes says
	depth  int // containers around the current position
	ptr    []token
}

type token struct {
	key     string
	index   int
	isIndex bool
}

// sortedKeys returns the names of m in byte order, appended to keys: an
// object of a few members (as many as keys has room for) costs no
// allocation.
func sortedKeys(m map[string]any, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (w *walker) push(t token) { w.ptr = append(w.ptr, t) }
func (w *walker) pop()         { w.ptr = w.ptr[:len(w.ptr)-1] }

func (w *walker) pointer() string {
	var b strings.Builder
	for _, t := range w.ptr {
		b.WriteByte('/')
		if t.isIndex {
			b.WriteString(strconv.Itoa(t.index))
		} else {
			writeEscaped(&b, t.key)
		}
	}
	return b.String()
}

// writeEscaped writes a reference token escaped as RFC 6901 §3 requires.
func writeEscaped(b *strings.Builder, key string) {
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(key[i])
		}
	}
}

func (w *walker) fail(kind Kind) *Error {
	e := &Error{Kind: kind, Pointer: w.pointer()}
	switch kind {
	case TooLong:
		e.Limit = w.limits.MaxLength
	case TooMany:
		e.Limit = w.limits.MaxPlaceholders
	case TooDeep:
		e.Limit = w.limits.MaxDepth
	case TooLarge:
		e.Limit = w.limits.MaxBytes
	}
	return e
}

// spend counts n more bytes copied in or written.
func (w *walker) spend(n int) error {
	w.bytes += n
	if w.bytes > w.limits.MaxBytes {
		return w.fail(TooLarge)
	}
	return nil
}

// enter counts one more level of containers; the caller decrements depth
// when it leaves.
func (w *walker) enter() error {
	w.depth++
	if w.depth > w.limits.MaxDepth {
		return w.fail(TooDeep)
	}
	return nil
}

// count applies the length and number limits to one placeholder.
func (w *walker) count(inner string) error {
	if len(inner) > w.limits.MaxLength {
		return w.fail(TooLong)
	}
	w.n++
	if w.n > w.limits.MaxPlaceholders {
		return w.fail(TooMany)
	}
	return nil
}

func (w *walker) substitute(v any) (any, bool, error) {
	switch x := v.(type) {
	case string:
		return w.substituteString(v, x)
	case map[string]any:
		if x == nil {
			return v, true, nil
		}
		if err := w.enter(); err != nil {
			return nil, false, err
		}
		out := make(map[string]any, len(x))
		var buf [8]string
		for _, k := range sortedKeys(x, buf[:0]) {
			w.push(token{key: k})
			r, ok, err := w.substitute(x[k])
			w.pop()
			if err != nil {
				return nil, false, err
			}
			if ok {
				out[k] = r
			}
		}
		w.depth--
		return out, true, nil
	case []any:
		if x == nil {
			return v, true, nil
		}
		if err := w.enter(); err != nil {
			return nil, false, err
		}
		out := make([]any, 0, len(x))
		for i, e := range x {
			w.push(token{index: i, isIndex: true})
			r, ok, err := w.substitute(e)
			w.pop()
			if err != nil {
				return nil, false, err
			}
			if ok {
				out = append(out, r)
			}
		}
		w.depth--
		return out, true, nil
	default:
		return v, true, nil
	}
}

// substituteString handles one string; orig is the same string already in
// an interface, returned as it is when nothing changes so that a plain
// string costs no allocation.
func (w *walker) substituteString(orig any, s string) (any, bool, error) {
	start, end := nextPlaceholder(s, 0)
	if start < 0 {
		return orig, true, nil
	}
	if start == 0 && end == len(s) {
		return w.substituteWhole(orig, s[2:end-1])
	}
	var (
		b       strings.Builder
		last    int
		changed bool
		nothing bool
	)
	for ; start >= 0; start, end = nextPlaceholder(s, end) {
		inner := s[start+2 : end-1]
		if err := w.count(inner); err != nil {
			return nil, false, err
		}
		var buf [8]Segment
		name, segs, isPath := parsePath(inner, buf[:0])
		if !isPath {
			continue
		}
		if nothing {
			// The string is dropped whatever the rest reaches: its names
			// are checked, its paths not walked.
			if _, err := w.root(name); err != nil {
				return nil, false, err
			}
			continue
		}
		val, found, err := w.resolve(name, segs)
		if err != nil {
			return nil, false, err
		}
		if !found {
			nothing = true
		}
		if nothing {
			continue // the rest is only checked for errors
		}
		if !changed {
			b.Grow(len(s))
			changed = true
		}
		b.WriteString(s[last:start])
		if err := w.writeText(&b, val); err != nil {
			return nil, false, err
		}
		last = end
	}
	if nothing {
		return nil, false, nil
	}
	if !changed {
		return orig, true, nil
	}
	b.WriteString(s[last:])
	return b.String(), true, nil
}

func (w *walker) substituteWhole(orig any, inner string) (any, bool, error) {
	if err := w.count(inner); err != nil {
		return nil, false, err
	}
	var buf [8]Segment
	name, segs, isPath := parsePath(inner, buf[:0])
	if !isPath {
		return orig, true, nil
	}
	val, found, err := w.resolve(name, segs)
	if err != nil || !found {
		return nil, false, err
	}
	val, err = w.copyValue(val, w.depth)
	if err != nil {
		return nil, false, err
	}
	return val, true, nil
}

// resolve finds what a path reaches; the entries its wildcards visit are
// spent from the byte budget, so that walking a large result over and over
// costs as copying it would.
func (w *walker) resolve(name string, segs []Segment) (any, bool, error) {
	root, err := w.root(name)
	if err != nil {
		return nil, false, err
	}
	budget := w.limits.MaxBytes - w.bytes
	val, found := resolve(root, segs, &budget)
	if err := w.spend(w.limits.MaxBytes - w.bytes - budget); err != nil {
		return nil, false, err
	}
	return val, found, nil
}

// root is the value of a name in scope.
func (w *walker) root(name string) (any, error) {
	var root any
	ok := false
	if w.lookup != nil {
		root, ok = w.lookup(name)
	}
	if !ok {
		e := w.fail(UnknownReference)
		e.Name = name
		return nil, e
	}
	return root, nil
}

func (w *walker) writeText(b *strings.Builder, v any) error {
	if s, ok := v.(string); ok {
		if err := w.spend(len(s)); err != nil {
			return err
		}
		b.WriteString(s)
		return nil
	}
	t, err := w.text(v)
	if err != nil {
		e := w.fail(Text)
		e.Err = err
		return e
	}
	if err := w.spend(len(t)); err != nil {
		return err
	}
	b.WriteString(t)
	return nil
}

// copyValue copies the maps and slices of a resolved value so that the
// result does not share them with the scope. depth is the number of
// containers around the place the value goes to.
func (w *walker) copyValue(v any, depth int) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return v, nil
		}
		if depth+1 > w.limits.MaxDepth {
			return nil, w.fail(TooDeep)
		}
		if err := w.spend(8); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if err := w.spend(len(k)); err != nil {
				return nil, err
			}
			c, err := w.copyValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if x == nil {
			return v, nil
		}
		if depth+1 > w.limits.MaxDepth {
			return nil, w.fail(TooDeep)
		}
		if err := w.spend(8); err != nil {
			return nil, err
		}
		out := make([]any, len(x))
		for i, e := range x {
			c, err := w.copyValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case string:
		if err := w.spend(len(x)); err != nil {
			return nil, err
		}
		return v, nil
	default:
		if err := w.spend(8); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// jsonText is the text function used when Substitute is given none.
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// Kind is the kind of an [Error].
type Kind uint8

const (
	// UnknownReference: a path's name is not in scope. Error.Name holds it.
	UnknownReference Kind = iota + 1
	// TooLong: a placeholder is longer than Limits.MaxLength.
	TooLong
	// TooMany: a value has more than Limits.MaxPlaceholders placeholders.
	TooMany
	// TooDeep: objects and arrays nest deeper than Limits.MaxDepth.
	TooDeep
	// Text: the text function failed. Error.Err holds its error.
	Text
	// TooLarge: the values copied in and the text written pass
	// Limits.MaxBytes.
	TooLarge
)

// String gives the kind in snake case, as refusal codes are written.
func (k Kind) String() string {
	switch k {
	case UnknownReference:
		return "unknown_reference"
	case TooLong:
		return "too_long"
	case TooMany:
		return "too_many"
	case TooDeep:
		return "too_deep"
	case Text:
		return "text"
	case TooLarge:
		return "too_large"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is the error of [Substitute] and [Paths]. Its message holds the
// pointer, the limit and, for UnknownReference, the name (an identifier the
// batch author chose); never the placeholder or any other submitted text,
// and not the message of Err, which may quote a value: use errors.Unwrap or
// errors.As to reach it.
type Error struct {
	Kind Kind
	// Pointer is the RFC 6901 JSON Pointer, inside the walked value, of the
	// string holding the placeholder (TooDeep: of the container too deep,
	// or of the string whose value would be).
	Pointer string
	// Name is the unknown name (UnknownReference only).
	Name string
	// Limit is the limit passed (TooLong, TooMany, TooDeep only).
	Limit int
	// Err is the text function's error (Text only).
	Err error
}

func (e *Error) Error() string {
	switch e.Kind {
	case UnknownReference:
		return fmt.Sprintf("placeholder at %q: unknown reference %q", e.Pointer, e.Name)
	case TooLong:
		return fmt.Sprintf("placeholder at %q: longer than %d bytes", e.Pointer, e.Limit)
	case TooMany:
		return fmt.Sprintf("placeholder at %q: more than %d placeholders in one value", e.Pointer, e.Limit)
	case TooDeep:
		return fmt.Sprintf("value at %q: nested deeper than %d levels", e.Pointer, e.Limit)
	case Text:
		return fmt.Sprintf("placeholder at %q: value has no text", e.Pointer)
	case TooLarge:
		return fmt.Sprintf("value at %q: substituted values pass %d bytes", e.Pointer, e.Limit)
	}
	return fmt.Sprintf("placeholder at %q: %s", e.Pointer, e.Kind)
}

// Unwrap gives the text function's error of a Text error, nil otherwise.
func (e *Error) Unwrap() error { return e.Err }
