package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// canonicalMaxDepth bounds the nesting of objects and arrays that
// CanonicalJSON accepts; it also stops a map or slice that contains itself.
const canonicalMaxDepth = ijson.DefaultMaxDepth

// CanonicalError reports a value that has no RFC 8785 form. Use errors.As to
// read it. Its message names the reason and the JSON Pointer of the value; it
// never repeats a string from the value other than the member names that
// make up the pointer.
type CanonicalError struct {
	// Pointer is the RFC 6901 JSON Pointer of the offending value, "" for
	// the root. For a fault inside a member name it is the pointer of the
	// object. For a value passed to encoding/json it is the pointer of that
	// value, or of the fault inside it when the strict decoder found one.
	Pointer string
	// Reason is one of: "non-finite number", "number out of range",
	// "invalid number", "invalid utf-8", "lone surrogate",
	// "duplicate member name", "invalid json text", "nesting too deep",
	// "unsupported value", "cycle".
	Reason string
	// Err is the cause, when there is one: encoding/json's error for a
	// value it refused, or the strict decoder's error for JSON text. Its
	// message may quote the input, so it is left out of Error().
	Err error

	tokens []string // reference tokens gathered on the way out, innermost first
}

func (e *CanonicalError) Error() string {
	if e.Pointer == "" {
		return "actions: canonical json: " + e.Reason + " at the root"
	}
	return "actions: canonical json: " + e.Reason + " at " + strconv.Quote(e.Pointer)
}

func (e *CanonicalError) Unwrap() error { return e.Err }

// The reasons of a CanonicalError.
const (
	reasonNotFinite   = "non-finite number"
	reasonRange       = "number out of range"
	reasonBadNumber   = "invalid number"
	reasonUTF8        = "invalid utf-8"
	reasonSurrogate   = "lone surrogate"
	reasonDuplicate   = "duplicate member name"
	reasonSyntax      = "invalid json text"
	reasonTooDeep     = "nesting too deep"
	reasonUnsupported = "unsupported value"
	reasonCycle       = "cycle"
)

// CanonicalJSON returns the RFC 8785 (JSON Canonicalization Scheme) text of
// v: no whitespace, object members sorted by the UTF-16 code units of their
// names (§3.2.3), strings with the fewest escapes (§3.2.2.2: only '"', '\\'
// and controls below U+0020, as \b \t \n \f \r or \u00xx in lower case; no
// HTML escaping, U+2028 and U+2029 left as they are), and numbers written as
// ECMAScript's Number.prototype.toString writes the double (§3.2.2.3): the
// shortest text that reads back to the same double, -0 as 0, integers below
// 1e21 in full, 1e+21 and 1e-7 in exponent form.
//
// These shapes are read directly, without reflection:
//
//   - map[string]any → object; []any → array; a nil map or slice → null
//   - string → string; bool → true or false; nil → null
//   - json.Number → the double it denotes; "" is 0, as encoding/json has it
//   - float64; float32 as encoding/json writes it (its shortest float32
//     text, then read as a double, so float32(0.1) gives 0.1)
//   - int, int8 … int64, uint, uint8 … uint64, uintptr → the double nearest
//     to the integer: beyond 2^53 digits are lost (9007199254740993 is
//     written 9007199254740992). RFC 8785 §3.2.2.3 and its Appendix D ask
//     for large integers to travel as strings.
//   - json.RawMessage → JSON text, read by the strict I-JSON decoder and
//     then canonicalised; a nil one is null
//
// Any other value (structs with json tags, typed maps and slices, pointers,
// []byte as base64, json.Marshaler and encoding.TextMarshaler types) is
// written by encoding/json.Marshal and the result read back strictly and
// canonicalised. encoding/json replaces invalid UTF-8 with the escape
// \ufffd; such text is refused, so a Marshaler whose own output holds that
// escape is refused too (write U+FFFD as it is instead).
//
// CanonicalJSON never writes text that is not canonical: it returns a
// *[CanonicalError] whose Reason is
//
//   - "non-finite number": NaN or ±Inf, which JSON cannot hold (§3.2.2.3)
//   - "number out of range": a json.Number or a number in JSON text whose
//     magnitude is beyond a double, such as 1e400 (§3.2.2.3, RFC 7493 §2.2)
//   - "invalid number": a json.Number that is not JSON number text
//   - "invalid utf-8": a string or member name that is not UTF-8, in Go
//     values or in JSON text (§3.2.2.2, RFC 7493 §2.1)
//   - "lone surrogate": a \u escape of half a surrogate pair in JSON text
//     (RFC 7493 §2.1)
//   - "duplicate member name": in JSON text (§3.1, RFC 7493 §2.3)
//   - "invalid json text": a json.RawMessage or a Marshaler's output that
//     is not one JSON value
//   - "nesting too deep": more than 10,000 levels of objects and arrays
//   - "cycle": a map[string]any or []any that contains itself
//   - "unsupported value": anything encoding/json refuses (channels,
//     functions, complex numbers, cyclic pointers, a Marshaler's error or
//     panic); Err holds encoding/json's error
func CanonicalJSON(v any) ([]byte, error) {
	w := canonicalPool.Get().(*canonicalWriter)
	err := w.value(v, 0)
	var out []byte
	if err == nil {
		out = bytes.Clone(w.buf)
	}
	w.release()
	if err != nil {
		return nil, finishCanonicalError(err)
	}
	return out, nil
}

