package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// Bounded is the form a result over its bound reaches its caller in
// ([Result].Value, and each step's in [Result].StepResults): never the
// whole result, never a value cut in the middle. Its JSON form is
//
//	{"value": <the part that fits>, "bounded": {"limit": 32768, "bytes": 120345,
//	 "path": "/items", "total": 500, "kept": 40, "left": 460,
//	 "nextCall": {"action": "supply/list_actors", "params": {"cursor": "YTAx.GE3gpKYfd7aE1R-2_v83vA"}}}}
//
// What is cut (see docs/pagination.md):
//   - a list: a root array, or in a root object its "items" member when
//     it is an array, otherwise its one member that is an array. It is
//     cut to the first items that fit, the object's other members kept;
//     Total, Kept and Left count items. When the action declares a
//     cursor parameter ([cursorParam]), NextCall is the same action with
//     the caller's parameters and the cursor of the first item left out
//     (for a keyset action, [Definition].PageKey: of the last item
//     kept), and the "next" member beside a Page's items (or any string "next"
//     member) is set to that cursor;
//   - a root string: cut at a character (code point) boundary; Total,
//     Kept and Left count characters. When the action declares a cursor,
//     NextCall is the same action with the cursor of the first character
//     left out (an action returning long text pages it with
//     [PaginateText]);
//     A first item that alone is over the bound is skipped (Skipped),
//     the items after it kept as they fit: following NextCall gets past
//     it;
//   - anything else over its bound is refused with result_too_large.
//     In a batch a step is never refused for its size: its result is
//     Omitted instead.
//
// The envelope itself, JSON text and all, fits the bound.
type Bounded struct {
	// Value is the part of the result that fits: the list with its first
	// Kept items (and its object's other members), the string's first
	// Kept characters; nil when Omitted.
	Value any `json:"value"`
	// Bound says what was cut.
	Bound Bound `json:"bounded"`
}

// Bound describes how a result was bounded; see [Bounded].
type Bound struct {
	// Limit is the bound in force, in bytes of canonical JSON.
	Limit int `json:"limit"`
	// Bytes is the size of the whole result's canonical JSON.
	Bytes int `json:"bytes"`
	// Path is the RFC 6901 pointer of the list or string cut: "" for the
	// root, "/items" for a member.
	Path string `json:"path"`
	// Total, Kept and Left count the items (a list) or characters (a
	// string) of the whole value, those given and those left out.
	Total int `json:"total"`
	Kept  int `json:"kept"`
	Left  int `json:"left"`
	// Skipped, for a list, counts the items left out at its head because
	// alone each is over the bound (at most one per answer): Value's list
	// starts after it, and NextCall's cursor is past it. Left out when 0.
	Skipped int `json:"skipped,omitempty"`
	// Omitted is true for a batch step's result that did not fit what
	// was left of the batch's bound, or could not be cut: only its size
	// is given, and for a step whose action only reads or is idempotent,
	// NextCall: the step's call as it was made, to get the result on its
	// own. A write's result omitted is not given again (running the
	// write again is not a way to read it).
	Omitted bool `json:"omitted,omitempty"`
	// NextCall, for a list of an action that declares a cursor, is the
	// call that fetches the items left out.
	NextCall *NextCall `json:"nextCall,omitempty"`
}

// NextCall is a call that fetches the rest of a bounded list: Action (an
// action id; MCP answers give the tool name) with Params, the caller's
// parameters as given with [cursorParam] set.
type NextCall struct {
	Action string         `json:"action"`
	Params map[string]any `json:"params"`
}

// resultLimit is the bound of a result of d under limits: the action's
// own when set, negative for none.
func resultLimit(d *Definition, l Limits) int {
	if d != nil && d.MaxResultBytes != 0 {
		return d.MaxResultBytes
	}
	return l.MaxResultBytes
}

// errCannotCut is boundText's answer for a result over its bound that
// cannot be cut: a batch step's result is then omitted, a call's refused
// with [tooLarge]. It holds nothing, so that a long batch whose budget is
// nearly spent builds no refusal per step only to drop it.
var errCannotCut = errors.New("actions: the result cannot be cut to its bound")

// minBoundedBytes is the length of the shortest [Bounded] text: an empty
// list or string kept, every count one digit. A limit below it holds no
// cut result, so a result over such a limit is not decoded to be cut.
const minBoundedBytes = len(`{"bounded":{"bytes":0,"kept":0,"left":0,"limit":0,"path":"","total":0},"value":""}`)

