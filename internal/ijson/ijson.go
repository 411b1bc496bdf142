// Package ijson decodes JSON text (RFC 8259) strictly, refusing what the
// Internet JSON profile (I-JSON, RFC 7493) forbids: duplicate member names,
// invalid UTF-8, lone surrogates and numbers beyond the range of an IEEE 754
// double. It never panics and never recurses, so deeply nested input costs
// heap, not stack, and is bounded by a depth limit.
package ijson

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// MaxNumberLength bounds the text of one number, in bytes: a double needs
// 17 significant digits, and 128 bytes leave room for any exact decimal
// text a person writes.
const MaxNumberLength = 128

// minExponent is the smallest decimal exponent a nonzero number may reach.
const minExponent = -400

// DefaultMaxDepth is the nesting limit that [Decode] applies when it is given
// a limit of zero or less.
const DefaultMaxDepth = 10000

// Reason says why [Decode] refused a text. Its values are stable identifiers
// that a program may compare and log.
type Reason string

// The reasons [Decode] reports.
const (
	// Syntax: the text is not JSON (RFC 8259 §2-§7), or it ends early.
	Syntax Reason = "syntax"
	// DuplicateName: an object has two members whose names are equal after
	// unescaping (RFC 7493 §2.3).
	DuplicateName Reason = "duplicate_name"
	// InvalidUTF8: the text is not well-formed UTF-8 (RFC 8259 §8.1,
	// RFC 7493 §2.1).
	InvalidUTF8 Reason = "invalid_utf8"
	// LoneSurrogate: a \u escape names a UTF-16 surrogate that is not half of
	// a high-low pair (RFC 7493 §2.1).
	LoneSurrogate Reason = "lone_surrogate"
	// NumberRange: a number's magnitude is too large for a double, or so
	// small that it is below 1e-400 (far under the smallest double,
	// 4.9e-324), or its text is longer than MaxNumberLength (RFC 7493
	// §2.2: I-JSON numbers are doubles). Loss of precision, and underflow
	// of a number written within those bounds, are accepted. The bounds keep
	// exact arithmetic on the text (math/big, as validators use) cheap.
	NumberRange Reason = "number_range"
	// TooDeep: objects and arrays are nested deeper than the limit.
	TooDeep Reason = "too_deep"
	// TrailingData: something other than whitespace follows the value.
	TrailingData Reason = "trailing_data"
)

func (r Reason) phrase() string {
	switch r {
	case Syntax:
		return "syntax error"
	case DuplicateName:
		return "duplicate member name"
	case InvalidUTF8:
		return "invalid utf-8"
	case LoneSurrogate:
		return "lone surrogate"
	case NumberRange:
		return "number out of range"
	case TooDeep:
		return "nesting too deep"
	case TrailingData:
		return "trailing data"
	}
	return string(r)
}

// Error is the error [Decode] returns. Its message names the reason, the
// pointer and the offset only: it never repeats text from the input other
// than the member names that make up Pointer.
type Error struct {
	// Offset is the byte offset in the input where the fault was found: the
	// offending byte, the backslash of a bad escape, the opening quote of a
	// duplicated name, the bracket that went too deep, or len(input) when
	// the text ends early.
	Offset int64
	// Pointer is the RFC 6901 JSON Pointer of the value being read when the
	// fault was found ("" for the root). For a duplicate name it points at
	// the duplicated member; for a fault inside a member name, or between
	// members, it points at the enclosing object or array.
	Pointer string
	// Reason says what was wrong.
	Reason Reason

	detail string // fixed text, never input
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("ijson: ")
	b.WriteString(e.Reason.phrase())
	if e.detail != "" {
		b.WriteString(" (")
		b.WriteString(e.detail)
		b.WriteByte(')')
	}
	if e.Pointer == "" {
		b.WriteString(" at the root")
	} else {
		b.WriteString(" at ")
		b.WriteString(strconv.Quote(e.Pointer))
	}
	b.WriteString(", byte offset ")
	b.WriteString(strconv.FormatInt(e.Offset, 10))
	return b.String()
}

