package actions

// Parameters are copied into JSON's own Go types before anything else
// reads them, so that the caller's value is never changed and the body
// owns what it receives.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
)

// nullText reports whether params is JSON text holding only null, which
// stands for no parameters as nil does.
func nullText(params any) bool {
	text, ok := ijson.Text(params)
	return ok && string(bytes.TrimSpace(text)) == "null"
}

// textFault says what is wrong with a JSON text and where: the byte offset,
// then the line and column (from 1), so that a person can find it in an
// editor. It names no byte of the text.
func textFault(je *ijson.Error, text []byte, depth int) string {
	line, col := ijson.Position(text, je.Offset)
	return fmt.Sprintf("%s, at byte %d (line %d, column %d)", decodeMessage(je.Reason, depth), je.Offset, line, col)
}

func decodeMessage(r ijson.Reason, depth int) string {
	switch r {
	case ijson.DuplicateName:
		return "duplicate member name (RFC 7493 §2.3)"
	case ijson.InvalidUTF8:
		return "invalid UTF-8 (RFC 7493 §2.1)"
	case ijson.LoneSurrogate:
		return "lone surrogate in a string (RFC 7493 §2.1)"
	case ijson.NumberRange:
		return "number beyond the range of a double (RFC 7493 §2.2)"
	case ijson.TooDeep:
		return fmt.Sprintf("nested deeper than %d levels", depth)
	case ijson.TrailingData:
		return "data after the JSON value"
	}
	return "not JSON text"
}

// sizeRefusal says that parameters given as text are past the byte
// bound: their size is what is wrong, not their syntax, so the message
// says so rather than calling them not I-JSON. The keyword stays json, the
// one docs/security.md lists for the bound.
func sizeRefusal(limit int) *Refusal {
	r := refusef(codes.InvalidParameters, "the parameters are too large",
		Issue{Keyword: "json", Message: fmt.Sprintf("the parameters are larger than %d bytes", limit)})
	r.NextAction = "Send smaller parameters: this call's text may hold at most " + strconv.Itoa(limit) + " bytes."
	return r
}

func jsonRefusal(ptr, msg string) *Refusal {
	return refusef(codes.InvalidParameters, "the parameters are not I-JSON text", Issue{Path: ptr, Keyword: "json", Message: msg})
}

// copyError is a fault found while copying parameters; tokens gathers the
// value's location on the way out, innermost first, so that the happy path
// builds no pointer.
type copyError struct {
	tokens []string
	msg    string
}

func (e *copyError) Error() string { return e.msg }

func (e *copyError) refusal() *Refusal {
	toks := make([]string, len(e.tokens))
	for i, t := range e.tokens {
		toks[len(toks)-1-i] = t
	}
	return jsonRefusal(ijson.Pointer(toks), e.msg)
}

// copyParamsValue copies a Go value given as parameters.
func copyParamsValue(v any, depth int) (any, error) {
	c, err := copyValue(v, depth)
	if err != nil {
		return nil, err.refusal()
	}
	return c, nil
}

// copyValue copies a Go value into JSON's Go types, numbers as
// json.Number. Types other than the plain ones go through encoding/json.
func copyValue(in any, depth int) (any, *copyError) {
	// Scalars are immutable: the caller's interface value is shared as it
	// is, which saves boxing each one again.
	switch v := in.(type) {
	case nil, bool:
		return in, nil
	case string:
		if !utf8.ValidString(v) {
			return nil, &copyError{msg: "invalid UTF-8 (RFC 7493 §2.1)"}
		}
		return in, nil
	case json.Number:
		if !ijson.ValidNumber(string(v)) {
			return nil, &copyError{msg: "not a JSON number within the range of a double, or longer than 128 bytes (RFC 7493 §2.2)"}
		}
		return in, nil
	case map[string]any:
		if depth <= 0 {
			return nil, &copyError{msg: "nested deeper than the limit"}
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			if !utf8.ValidString(k) {
				return nil, &copyError{msg: "invalid UTF-8 in a member name (RFC 7493 §2.1)"}
			}
			c, err := copyValue(e, depth-1)
			if err != nil {
				err.tokens = append(err.tokens, k)
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case []any:
		if depth <= 0 {
			return nil, &copyError{msg: "nested deeper than the limit"}
		}
		a := make([]any, len(v))
		for i, e := range v {
			c, err := copyValue(e, depth-1)
			if err != nil {
				err.tokens = append(err.tokens, strconv.Itoa(i))
				return nil, err
			}
			a[i] = c
		}
		return a, nil
	case float64:
		return floatNumber(v, 64)
	case float32:
		return floatNumber(float64(v), 32)
	case int:
		return intNumber(int64(v)), nil
	case int64:
		return intNumber(v), nil
	case int32:
		return intNumber(int64(v)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	}
	rv := reflect.ValueOf(in)
	switch rv.Kind() {
	case reflect.Int8, reflect.Int16:
		return json.Number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uintptr:
		return json.Number(strconv.FormatUint(rv.Uint(), 10)), nil
	}
	b, err := marshalSafely(in)
	if err != nil {
		return nil, &copyError{msg: "the value cannot be written as JSON"}
	}
	d, err := ijson.Decode(b, depth)
	if err != nil {
		return nil, &copyError{msg: "the value is not I-JSON or nests too deep"}
	}
	return d, nil
}

func floatNumber(f float64, bits int) (any, *copyError) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &copyError{msg: "a number must be finite"}
	}
	if f > -1e6 && f < 1e6 && f == math.Trunc(f) && (f != 0 || !math.Signbit(f)) {
		// An integer below 10^6 has the same text as 'g' gives it, and
		// strconv writes it without its float path.
		return intNumber(int64(f)), nil
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits)), nil
}

// intNumber is i as a json.Number in an interface; one of smallNumbers
// when it is one, which saves boxing the text anew.
func intNumber(i int64) any {
	if i >= 0 && i < int64(len(smallNumbers)) {
		return smallNumbers[i]
	}
	return json.Number(strconv.FormatInt(i, 10))
}

// smallNumbers holds the integers 0 to 99 as json.Number, each already
// in an interface. Parameters are full of small counts and quantities;
// a json.Number is immutable, so every copy may share these. Never
// written after it is made.
var smallNumbers = func() (t [100]any) {
	for i := range t {
		t[i] = json.Number(strconv.Itoa(i))
	}
	return t
}()