// canonicalText is CanonicalJSON as a string, with one allocation.
func canonicalText(v any) (string, error) {
	return canonicalTextOf(v, false)
}

// exactText is canonicalText for what an entry records (parameters,
// results, commands): a number its RFC 8785 text would round (a double
// does not hold it: 2^53+1, a 20-digit integer) keeps its own digits, so
// that the entry records what the body received or returned and a replay
// hands the body the same number. RFC 8785 itself rounds such text (its
// test vectors do), which CanonicalJSON keeps.
func exactText(v any) (string, error) {
	return canonicalTextOf(v, true)
}

func canonicalTextOf(v any, exact bool) (string, error) {
	w := canonicalPool.Get().(*canonicalWriter)
	w.exact = exact
	err := w.value(v, 0)
	var out string
	if err == nil {
		out = string(w.buf)
	}
	w.release()
	if err != nil {
		return "", finishCanonicalError(err)
	}
	return out, nil
}

// finishCanonicalError turns the tokens gathered while unwinding into the
// error's pointer, in front of any pointer the strict decoder gave.
func finishCanonicalError(err error) error {
	ce, ok := err.(*CanonicalError)
	if !ok {
		return err
	}
	if len(ce.tokens) > 0 {
		slices.Reverse(ce.tokens)
		ce.Pointer = ijson.Pointer(ce.tokens) + ce.Pointer
		ce.tokens = nil
	}
	return ce
}

// within records that err happened inside the member or element token.
func within(err error, token string) error {
	if ce, ok := err.(*CanonicalError); ok {
		ce.tokens = append(ce.tokens, token)
	}
	return err
}

// canonicalWriter appends canonical text to buf. shared is a stack shared
// by the objects being written too large to sort on the stack, so sorting
// names allocates nothing once warm.
type canonicalWriter struct {
	buf    []byte
	shared []objectMember // a stack: each open large object's members, sorted
	open   []container    // the objects and arrays being written, to catch a cycle
	exact  bool           // refuse numbers a double does not hold (exactText)
}

// container tells an object or array from any other: a map by its
// pointer, a slice by its first element and length (a shorter slice of the
// same array is another value, and only the same slice can recur without
// end).
type container struct {
	p unsafe.Pointer
	n int
}

// objectMember is one member of an object being written.
type objectMember struct {
	name  string
	value any
}

var canonicalPool = sync.Pool{New: func() any { return new(canonicalWriter) }}

func (w *canonicalWriter) release() {
	w.exact = false
	clear(w.shared)
	w.shared = w.shared[:0]
	clear(w.open)
	w.open = w.open[:0]
	w.buf = w.buf[:0]
	if cap(w.buf) > 1<<20 || cap(w.shared) > 1<<12 {
		return
	}
	canonicalPool.Put(w)
}

// value writes v; depth is the number of objects and arrays around it.
// enter pushes an object or array being written, refusing one that is
// already open: a value that contains itself has no JSON form.
func (w *canonicalWriter) enter(p container) error {
	for _, q := range w.open {
		if q == p {
			return &CanonicalError{Reason: reasonCycle}
		}
	}
	w.open = append(w.open, p)
	return nil
}