// Decode parses data as exactly one JSON value, with optional whitespace
// around it, and returns it in JSON's own Go types:
//
//   - object → map[string]any (never nil)
//   - array → []any (never nil, empty arrays too)
//   - number → json.Number holding the number's exact text
//   - string → string
//   - true, false → bool
//   - null → nil
//
// maxDepth bounds nesting: each object or array opened adds one level, so a
// top-level scalar has depth 0, "[]" and "{}" depth 1 and "[[1]]" depth 2.
// A maxDepth of zero or less means [DefaultMaxDepth].
//
// Every refusal is an *[Error] whose Reason is one of [Syntax],
// [DuplicateName], [InvalidUTF8], [LoneSurrogate], [NumberRange], [TooDeep]
// or [TrailingData]. Decode does not refuse noncharacters (U+FDD0, U+FFFE...)
// although RFC 7493 §2.1 asks senders not to send them, and does not apply
// any Unicode normalisation. A byte order mark is a syntax error.
func Decode(data []byte, maxDepth int) (any, error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	d := decoderPool.Get().(*decoder)
	d.data = data
	d.pos = 0
	d.maxDepth = maxDepth
	v, err := d.run()
	d.release()
	if err != nil {
		return nil, err
	}
	return v, nil
}

// text returns data[start:end] as a string: a copy, or the same memory
// when the decoder's data is shared.
func (d *decoder) text(start, end int) string {
	if d.shared {
		return unsafe.String(&d.data[start], end-start)
	}
	return string(d.data[start:end])
}

// frame is an object or array that is open.
type frame struct {
	object bool
	vals   int // index in decoder.vals of this container's first value
	keys   int // index in decoder.keys of this object's first name
}

// member is a name read in an open object, kept with its offset so that a
// duplicate can be reported where it is.
type member struct {
	name string
	off  int
}

// decoder holds the scratch stacks of one Decode call. The values of every
// open container live on one shared stack and are copied out, at their exact
// size, when the container closes.
type decoder struct {
	data     []byte
	pos      int
	maxDepth int
	frames   []frame
	vals     []any
	keys     []member
	buf      []byte
	names    [256]string // recent member names, shared by calls (strings are immutable)
	// shared: data is the memory of an immutable string, which the
	// strings and numbers read point into instead of copying it.
	shared bool
	// kept, when shared: the boxed strings and numbers of the text (see
	// Kept), given back in order (next) or, while collect, gathered.
	kept    []any
	next    int
	collect bool
}

var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

// Scratch larger than this is dropped rather than kept in the pool.
const maxPooledScratch = 1 << 12

func (d *decoder) release() {
	d.data = nil
	d.shared = false
	d.kept, d.next, d.collect = nil, 0, false
	clear(d.vals)
	clear(d.keys)
	d.vals = d.vals[:0]
	d.keys = d.keys[:0]
	d.frames = d.frames[:0]
	d.buf = d.buf[:0]
	if cap(d.vals) > maxPooledScratch || cap(d.keys) > maxPooledScratch ||
		cap(d.frames) > maxPooledScratch || cap(d.buf) > 16*maxPooledScratch {
		return
	}
	decoderPool.Put(d)
}