// tooLarge is the refusal of a result over limit bytes that cannot be
// cut. It names the bound, never the value.
func tooLarge(limit int) *Refusal {
	r := refusef(codes.ResultTooLarge, "the result is larger than its bound of "+strconv.Itoa(limit)+" bytes of JSON and cannot be cut",
		Issue{Path: "", Keyword: "maxResultBytes", Message: "the bound is " + strconv.Itoa(limit) + " bytes"})
	r.NextAction = "Narrow the call (filter, ask for fewer fields) so that its result is smaller."
	return r
}

// pager makes the next call of a cut result.
type pager struct {
	// next makes it when n items or characters are given (skipped ones
	// included), last the last item given (nil for a string, or when
	// none is); nil when there is no next call to make.
	next func(n int, last any) *NextCall
	// widest makes one at least as long as any next makes for a cut of
	// list (nil for a string) of total items or characters, for sizing
	// an envelope.
	widest func(list []any, total int) *NextCall
}

// pagerOf returns the pager of a call of reg by caller with params, the
// parameters as given (in JSON's Go types): nil when reg declares no
// cursor or params carries one that is not the registry's.
func (r *Registry) pagerOf(reg *registered, caller *identity.Caller, params map[string]any) *pager {
	if !reg.cursor {
		return nil
	}
	b, ok := bindingOf(reg.action.ID, caller, params)
	if !ok {
		return nil
	}
	position := ""
	if c, ok := params[cursorParam].(string); ok && c != "" {
		if position, ok = r.open(b, c); !ok {
			return nil
		}
	}
	key := reg.action.PageKey
	at := 0
	if key == "" {
		var err error
		if at, err = offsetOf(position); err != nil {
			return nil
		}
	}
	call := func(cursor string) *NextCall {
		if cursor == "" {
			return nil
		}
		p := make(map[string]any, len(params)+1)
		for k, v := range params {
			p[k] = v
		}
		p[cursorParam] = cursor
		return &NextCall{Action: reg.action.ID, Params: p}
	}
	return &pager{
		next: func(n int, last any) *NextCall {
			if key != "" && last != nil {
				return call(r.seal(b, keyOf(last, key)))
			}
			if key != "" {
				return nil
			}
			return call(r.seal(b, strconv.Itoa(at+n)))
		},
		widest: func(list []any, total int) *NextCall {
			if key == "" || list == nil {
				return call(r.seal(b, strconv.Itoa(at+total)))
			}
			longest := 0
			for _, item := range list {
				longest = max(longest, len(keyOf(item, key)))
			}
			return call(r.seal(b, strings.Repeat("x", min(max(longest, 1), maxCursorPosition))))
		},
	}
}