func (w *canonicalWriter) value(v any, depth int) error {
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case string:
		return w.string(x)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case map[string]any:
		return w.mapValue(x, depth)
	case []any:
		return w.sliceValue(x, depth)
	case json.Number:
		return w.number(string(x))
	case json.RawMessage:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return nil
		}
		return w.raw(x, depth)
	case store.RunEntry:
		return w.exactly(func() error { return w.entry(&x, depth) })
	case *store.RunEntry:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return nil
		}
		return w.exactly(func() error { return w.entry(x, depth) })
	case store.Audit:
		return w.audit(&x, depth)
	case *store.Audit:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return nil
		}
		return w.audit(x, depth)
	case store.Record:
		return w.record(&x, depth)
	case *store.Record:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return nil
		}
		return w.record(x, depth)
	case store.RunStep, *store.RunStep, []store.RunEntry, []store.Record:
		// An entry, alone or in its record, is written in the entry's
		// form whoever writes it: a number a double does not hold keeps
		// its digits (exactText).
		exact := w.exact
		w.exact = true
		err := w.marshal(v, depth)
		w.exact = exact
		return err
	default:
		if ok, err := w.numeric(v); ok {
			return err
		}
		return w.marshal(v, depth)
	}
	return nil
}

// exactly runs write in exact mode: an entry, alone or in its record,
// is written in the entry's form whoever writes it (see exactText).
func (w *canonicalWriter) exactly(write func() error) error {
	exact := w.exact
	w.exact = true
	err := write()
	w.exact = exact
	return err
}

// mapValue writes an object, refusing a cycle.
func (w *canonicalWriter) mapValue(x map[string]any, depth int) error {
	if x == nil {
		w.buf = append(w.buf, "null"...)
		return nil
	}
	if err := w.enter(container{reflect.ValueOf(x).UnsafePointer(), -1}); err != nil {
		return err
	}
	err := w.object(x, depth)
	w.open = w.open[:len(w.open)-1]
	return err
}

// sliceValue writes an array, refusing a cycle.
func (w *canonicalWriter) sliceValue(x []any, depth int) error {
	if x == nil {
		w.buf = append(w.buf, "null"...)
		return nil
	}
	if len(x) == 0 { // empty slices may share their address
		return w.array(x, depth)
	}
	if err := w.enter(container{unsafe.Pointer(unsafe.SliceData(x)), len(x)}); err != nil {
		return err
	}
	err := w.array(x, depth)
	w.open = w.open[:len(w.open)-1]
	return err
}

// numeric writes a Go number of a built-in type; ok is false for any
// other value.
func (w *canonicalWriter) numeric(v any) (ok bool, err error) {
	switch x := v.(type) {
	case float64:
		return true, w.float(x)
	case float32:
		// encoding/json writes a float32 as its shortest float32 text.
		f := float64(x)
		if !math.IsInf(f, 0) && !math.IsNaN(f) {
			var tmp [32]byte
			f, _ = strconv.ParseFloat(string(strconv.AppendFloat(tmp[:0], f, 'g', -1, 32)), 64)
		}
		return true, w.float(f)
	case int:
		return true, w.int(int64(x))
	case int8:
		return true, w.int(int64(x))
	case int16:
		return true, w.int(int64(x))
	case int32:
		return true, w.int(int64(x))
	case int64:
		return true, w.int(x)
	case uint:
		return true, w.uint(uint64(x))
	case uint8:
		return true, w.uint(uint64(x))
	case uint16:
		return true, w.uint(uint64(x))
	case uint32:
		return true, w.uint(uint64(x))
	case uint64:
		return true, w.uint(x)
	case uintptr:
		return true, w.uint(uint64(x))
	}
	return false, nil
}