// run reads values until the top-level one is complete. It keeps its own
// stack of open containers instead of recursing.
func (d *decoder) run() (any, error) {
	var v any
	var err error
value:
	for {
		c, ok := d.skipSpace()
		if !ok {
			return nil, d.fail(d.pos, Syntax, "unexpected end of input", true)
		}
		switch {
		case c == '"':
			var str string
			if str, err = d.readString(true); err == nil {
				v, err = d.leaf(str, false)
			}
		case c == '-' || (c >= '0' && c <= '9'):
			var n json.Number
			if n, err = d.readNumber(); err == nil {
				v, err = d.leaf(string(n), true)
			}
		case c == '{' || c == '[':
			var more bool
			if v, more, err = d.open(c); more {
				continue value
			}
		case c == 't':
			v, err = d.readLiteral("true", true)
		case c == 'f':
			v, err = d.readLiteral("false", false)
		case c == 'n':
			v, err = d.readLiteral("null", nil)
		default:
			return nil, d.unexpected(d.pos, true)
		}
		if err != nil {
			return nil, err
		}

		// v is complete: hand it to the innermost open container, closing
		// as many containers as the text closes.
		for {
			if len(d.frames) == 0 {
				return v, d.finish()
			}
			d.vals = append(d.vals, v)
			c, ok := d.skipSpace()
			if !ok {
				return nil, d.fail(d.pos, Syntax, "unexpected end of input", false)
			}
			object := d.frames[len(d.frames)-1].object
			if c == ',' {
				d.pos++
				if object {
					if err := d.readName(); err != nil {
						return nil, err
					}
				}
				continue value
			}
			if object && c != '}' {
				return nil, d.fail(d.pos, Syntax, "expected ',' or '}'", false)
			}
			if !object && c != ']' {
				return nil, d.fail(d.pos, Syntax, "expected ',' or ']'", false)
			}
			d.pos++
			if v, err = d.close(); err != nil {
				return nil, err
			}
		}
	}
}

// open opens the container that c starts. An empty one is closed at
// once and returned as v; otherwise more says that its members follow
// (an object's first name read already).
func (d *decoder) open(c byte) (v any, more bool, err error) {
	if len(d.frames) >= d.maxDepth {
		return nil, false, d.fail(d.pos, TooDeep, "", true)
	}
	d.frames = append(d.frames, frame{object: c == '{', vals: len(d.vals), keys: len(d.keys)})
	d.pos++
	end := byte(']')
	if c == '{' {
		end = '}'
	}
	if c2, ok := d.skipSpace(); ok && c2 == end {
		d.pos++
		v, err = d.close()
		return v, false, err
	}
	if c == '{' {
		if err := d.readName(); err != nil {
			return nil, false, err
		}
	}
	return nil, true, nil
}

// finish checks that only whitespace follows the top-level value.
func (d *decoder) finish() error {
	if _, ok := d.skipSpace(); ok {
		return d.fail(d.pos, TrailingData, "", false)
	}
	return nil
}

// close builds the innermost open container from the scratch stacks and
// pops it.
func (d *decoder) close() (any, error) {
	f := d.frames[len(d.frames)-1]
	vals := d.vals[f.vals:]
	var v any
	if f.object {
		names := d.keys[f.keys:]
		m := make(map[string]any, len(vals))
		for i, k := range names {
			m[k.name] = vals[i]
			if len(m) != i+1 {
				ptr := appendToken(d.pointer(false), k.name)
				return nil, &Error{Offset: int64(k.off), Pointer: string(ptr), Reason: DuplicateName}
			}
		}
		clear(names)
		d.keys = d.keys[:f.keys]
		v = m
	} else {
		s := make([]any, len(vals))
		copy(s, vals)
		v = s
	}
	clear(vals)
	d.vals = d.vals[:f.vals]
	d.frames = d.frames[:len(d.frames)-1]
	return v, nil
}

// readName reads `"name" :` in the innermost (object) container.
func (d *decoder) readName() error {
	c, ok := d.skipSpace()
	if !ok {
		return d.fail(d.pos, Syntax, "unexpected end of input", false)
	}
	if c != '"' {
		if c >= utf8.RuneSelf {
			return d.unexpected(d.pos, false)
		}
		return d.fail(d.pos, Syntax, "expected member name", false)
	}
	off := d.pos
	name, err := d.readName1()
	if err != nil {
		return err
	}
	d.keys = append(d.keys, member{name: name, off: off})
	c, ok = d.skipSpace()
	if !ok {
		return d.fail(d.pos, Syntax, "unexpected end of input", false)
	}
	if c != ':' {
		return d.fail(d.pos, Syntax, "expected ':'", false)
	}
	d.pos++
	return nil
}

