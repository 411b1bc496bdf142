package actions

import (
	"strconv"
)

// cursorParam is the name of the parameter that takes a cursor.
const cursorParam = "cursor"

// CursorSchema is the schema of the parameter "cursor", to put among an
// action's properties: an optional string. An action whose parameters
// schema declares "cursor" is one that pages its lists: its bounded
// lists come with a [bound.NextCall]; see docs/pagination.md.
//
// A caller sees cursors as opaque tokens the registry signs (see
// Options.CursorKey), bound to the action, the call's other parameters
// and the caller's principal; the body sees the position a cursor stands
// for: an offset for [Paginate] and [PaginateText], the key of the last
// item given for [PageAfter]. The registry opens the token before the
// parameters are checked, and the run entry records the position, so
// that a replay needs no key. A cursor the registry did not give for
// this call is refused with invalid_parameters at /cursor. The "next" of
// a [Page] a body returns is sealed the same way before the caller sees
// it; a position over 256 bytes is given as no cursor.
const CursorSchema = `{"type": "string", "minLength": 1, "maxLength": 512, ` +
	`"description": "Where to start: give the cursor a previous answer's next or nextCall holds, as it is; leave it out for the first page."}`

// Page is one page of a list, the result shape bounding understands: its
// "items" member is the list cut when over the bound, and its "next" the
// position of the page after, empty on the last page (its caller gets it
// as a cursor). A body builds it with [Paginate] (by offset) or
// [PageAfter] (by key). Returned by a typed action ([Typed]), its items
// are always a JSON array, [] for a nil Items, and its output schema
// says so ("type": "array", never null).
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// withNext returns p with Next set to next: the page as its caller
// gets it, its next sealed.
func (p Page[T]) withNext(next string) any {
	p.Next = next
	return p
}

// offsetOf reads a position of the offset form: the offset of the first
// item it stands for, 0 for "". Any other position is refused with
// invalid_parameters at /cursor.
func offsetOf(position string) (int, error) {
	if position == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(position)
	if err != nil || n < 0 || strconv.Itoa(n) != position {
		return 0, badCursor()
	}
	return n, nil
}

// Paginate returns the page of all that starts at position (the
// call's cursor parameter as the body receives it: an offset, "" for
// the first page) and holds at most size items (size <= 0: every item
// left), with Next set when items remain. A position past the end gives
// an empty last page; one that is not an offset, invalid_parameters.
//
// An offset walks a list that does not change between pages; for a
// table that may, page by key with [PageAfter].
func Paginate[T any](all []T, position string, size int) (Page[T], error) {
	at, err := offsetOf(position)
	if err != nil {
		return Page[T]{}, err
	}
	at = min(at, len(all))
	end := len(all)
	if size > 0 && size < end-at {
		end = at + size
	}
	p := Page[T]{Items: append(make([]T, 0, end-at), all[at:end]...)}
	if end < len(all) {
		p.Next = strconv.Itoa(end)
	}
	return p, nil
}

// PageAfter returns the page of a keyset query: rows are the items that
// follow the call's position (the key of the last item of the page
// before; "" for the first) in the list's order, read one more than size
// (LIMIT size+1) so that the page knows whether more remain. It keeps
// the first size rows (size <= 0: every row, and no next page) and sets
// Next to key of the last one kept when rows remain. Walked page by page
// over a table that changes, every item present throughout the walk is
// given exactly once. Declare the member that holds the key as the
// action's [Definition].PageKey, so that a page cut to its bound goes on
// from the last item kept.
func PageAfter[T any](rows []T, size int, key func(T) string) Page[T] {
	if size <= 0 || len(rows) <= size {
		return Page[T]{Items: append(make([]T, 0, len(rows)), rows...)}
	}
	return Page[T]{Items: append(make([]T, 0, size), rows[:size]...), Next: key(rows[size-1])}
}

// PaginateText returns text from the character (code point) position
// stands for on: what an action that declares a cursor and returns long
// text gives, so that the NextCall of its cut result fetches the
// characters left out. A position past the end gives ""; one that is not
// an offset, invalid_parameters.
func PaginateText(text, position string) (string, error) {
	at, err := offsetOf(position)
	if err != nil {
		return "", err
	}
	for i := range text {
		if at == 0 {
			return text[i:], nil
		}
		at--
	}
	return "", nil
}