func (w *canonicalWriter) object(m map[string]any, depth int) error {
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	if len(m) <= len(smallObject{}) && depth < smallObjectDepth {
		return w.smallObject(m, depth)
	}
	start := len(w.shared)
	for k, v := range m {
		w.shared = append(w.shared, objectMember{k, v})
	}
	ms := w.shared[start:]
	sortUTF16(ms)
	w.buf = append(w.buf, '{')
	for i := range ms {
		// Nested objects push onto w.shared and may move it: index afresh.
		if err := w.member(i, w.shared[start+i], depth); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	clear(w.shared[start:])
	w.shared = w.shared[:start]
	return nil
}

// smallObject holds the members of an object small enough to be sorted
// in the writer's stack frame, at most smallObjectDepth levels deep.
type smallObject [8]objectMember

const smallObjectDepth = 32

// smallObject writes m, of at most len(smallObject{}) members, sorting
// them in the stack frame: storing their pointers there needs no write
// barrier, and sorting moves their indexes only. Past a few levels the
// shared stack takes over, so that deep values do not grow the
// goroutine's stack by a frame's array each.
func (w *canonicalWriter) smallObject(m map[string]any, depth int) error {
	var (
		local smallObject
		order [len(smallObject{})]uint8
	)
	n := 0
	for k, v := range m {
		local[n] = objectMember{k, v}
		order[n] = uint8(n)
		n++
	}
	for i := 1; i < n; i++ { // insertion sort, as sortUTF16 does
		o := order[i]
		j := i
		for j > 0 && compareUTF16(local[order[j-1]].name, local[o].name) > 0 {
			order[j] = order[j-1]
			j--
		}
		order[j] = o
	}
	w.buf = append(w.buf, '{')
	for i := range n {
		if err := w.member(i, local[order[i]], depth); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// member writes the i-th member mb of an object depth levels deep.
func (w *canonicalWriter) member(i int, mb objectMember, depth int) error {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
	if err := w.string(mb.name); err != nil {
		return err // a fault in a name belongs to the object
	}
	w.buf = append(w.buf, ':')
	if err := w.value(mb.value, depth+1); err != nil {
		return within(err, mb.name)
	}
	return nil
}

func (w *canonicalWriter) array(a []any, depth int) error {
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	w.buf = append(w.buf, '[')
	for i, e := range a {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if err := w.value(e, depth+1); err != nil {
			return within(err, strconv.Itoa(i))
		}
	}
	w.buf = append(w.buf, ']')
	return nil
}

// raw canonicalises JSON text after the strict decoder has read it, with the
// depth limit reduced by the levels already open.
func (w *canonicalWriter) raw(text []byte, depth int) error {
	limit := canonicalMaxDepth - depth
	v, err := ijson.Decode(text, max(limit, 1))
	if err != nil {
		return fromDecodeError(err)
	}
	if limit < 1 {
		switch v.(type) {
		case map[string]any, []any:
			return &CanonicalError{Reason: reasonTooDeep}
		}
	}
	return w.value(v, depth)
}

func fromDecodeError(err error) error {
	var de *ijson.Error
	if !errors.As(err, &de) {
		return &CanonicalError{Reason: reasonSyntax, Err: err}
	}
	reason := reasonSyntax
	switch de.Reason {
	case ijson.DuplicateName:
		reason = reasonDuplicate
	case ijson.InvalidUTF8:
		reason = reasonUTF8
	case ijson.LoneSurrogate:
		reason = reasonSurrogate
	case ijson.NumberRange:
		reason = reasonRange
	case ijson.TooDeep:
		reason = reasonTooDeep
	}
	return &CanonicalError{Pointer: de.Pointer, Reason: reason, Err: err}
}

// marshal hands a value of any other type to encoding/json and canonicalises
// what it wrote.
func (w *canonicalWriter) marshal(v any, depth int) error {
	text, err := marshalSafely(v)
	if err != nil {
		reason := reasonUnsupported
		var uve *json.UnsupportedValueError
		if errors.As(err, &uve) && (uve.Str == "NaN" || uve.Str == "+Inf" || uve.Str == "-Inf") {
			reason = reasonNotFinite
		}
		return &CanonicalError{Reason: reason, Err: err}
	}
	if hasReplacementEscape(text) {
		return &CanonicalError{Reason: reasonUTF8}
	}
	return w.raw(text, depth)
}

// marshalSafely is json.Marshal with a panicking Marshaler (a bug in the
// value's type, not a fault of the caller) turned into an error, so that
// writing a body's result can never bring the host down.
func marshalSafely(v any) (text []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("actions: json.Marshal panicked: %v", p)
		}
	}()
	return json.Marshal(v)
}

// hasReplacementEscape reports whether text holds the escape \ufffd, which
// encoding/json writes in place of each invalid UTF-8 byte. A backslash
// preceded by an odd number of backslashes is itself escaped and does not
// count.
func hasReplacementEscape(text []byte) bool {
	const esc = `\ufffd`
	for i := 0; ; {
		j := bytes.Index(text[i:], []byte(esc))
		if j < 0 {
			return false
		}
		j += i
		n := 0
		for k := j - 1; k >= 0 && text[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		i = j + len(esc)
	}
}

// string writes s with the escapes of RFC 8785 §3.2.2.2 and refuses invalid
// UTF-8.
// plainBytes marks the bytes a string holds as they are: printable ASCII other
// than '"' and '\\'.
var plainBytes = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (w *canonicalWriter) string(s string) error {
	buf := append(w.buf, '"')
	i := 0
	for i < len(s) && plainBytes[s[i]] {
		i++
	}
	if i == len(s) { // the common case: nothing to escape or decode
		buf = append(buf, s...)
		w.buf = append(buf, '"')
		return nil
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\r':
				buf = append(buf, '\\', 'r')
			default:
				const hex = "0123456789abcdef"
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.buf = buf
			return &CanonicalError{Reason: reasonUTF8}
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	w.buf = append(buf, '"')
	return nil
}

// number writes the double that JSON number text denotes.
func (w *canonicalWriter) number(s string) error {
	if s == "" {
		w.buf = append(w.buf, '0')
		return nil
	}
	digits, ok := scanJSONNumber(s)
	if !ok {
		return &CanonicalError{Reason: reasonBadNumber}
	}
	if digits > 0 && digits <= 15 {
		// A plain integer of at most 15 digits is exact as a double and its
		// canonical text is its own (JSON allows no leading zeros), except -0.
		if s == "-0" {
			s = "0"
		}
		w.buf = append(w.buf, s...)
		return nil
	}
	if digits == 0 && ownDecimal(s) {
		w.buf = append(w.buf, s...)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return &CanonicalError{Reason: reasonRange}
	}
	if w.exact && !ijson.Exact(s) {
		// Its canonical text would state another number: the entry keeps
		// the digits the body received or returned instead (outside
		// I-JSON, RFC 7493 §2.2, the one place it departs from RFC 8785).
		w.buf = exactDecimal(w.buf, s)
		return nil
	}
	w.buf = canonicalNumber(w.buf, f)
	return nil
}

// ownDecimal reports whether s, valid JSON number text, is a decimal
// fraction that is its own canonical text: no exponent, a last digit
// other than 0, at most 15 significant digits, and, below 1, at most 5
// zeros after the point. A double tells every decimal of at most 15
// significant digits from every other, so the shortest digits that read
// back to its value are its own, and ECMAScript lays such a number out
// as it is written (an exponent only from 10^21 up, or below 10^-6).
func ownDecimal(s string) bool {
	if s[0] == '-' {
		s = s[1:]
	}
	point := strings.IndexByte(s, '.')
	if point < 0 || s[len(s)-1] == '0' || strings.ContainsAny(s, "eE") {
		return false
	}
	sig := len(s) - 1 // the digits, the point aside
	if point == 1 && s[0] == '0' {
		// 0.000ddd: the zeros are not significant.
		zeros := 0
		for zeros+2 < len(s) && s[zeros+2] == '0' {
			zeros++
		}
		if zeros > 5 {
			return false
		}
		sig -= 1 + zeros
	}
	return sig <= 15
}

// scanJSONNumber checks that s is a JSON number (RFC 8259 §6). digits is the
// number of digits when s is a plain integer, and 0 when it has a fraction
// or an exponent.
func scanJSONNumber(s string) (digits int, ok bool) {
	i := 0
	if s[0] == '-' {
		i++
	}
	intStart := i
	switch {
	case i >= len(s):
		return 0, false
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	digits = i - intStart
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false
		}
		digits = 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false
		}
		digits = 0
	}
	return digits, i == len(s)
}

func (w *canonicalWriter) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return &CanonicalError{Reason: reasonNotFinite}
	}
	w.buf = canonicalNumber(w.buf, f)
	return nil
}