// keyOf is the key of a listed item: its member named key, a string as
// it is, a number as its JSON text; "" when it has none.
func keyOf(item any, key string) string {
	m, _ := item.(map[string]any)
	switch v := m[key].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// boundText bounds the result whose canonical JSON is text to limit
// bytes (see [Bounded]); next, when not nil, makes the next call.
func boundText(text string, limit int, next *pager) (*Bounded, error) {
	if limit < minBoundedBytes {
		return nil, errCannotCut
	}
	v, err := ijson.Decode([]byte(text), canonicalMaxDepth)
	if err != nil {
		return nil, errCannotCut
	}
	b := Bound{Limit: limit, Bytes: len(text)}
	switch x := v.(type) {
	case []any:
		return cutList(b, x, func(items []any) any { return items }, next)
	case string:
		return cutString(b, x, next)
	case map[string]any:
		name := listMember(x)
		if name == "" {
			break
		}
		b.Path = ijson.AppendToken("", name)
		_, hasNext := x["next"].(string)
		hasNext = hasNext || (name == "items" && x["next"] == nil) // a Page leaves out an empty next
		return cutList(b, x[name].([]any), func(items []any) any {
			m := make(map[string]any, len(x))
			for k, v := range x {
				m[k] = v
			}
			m[name] = items
			return m
		}, next, hasNext)
	}
	return nil, errCannotCut
}

// listMember is the member of m that holds its list: "items" when it is
// an array, otherwise its one array member; "" for none.
func listMember(m map[string]any) string {
	if _, ok := m["items"].([]any); ok {
		return "items"
	}
	name := ""
	for k, v := range m {
		if _, ok := v.([]any); ok {
			if name != "" {
				return ""
			}
			name = k
		}
	}
	return name
}

// cutList keeps the first items of list that fit b.Limit inside the
// envelope wrap(items) makes; setNext also points a "next" member at the
// next call's cursor. A first item that alone does not fit is skipped
// (Bound.Skipped), and the items after it kept as they fit, so that a
// caller following NextCall gets past it.
func cutList(b Bound, list []any, wrap func([]any) any, next *pager, setNext ...bool) (*Bounded, error) {
	b.Total = len(list)
	form := func(skip, k int) *Bounded {
		f := &Bounded{Value: wrap(list[skip : skip+k : skip+k]), Bound: b}
		f.Bound.Kept, f.Bound.Skipped, f.Bound.Left = k, skip, len(list)-skip-k
		if next != nil {
			var last any
			if skip+k > 0 {
				last = list[skip+k-1]
			}
			f.Bound.NextCall = next.next(skip+k, last)
			if len(setNext) > 0 && setNext[0] {
				m := f.Value.(map[string]any)
				delete(m, "next")
				if f.Bound.NextCall != nil {
					m["next"] = f.Bound.NextCall.Params[cursorParam]
				}
			}
		}
		return f
	}
	for skip := 0; skip <= min(len(list), 1); skip++ {
		// The envelope with no item, its counts and cursor at their widest.
		widest := form(0, 0)
		widest.Bound.Kept, widest.Bound.Left, widest.Bound.Skipped = len(list), len(list), skip
		if next != nil {
			widest.Bound.NextCall = next.widest(list, len(list))
			if len(setNext) > 0 && setNext[0] && widest.Bound.NextCall != nil {
				widest.Value.(map[string]any)["next"] = widest.Bound.NextCall.Params[cursorParam]
			}
		}
		fixed, err := exactText(widest)
		if err != nil {
			return nil, errCannotCut
		}
		room, k := b.Limit-len(fixed), 0
		for ; skip+k < len(list); k++ {
			t, err := exactText(list[skip+k])
			if err != nil {
				return nil, errCannotCut
			}
			cost := len(t)
			if k > 0 {
				cost++ // the comma
			}
			if cost > room {
				break
			}
			room -= cost
		}
		for ; k > 0 || (skip > 0 && k == 0); k-- { // the sizes above are an upper bound: check
			f := form(skip, k)
			if t, err := exactText(f); err == nil && len(t) <= b.Limit {
				return f, nil
			}
			if k == 0 {
				break
			}
		}
	}
	return nil, errCannotCut
}

// cutString keeps the first characters of s that fit b.Limit; next,
// when not nil, makes the call that fetches the characters left, its
// cursor counting characters ([PaginateText]).
func cutString(b Bound, s string, next *pager) (*Bounded, error) {
	b.Total = utf8.RuneCountInString(s)
	widest := &Bounded{Value: "", Bound: b}
	widest.Bound.Kept, widest.Bound.Left = b.Total, b.Total
	if next != nil {
		widest.Bound.NextCall = next.widest(nil, b.Total)
	}
	fixed, err := exactText(widest)
	if err != nil {
		return nil, errCannotCut
	}
	room, end, kept := b.Limit-len(fixed), 0, 0
	for i, c := range s {
		cost := escapedLen(c)
		if cost > room {
			break
		}
		room -= cost
		end, kept = i+utf8.RuneLen(c), kept+1
	}
	for kept > 0 {
		f := &Bounded{Value: s[:end], Bound: b}
		f.Bound.Kept, f.Bound.Left = kept, b.Total-kept
		if next != nil {
			f.Bound.NextCall = next.next(kept, nil)
		}
		if t, err := exactText(f); err == nil && len(t) <= b.Limit {
			return f, nil
		}
		_, size := utf8.DecodeLastRuneInString(s[:end])
		end, kept = end-size, kept-1
	}
	return nil, errCannotCut
}

// escapedLen is the length of c in a JSON string as RFC 8785 writes it.
func escapedLen(c rune) int {
	switch {
	case c == '"' || c == '\\' || c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
		return 2
	case c < 0x20:
		return 6
	case c == utf8.RuneError:
		return 3
	}
	return utf8.RuneLen(c)
}

// omitted is the form of a batch step's result that is not given.
func omitted(text string, limit int) *Bounded {
	return &Bounded{Bound: Bound{Limit: max(limit, 0), Bytes: len(text), Omitted: true}}
}

// batchBound tracks what is left of a batch's result bound as its steps
// run: the batch's own result has MaxResultBytes reserved first.
type batchBound struct {
	limits  Limits
	left    int // for the steps; meaningless when off
	reserve int // for the batch's result
	off     bool
	steps   []any
	last    boundFunc // bounds as the last step ran
}

// boundFunc bounds a result's text to limit bytes as one call's result
// (paging as that call, if it can): nil when it fits; the text as the
// caller gets it, its next sealed (see [Registry.boundFor]).
type boundFunc func(text string, limit int) (*Bounded, string, error)

// newBatchBound starts the bound of a batch of n steps.
func newBatchBound(l Limits, n int) *batchBound {
	b := &batchBound{limits: l, off: l.MaxBatchResultBytes < 0, steps: make([]any, 0, n)}
	if !b.off {
		b.reserve = l.MaxResultBytes
		if b.reserve < 0 || b.reserve > l.MaxBatchResultBytes {
			b.reserve = l.MaxBatchResultBytes
		}
		b.left = l.MaxBatchResultBytes - b.reserve
	}
	return b
}

// step records the bounded form of one step's result (rec's entry holds
// it whole) and returns the record kept small. limit is the step's
// action's result limit, bound bounds as that step, and again, asked
// only when the result is omitted, returns the call that gets the
// result on its own (nil for none).
func (b *batchBound) step(limit int, bound boundFunc, again func() *NextCall, rec store.Record) store.Record {
	b.last = bound
	text := rec.Entry.Result
	var form any
	if text != "" && rec.Entry.Outcome == store.OutcomeDone {
		if !b.off && (limit < 0 || limit > b.left) {
			limit = b.left
		}
		var (
			bf  *Bounded
			err error
		)
		if !b.off && limit <= 0 {
			// The batch's budget is spent: nothing of any result fits, so
			// there is nothing to cut (omitted, as bound would say).
			err = errSpent
		} else {
			bf, text, err = bound(text, limit)
		}
		switch {
		case err != nil:
			bf = omitted(text, limit)
			bf.Bound.NextCall = again()
			form = bf
		case bf != nil:
			form = bf
			t, _ := exactText(bf)
			b.left -= len(t)
		default:
			form, _ = ijson.Decode([]byte(text), canonicalMaxDepth)
			b.left -= len(text)
		}
	}
	b.steps = append(b.steps, form)
	return keepSmall(rec, b.limits.MaxEntryResultBytes)
}

// result bounds the batch's result v (in JSON's Go types): by
// MaxResultBytes, within what is reserved and left. byLast is true when v
// is the last step's whole result, which then pages as that step; bound
// bounds as no step.
func (b *batchBound) result(bound boundFunc, v any, byLast bool) (answered, error) {
	text, err := canonicalString(v)
	if err != nil {
		return answered{}, err
	}
	limit := b.limits.MaxResultBytes
	if !b.off {
		room := b.reserve + max(b.left, 0)
		if limit < 0 || limit > room {
			limit = room
		}
	}
	if byLast && b.last != nil { // no step ran: bound as none
		bound = b.last
	}
	form, text, err := bound(text, limit)
	switch {
	case err != nil:
		return answered{value: omitted(text, limit), text: mustText(omitted(text, limit)), steps: b.steps}, nil
	case form != nil:
		return answered{value: form, text: mustText(form), steps: b.steps}, nil
	}
	if byLast && form == nil {
		v, _ = ijson.Decode([]byte(text), canonicalMaxDepth) // its next sealed
	}
	return answered{value: v, text: text, steps: b.steps}, nil
}

// errSpent says a batch's result budget is spent.
var errSpent = errors.New("actions: the batch's result budget is spent")

func mustText(v any) string {
	t, _ := exactText(v)
	return t
}

// keepSmall returns rec with every result text of its entry (nested
// calls' included) longer than limit bytes replaced by its SHA-256 and
// size; limit < 0 keeps them whole. The steps are copied where changed.
func keepSmall(rec store.Record, limit int) store.Record {
	if limit >= 0 {
		rec.Entry = smallEntry(rec.Entry, limit)
	}
	return rec
}

func smallEntry(e store.RunEntry, limit int) store.RunEntry {
	if !oversized(e, limit) {
		return e
	}
	if len(e.Result) > limit {
		e.ResultSHA256, e.ResultBytes = digestOf(e.Result), len(e.Result)
		e.Result = ""
	}
	steps := make([]store.RunStep, len(e.Steps))
	copy(steps, e.Steps)
	for i, s := range steps {
		if s.Call != nil && oversized(*s.Call, limit) {
			c := smallEntry(*s.Call, limit)
			steps[i].Call = &c
		}
	}
	if e.Steps != nil {
		e.Steps = steps
	}
	return e
}

// oversized reports whether e or a call nested in it keeps a result
// text longer than limit.
func oversized(e store.RunEntry, limit int) bool {
	if len(e.Result) > limit {
		return true
	}
	for _, s := range e.Steps {
		if s.Call != nil && oversized(*s.Call, limit) {
			return true
		}
	}
	return false
}

// digestOf is the hex SHA-256 of a canonical JSON text.
func digestOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
