package ijson

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pointer joins reference tokens into an RFC 6901 JSON Pointer. Each token is
// escaped (RFC 6901 §3: "~" becomes "~0", "/" becomes "~1"). No tokens give
// "", the pointer of the whole document.
func Pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		writeToken(&b, t)
	}
	return b.String()
}

// AppendToken returns ptr extended by one reference token, escaped as RFC 6901
// §3 asks. ptr must already be a pointer ("" or starting with "/").
func AppendToken(ptr, token string) string {
	if !strings.ContainsAny(token, "~/") {
		return ptr + "/" + token
	}
	var b strings.Builder
	b.Grow(len(ptr) + len(token) + 4)
	b.WriteString(ptr)
	b.WriteByte('/')
	writeToken(&b, token)
	return b.String()
}

// AppendIndex returns ptr extended by an array index token.
func AppendIndex(ptr string, i int) string {
	return ptr + "/" + strconv.Itoa(i)
}

func writeToken(b *strings.Builder, t string) {
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(c)
		}
	}
}

// appendToken is the byte-slice form used while building error pointers.
func appendToken(dst []byte, t string) []byte {
	dst = append(dst, '/')
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// Position returns the line and column (both from 1) of byte offset off in
// data, as an editor shows them: lines end at "\n" (a "\r\n" counts once),
// and a column counts UTF-8 characters, each byte of invalid UTF-8 as one.
// An offset past the end is taken as len(data).
func Position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col = 1, 1
	for i := 0; i < int(off); {
		if data[i] == '\n' {
			line, col = line+1, 1
			i++
			continue
		}
		_, size := utf8.DecodeRune(data[i:])
		i += size
		col++
	}
	return line, col
}