// readName1 reads a member name. Short names without escapes come from a
// small cache, since the same names recur in arrays of objects.
func (d *decoder) readName1() (string, error) {
	data := d.data
	start := d.pos + 1
	i := start
	for i < len(data) && plain[data[i]] {
		i++
	}
	if i < len(data) && data[i] == '"' && i-start <= maxCachedName && !d.shared {
		b := data[start:i]
		slot := &d.names[nameSlot(b)]
		if *slot != string(b) {
			*slot = string(b)
		}
		d.pos = i + 1
		return *slot, nil
	}
	return d.readString(false)
}

const maxCachedName = 32

// nameSlot picks a cache slot from a name's length and end bytes.
func nameSlot(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return (len(b)*131 + int(b[0])*31 + int(b[len(b)-1])) & (len(decoder{}.names) - 1)
}

func (d *decoder) skipSpace() (byte, bool) {
	data := d.data
	for i := d.pos; i < len(data); i++ {
		c := data[i]
		if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			d.pos = i
			return c, true
		}
	}
	d.pos = len(data)
	return 0, false
}

func (d *decoder) readLiteral(word string, v any) (any, error) {
	end := d.pos + len(word)
	if end > len(d.data) || string(d.data[d.pos:end]) != word {
		return nil, d.fail(d.pos, Syntax, "invalid literal", true)
	}
	d.pos = end
	return v, nil
}

// readNumber reads a number (RFC 8259 §6) and keeps its text. It calls
// strconv.ParseFloat only when the number could be too large for a double.
func (d *decoder) readNumber() (json.Number, error) {
	data := d.data
	start := d.pos
	i := start
	if data[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i >= len(data):
		return "", d.fail(i, Syntax, "unexpected end of input", true)
	case data[i] == '0':
		i++
		if i < len(data) && isDigit(data[i]) {
			return "", d.fail(i, Syntax, "leading zero in number", true)
		}
	case data[i] >= '1' && data[i] <= '9':
		i++
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return "", d.fail(i, Syntax, "invalid number", true)
	}
	intDigits := i - intStart
	if i < len(data) && data[i] == '.' {
		i++
		fracStart := i
		for i < len(data) && isDigit(data[i]) {
			i++
		}
		if i == fracStart {
			return "", d.fail(i, Syntax, "invalid number", true)
		}
	}
	exp := 0
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		neg := false
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			neg = data[i] == '-'
			i++
		}
		expStart := i
		for i < len(data) && isDigit(data[i]) {
			if exp < 1e8 {
				exp = exp*10 + int(data[i]-'0')
			}
			i++
		}
		if i == expStart {
			return "", d.fail(i, Syntax, "invalid number", true)
		}
		if neg {
			exp = -exp
		}
	}
	text := data[start:i]
	if !inRange(text, intDigits, exp) {
		return "", d.fail(start, NumberRange, "", true)
	}
	d.pos = i
	return json.Number(d.text(start, i)), nil
}

// inRange applies the bounds of NumberRange to well-formed number text with
// intDigits digits before the point and decimal exponent exp.
func inRange(text []byte, intDigits, exp int) bool {
	if len(text) > MaxNumberLength {
		return false
	}
	// The magnitude is below 10^(intDigits+exp); at or under 10^308 it is
	// surely finite, so only larger bounds need the exact check.
	if intDigits+exp > 308 {
		if _, err := strconv.ParseFloat(string(text), 64); err != nil {
			return false
		}
	}
	if lead, nonzero := leadingExponent(text, intDigits); nonzero && lead+exp < minExponent {
		return false
	}
	return true
}

// leadingExponent returns the decimal exponent of the first nonzero digit
// of the mantissa (0 for "1", -3 for "0.001"), and whether there is one.
func leadingExponent(text []byte, intDigits int) (int, bool) {
	pos := intDigits // digits left before the point, counting down
	for _, c := range text {
		switch {
		case c == 'e' || c == 'E':
			return 0, false
		case c == '.':
			pos = 0
		case c >= '0' && c <= '9':
			if c != '0' {
				return pos - 1, true
			}
			pos--
		}
	}
	return 0, false
}

