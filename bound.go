package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

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

// minBoundedBytes is the length of the shortest [bound.Bounded] text: an empty
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
	next func(n int, last any) *bound.NextCall
	// widest makes one at least as long as any next makes for a cut of
	// list (nil for a string) of total items or characters, for sizing
	// an envelope.
	widest func(list []any, total int) *bound.NextCall
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
	call := func(cursor string) *bound.NextCall {
		if cursor == "" {
			return nil
		}
		p := make(map[string]any, len(params)+1)
		for k, v := range params {
			p[k] = v
		}
		p[cursorParam] = cursor
		return &bound.NextCall{Action: reg.action.ID, Params: p}
	}
	return &pager{
		next: func(n int, last any) *bound.NextCall {
			if key != "" && last != nil {
				return call(r.seal(b, keyOf(last, key)))
			}
			if key != "" {
				return nil
			}
			return call(r.seal(b, strconv.Itoa(at+n)))
		},
		widest: func(list []any, total int) *bound.NextCall {
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
// bytes (see [bound.Bounded]); next, when not nil, makes the next call.
func boundText(text string, limit int, next *pager) (*bound.Bounded, error) {
	if limit < minBoundedBytes {
		return nil, errCannotCut
	}
	v, err := ijson.Decode([]byte(text), canonicalMaxDepth)
	if err != nil {
		return nil, errCannotCut
	}
	b := bound.Bound{Limit: limit, Bytes: len(text)}
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
func cutList(b bound.Bound, list []any, wrap func([]any) any, next *pager, setNext ...bool) (*bound.Bounded, error) {
	b.Total = len(list)
	form := func(skip, k int) *bound.Bounded {
		f := &bound.Bounded{Value: wrap(list[skip : skip+k : skip+k]), Bound: b}
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
func cutString(b bound.Bound, s string, next *pager) (*bound.Bounded, error) {
	b.Total = utf8.RuneCountInString(s)
	widest := &bound.Bounded{Value: "", Bound: b}
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
		f := &bound.Bounded{Value: s[:end], Bound: b}
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
func omitted(text string, limit int) *bound.Bounded {
	return &bound.Bounded{Bound: bound.Bound{Limit: max(limit, 0), Bytes: len(text), Omitted: true}}
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
type boundFunc func(text string, limit int) (*bound.Bounded, string, error)

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
func (b *batchBound) step(limit int, cut boundFunc, again func() *bound.NextCall, rec store.Record) store.Record {
	b.last = cut
	text := rec.Entry.Result
	var form any
	if text != "" && rec.Entry.Outcome == store.OutcomeDone {
		if !b.off && (limit < 0 || limit > b.left) {
			limit = b.left
		}
		var (
			bf  *bound.Bounded
			err error
		)
		if !b.off && limit <= 0 {
			// The batch's budget is spent: nothing of any result fits, so
			// there is nothing to cut (omitted, as bound would say).
			err = errSpent
		} else {
			bf, text, err = cut(text, limit)
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
func (b *batchBound) result(cut boundFunc, v any, byLast bool) (answered, error) {
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
		cut = b.last
	}
	form, text, err := cut(text, limit)
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
