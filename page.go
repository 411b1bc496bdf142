package actions

import (
	"strconv"
)

// CursorParam is the name of the parameter through which an action that
// pages its lists takes a cursor. An action whose parameters schema
// declares it (a string: use [CursorSchema]) is one whose bounded lists
// come with a [NextCall]; see docs/pagination.md.
const CursorParam = "cursor"

// CursorSchema is the schema of [CursorParam], to put among an action's
// properties: an optional string of 1 to 10 decimal digits (an offset
// into the whole list; models should treat it as opaque).
const CursorSchema = `{"type": "string", "pattern": "^[0-9]{1,10}$", ` +
	`"description": "Where to start: give the cursor a previous answer's next or nextCall holds; leave it out for the first page."}`

// Page is one page of a list, the result shape bounding understands: its
// "items" member is the list cut when over the bound, and its "next" the
// cursor of the page after, empty on the last page. A body builds it
// with [Paginate].
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// cursorAt is the cursor of the item at offset (0 is the first): its
// decimal digits.
func cursorAt(offset int) string { return strconv.Itoa(offset) }

// CursorOffset reads a cursor: the offset of the first item it stands
// for, 0 for "". A cursor that is not one offset's decimal digits gives an
// invalid_parameters refusal at /cursor (its text not quoted).
func CursorOffset(cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(cursor)
	if err != nil || n < 0 || cursorAt(n) != cursor {
		return 0, refusef(CodeInvalidParameters, "the cursor is not one an answer gave",
			Issue{Path: "/" + CursorParam, Keyword: CursorParam, Message: "not a cursor an answer gave"})
	}
	return n, nil
}

// Paginate returns the page of all that starts at cursor and holds at
// most size items (size <= 0: every item left), with Next set when items
// remain. A cursor past the end gives an empty last page; an invalid one,
// invalid_parameters (see [CursorOffset]).
func Paginate[T any](all []T, cursor string, size int) (Page[T], error) {
	at, err := CursorOffset(cursor)
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
		p.Next = cursorAt(end)
	}
	return p, nil
}

// PaginateText returns text from the character (code point) cursor
// stands for on: what an action that declares a cursor and returns long
// text gives, so that the NextCall of its cut result fetches the
// characters left out. A cursor past the end gives ""; an invalid one,
// invalid_parameters (see [CursorOffset]).
func PaginateText(text, cursor string) (string, error) {
	at, err := CursorOffset(cursor)
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