// maxExact is 2^53: every integer of smaller magnitude is exact as a double.
const maxExact = 1 << 53

// int writes an integer. Past 2^53 RFC 8785 writes the nearest double;
// in exact mode one the double does not hold keeps its digits.
func (w *canonicalWriter) int(i int64) error {
	if i > -maxExact && i < maxExact {
		w.buf = strconv.AppendInt(w.buf, i, 10)
		return nil
	}
	if w.exact {
		return w.number(strconv.FormatInt(i, 10))
	}
	w.buf = canonicalNumber(w.buf, float64(i))
	return nil
}

func (w *canonicalWriter) uint(u uint64) error {
	if u < maxExact {
		w.buf = strconv.AppendUint(w.buf, u, 10)
		return nil
	}
	if w.exact {
		return w.number(strconv.FormatUint(u, 10))
	}
	w.buf = canonicalNumber(w.buf, float64(u))
	return nil
}

// exactDecimal appends number text that a double does not hold as the
// digits it states, laid out as ECMAScript lays out a number's digits
// (ECMA-262 Number::toString: plain up to 21 integer digits, a point, or
// an exponent), so that one value always gets one text.
func exactDecimal(dst []byte, s string) []byte {
	digits, exp, neg := ijson.Decimal(s)
	if neg {
		dst = append(dst, '-')
	}
	return ecmaLayout(dst, digits, len(digits)+exp) // the point's place, counted from the first digit
}