// Exact reports whether the value of JSON number text s (within the
// bounds of NumberRange) is the value of the double nearest to it written
// in its shortest form, as RFC 8785 writes numbers: "1.50", "0.1" and
// "12345678901234567000" are, "9007199254740993" and
// "12345678901234567890" are not (their canonical text, 9007199254740992
// and 12345678901234567000, states another number). A number of at most
// 15 significant digits always is.
func Exact(s string) bool {
	if significant(s) <= 15 {
		return true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	return sameDecimal(s, strconv.FormatFloat(f, 'g', -1, 64))
}

// significant counts the digits of number text s from its first nonzero
// digit to its last nonzero digit.
func significant(s string) int {
	first, last, n := -1, -1, 0
	for _, c := range []byte(s) {
		if c == 'e' || c == 'E' {
			break
		}
		if c < '0' || c > '9' {
			continue
		}
		if c != '0' {
			if first < 0 {
				first = n
			}
			last = n
		}
		n++
	}
	if first < 0 {
		return 0
	}
	return last - first + 1
}

// sameDecimal reports whether two number texts state the same value.
func sameDecimal(a, b string) bool {
	ad, ae, an := decimal(a)
	bd, be, bn := decimal(b)
	return ad == bd && (ad == "" || (ae == be && an == bn))
}

// Decimal returns the value of number text s as its significant digits
// (no leading or trailing zeros), the decimal exponent of the last of them
// and its sign: "-1.50e2" is ("15", 1, true); zero is ("", 0, false).
func Decimal(s string) (digits string, exp int, neg bool) { return decimal(s) }

// decimal writes number text as its significant digits, the exponent of
// the last of them and its sign: "-1.50e2" is ("15", 1, true); zero is
// ("", 0, false).
func decimal(s string) (digits string, exp int, neg bool) {
	neg = strings.HasPrefix(s, "-")
	mant, e := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, _ = strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	}
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	all := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(all, "0")
	if trimmed == "" {
		return "", 0, false
	}
	// The last kept digit's exponent: past the point by len(frac), plus the
	// zeros trimmed on the right.
	return trimmed, e - len(frac) + (len(all) - len(trimmed)), neg
}

// ValidNumber reports whether s is JSON number text (RFC 8259 §6) within
// the bounds of NumberRange, as Decode would accept it.
func ValidNumber(s string) bool {
	if s == "" || len(s) > MaxNumberLength {
		return false
	}
	// The number is read where it is, in s's memory: nothing is copied.
	d := decoderPool.Get().(*decoder)
	d.data = unsafe.Slice(unsafe.StringData(s), len(s)) // only read
	d.shared = true
	d.pos = 0
	_, err := d.readNumber()
	ok := err == nil && d.pos == len(s)
	d.release()
	return ok
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// plain marks the bytes a string can hold as they are: printable ASCII other
// than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// readString reads a string whose opening quote is at d.pos. child says
// whether a fault belongs to the value being read (true) or to the enclosing
// container (false, for member names).
func (d *decoder) readString(child bool) (string, error) {
	data := d.data
	start := d.pos + 1
	i := start
	for i < len(data) && plain[data[i]] {
		i++
	}
	if i < len(data) && data[i] == '"' {
		d.pos = i + 1
		return d.text(start, i), nil
	}
	return d.readStringSlow(start, i, child)
}

// readStringSlow continues readString past the first byte that needs work:
// an escape, a non-ASCII byte, a control character or the end of input.
func (d *decoder) readStringSlow(start, i int, child bool) (string, error) {
	data := d.data
	buf := d.buf[:0]
	escaped := false
	seg := start // start of the bytes not yet copied to buf
	for i < len(data) {
		c := data[i]
		switch {
		case plain[c]:
			i++
		case c == '"':
			var s string
			if escaped {
				buf = append(buf, data[seg:i]...)
				s = string(buf)
			} else {
				s = d.text(start, i)
			}
			d.buf = buf
			d.pos = i + 1
			return s, nil
		case c == '\\':
			escaped = true
			buf = append(buf, data[seg:i]...)
			var err error
			if buf, i, err = d.unescape(buf, i, child); err != nil {
				d.buf = buf
				return "", err
			}
			seg = i
		case c < 0x20:
			d.buf = buf
			return "", d.fail(i, Syntax, "control character in string", child)
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				d.buf = buf
				return "", d.fail(i, InvalidUTF8, "", child)
			}
			i += size
		}
	}
	d.buf = buf
	return "", d.fail(len(data), Syntax, "unterminated string", child)
}