// canonicalNumber appends a finite double as ECMAScript's
// Number.prototype.toString writes it (ECMA-262 Number::toString, as
// RFC 8785 §3.2.2.3 requires).
func canonicalNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // both zeros
	}
	if f > -maxExact && f < maxExact && f == math.Trunc(f) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	// strconv gives the shortest digits that read back to f, as
	// d[.ddd]e±x; ECMAScript picks the same digits and lays them out by the
	// position n of the decimal point.
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	e := bytes.IndexByte(s, 'e')
	var digitBuf [24]byte
	digits := append(digitBuf[:0], s[0])
	if e > 1 {
		digits = append(digits, s[2:e]...)
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	return ecmaLayout(dst, digits, exp+1)
}

// ecmaLayout appends significant digits (no leading or trailing zero)
// whose decimal point stands n places after the first digit, laid out as
// ECMA-262 Number::toString does: plain up to 21 integer digits, "0." and
// zeros down to 1e-6, an exponent otherwise.
func ecmaLayout[S string | []byte](dst []byte, digits S, n int) []byte {
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3)
// without converting them. UTF-8 byte order is code point order, and the
// two orders differ in one case only: a character from U+E000 to U+FFFF
// (lead byte 0xEE or 0xEF) sorts after a supplementary character (lead byte
// 0xF0 to 0xF4, a surrogate pair from 0xD800 in UTF-16). The first byte that
// differs is a lead byte in both strings or a continuation byte in both, so
// looking at it alone is enough.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	x, y := a[i], b[i]
	if x >= 0xEE && y >= 0xEE && (x >= 0xF0) != (y >= 0xF0) {
		if x >= 0xF0 {
			return -1
		}
		return 1
	}
	return int(x) - int(y)
}

// sortUTF16 sorts member names for RFC 8785 §3.2.3. Objects are mostly
// small, where an insertion sort beats the general one.
func sortUTF16(ms []objectMember) {
	if len(ms) > 12 {
		slices.SortFunc(ms, func(a, b objectMember) int { return compareUTF16(a.name, b.name) })
		return
	}
	for i := 1; i < len(ms); i++ {
		m := ms[i]
		j := i
		for j > 0 && compareUTF16(ms[j-1].name, m.name) > 0 {
			ms[j] = ms[j-1]
			j--
		}
		ms[j] = m
	}
}

// canonicalString writes a value for an entry; a value without canonical
// form gives an internal refusal carrying the cause.
func canonicalString(v any) (string, error) {
	text, err := exactText(v)
	if err != nil {
		r := NewRefusal(codes.Internal, "a value has no canonical JSON form")
		r.cause = err
		return "", r
	}
	return text, nil
}