// unescape decodes the escape whose backslash is at i, appends its text to
// buf and returns the offset after it.
func (d *decoder) unescape(buf []byte, i int, child bool) ([]byte, int, error) {
	data := d.data
	if i+1 >= len(data) {
		return buf, i, d.fail(len(data), Syntax, "unterminated string", child)
	}
	var c byte
	switch data[i+1] {
	case '"', '\\', '/':
		c = data[i+1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		r, ok := hex4(data, i+2)
		if !ok {
			return buf, i, d.fail(i, Syntax, "invalid \\u escape", child)
		}
		j := i + 6
		if r >= 0xD800 && r <= 0xDFFF {
			if r >= 0xDC00 {
				return buf, i, d.fail(i, LoneSurrogate, "", child)
			}
			if j+1 >= len(data) || data[j] != '\\' || data[j+1] != 'u' {
				return buf, i, d.fail(i, LoneSurrogate, "", child)
			}
			lo, ok := hex4(data, j+2)
			if !ok {
				return buf, i, d.fail(j, Syntax, "invalid \\u escape", child)
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return buf, i, d.fail(i, LoneSurrogate, "", child)
			}
			r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			j += 6
		}
		return utf8.AppendRune(buf, r), j, nil
	default:
		return buf, i, d.fail(i, Syntax, "invalid escape", child)
	}
	return append(buf, c), i + 2, nil
}

// hex4 reads four hexadecimal digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unexpected reports a byte that cannot start what was expected: as invalid
// UTF-8 when it is, as a syntax error otherwise.
func (d *decoder) unexpected(off int, child bool) error {
	if c := d.data[off]; c >= utf8.RuneSelf {
		if r, size := utf8.DecodeRune(d.data[off:]); r == utf8.RuneError && size == 1 {
			return d.fail(off, InvalidUTF8, "", child)
		}
	}
	return d.fail(off, Syntax, "unexpected character", child)
}

func (d *decoder) fail(off int, reason Reason, detail string, child bool) error {
	return &Error{Offset: int64(off), Pointer: string(d.pointer(child)), Reason: reason, detail: detail}
}

// pointer builds the JSON Pointer of the innermost open container, or with
// child of the value being read inside it. Only errors call it.
func (d *decoder) pointer(child bool) []byte {
	var p []byte
	for i, f := range d.frames {
		var vals, keys int
		switch {
		case i+1 < len(d.frames):
			vals, keys = d.frames[i+1].vals, d.frames[i+1].keys
		case child:
			vals, keys = len(d.vals), len(d.keys)
		default:
			return p
		}
		if f.object {
			if keys <= f.keys {
				return p // no name read yet
			}
			p = appendToken(p, d.keys[keys-1].name)
		} else {
			p = append(p, '/')
			p = strconv.AppendInt(p, int64(vals-f.vals), 10)
		}
	}
	return p
}

// Text returns v as JSON text when it is one of the forms JSON text is
// passed in (json.RawMessage, []byte, string), and false for any other
// value.
func Text(v any) ([]byte, bool) {
	switch t := v.(type) {
	case json.RawMessage:
		return t, true
	case []byte:
		return t, true
	case string:
		return []byte(t), true
	}
	return nil, false
}
