package actions

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// table is a list of rows ordered by id that changes between pages.
type table struct {
	mu  sync.Mutex
	ids []string
}

func (tb *table) after(after string, limit int) []map[string]any {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var rows []map[string]any
	for _, id := range tb.ids {
		if id > after && (limit <= 0 || len(rows) < limit) {
			rows = append(rows, map[string]any{"id": id, "note": strings.Repeat("n", 80)})
		}
	}
	return rows
}

func (tb *table) change(insert, del []string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.ids = slices.DeleteFunc(tb.ids, func(id string) bool { return slices.Contains(del, id) })
	tb.ids = append(tb.ids, insert...)
	slices.Sort(tb.ids)
}

// keysetRegistry registers t/rows, which pages tb by key, under a
// result bound of limit and the cursor key key.
func keysetRegistry(t *testing.T, tb *table, limit int, key string) *Registry {
	reg := NewRegistry(&Options{Limits: Limits{MaxResultBytes: limit}, CursorKey: []byte(key)})
	require.NoError(t, reg.Register(New(Definition{ID: "t/rows", PageKey: "id",
		Parameters: `{"type":"object","properties":{"cursor":` + CursorSchema + `,"size":{"type":"integer"}}}`},
		func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			after, _ := p["cursor"].(string)
			size := int(p["size"].(json.Number).String()[0] - '0')
			return PageAfter(tb.after(after, size+1), size, func(r map[string]any) string { return r["id"].(string) }), nil
		})))
	return reg
}

// walkFixture is testdata/cursors/walk.json.
type walkFixture struct {
	Rows    []string `json:"rows"`
	Page    int      `json:"page"`
	Changes []struct {
		At     int      `json:"at"`
		Insert []string `json:"insert"`
		Delete []string `json:"delete"`
	} `json:"changes"`
	WantAhead []string `json:"wantAhead"`
}

// TestCursorKeysetWalkOnAChangingTable follows next (and nextCall, when
// a page is cut to its bound) over a table that changes between pages:
// every row present throughout is given exactly once, and rows inserted
// ahead of the walk are given too. With a bound small enough that pages
// are cut, the cut pages go on from the last row kept (PageKey).
func TestCursorKeysetWalkOnAChangingTable(t *testing.T) {
	data, err := os.ReadFile("testdata/cursors/walk.json")
	require.NoError(t, err)
	var fx walkFixture
	require.NoError(t, json.Unmarshal(data, &fx))
	for _, limit := range []int{0, 420} {
		tb := &table{ids: slices.Clone(fx.Rows)}
		reg := keysetRegistry(t, tb, limit, "k")
		caller := &identity.Caller{Principal: "p", Surface: identity.SurfaceMCP}
		params := map[string]any{"size": fx.Page}
		var seen []string
		cut := 0
		for page := 0; ; page++ {
			require.Less(t, page, 40, "the walk ends")
			res, err := reg.Run(context.Background(), Call{Action: "t/rows", Params: params, Caller: caller})
			require.NoError(t, err)
			var got struct {
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
				Next string `json:"next"`
			}
			next := ""
			if b, ok := res.Value.(*bound.Bounded); ok {
				cut++
				require.NoError(t, json.Unmarshal(must(exactText(b.Value)), &got))
				if b.Bound.NextCall != nil {
					next = b.Bound.NextCall.Params[cursorParam].(string)
				}
			} else {
				require.NoError(t, json.Unmarshal([]byte(res.Text), &got))
				next = got.Next
			}
			for _, it := range got.Items {
				seen = append(seen, it.ID)
			}
			for _, c := range fx.Changes {
				if c.At == page {
					tb.change(c.Insert, c.Delete)
				}
			}
			if next == "" {
				break
			}
			assert.NotRegexp(t, `^a[0-9]+$`, next, "the cursor is a token, not an id")
			params = map[string]any{"size": fx.Page, cursorParam: next}
		}
		if limit > 0 {
			assert.Positive(t, cut, "some pages were cut to the bound")
		}
		counts := map[string]int{}
		for _, id := range seen {
			counts[id]++
		}
		for id, n := range counts {
			assert.Equal(t, 1, n, "limit %d: %s given once", limit, id)
		}
		deleted := map[string]bool{}
		for _, c := range fx.Changes {
			for _, id := range c.Delete {
				deleted[id] = true
			}
		}
		for _, id := range fx.Rows {
			if !deleted[id] {
				assert.Contains(t, counts, id, "limit %d: a row present throughout is given", limit)
			}
		}
		for _, id := range fx.WantAhead {
			assert.Contains(t, counts, id, "limit %d: a row inserted ahead of the walk is given", limit)
		}
		assert.True(t, slices.IsSorted(seen), "in the table's order")
	}
}

// TestCursorRefusedWhenNotGiven: a cursor the registry did not give for
// this very call (made up, altered, another action's, other parameters',
// another principal's, another key's) is refused with invalid_parameters
// at /cursor, without quoting it, and the body does not run.
func TestCursorRefusedWhenNotGiven(t *testing.T) {
	tb := &table{ids: []string{"a1", "a2", "a3", "a4", "a5"}}
	reg := keysetRegistry(t, tb, 0, "k")
	ran := 0
	require.NoError(t, reg.Register(New(Definition{ID: "t/other",
		Parameters: `{"type":"object","properties":{"cursor":` + CursorSchema + `,"size":{"type":"integer"}}}`},
		func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			ran++
			return Paginate([]int{1, 2, 3}, p["cursor"].(string), 1)
		})))
	p := &identity.Caller{Principal: "p", Surface: identity.SurfaceMCP}
	q := &identity.Caller{Principal: "q", Surface: identity.SurfaceMCP}
	res, err := reg.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 2}, Caller: p})
	require.NoError(t, err)
	var first struct{ Next string }
	require.NoError(t, json.Unmarshal([]byte(res.Text), &first))
	require.NotEmpty(t, first.Next)
	good := first.Next
	_, err = reg.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 2, "cursor": good}, Caller: p})
	require.NoError(t, err, "the cursor given is accepted for the same call")

	flipped := []byte(good)
	flipped[0] ^= 1
	other := NewRegistry(&Options{CursorKey: []byte("another key")})
	b, _ := bindingOf("t/rows", p, map[string]any{"size": json.Number("2")})
	cases := []struct {
		name   string
		action string
		params map[string]any
		caller *identity.Caller
	}{
		{"an offset", "t/rows", map[string]any{"size": 2, "cursor": "31"}, p},
		{"a large offset", "t/rows", map[string]any{"size": 2, "cursor": "9999999999"}, p},
		{"an id", "t/rows", map[string]any{"size": 2, "cursor": "a2"}, p},
		{"altered", "t/rows", map[string]any{"size": 2, "cursor": string(flipped)}, p},
		{"another principal's", "t/rows", map[string]any{"size": 2, "cursor": good}, q},
		{"no principal", "t/rows", map[string]any{"size": 2, "cursor": good}, nil},
		{"other parameters", "t/rows", map[string]any{"size": 3, "cursor": good}, p},
		{"another action's", "t/other", map[string]any{"size": 2, "cursor": good}, p},
		{"another key's", "t/rows", map[string]any{"size": 2, "cursor": other.seal(b, "a2")}, p},
	}
	for _, c := range cases {
		res, err := reg.Run(context.Background(), Call{Action: c.action, Params: c.params, Caller: c.caller})
		r := requireRefusal(t, err, codes.InvalidParameters)
		require.Len(t, r.Issues, 1, c.name)
		assert.Equal(t, "/cursor", r.Issues[0].Path, c.name)
		assert.NotContains(t, err.Error(), c.params["cursor"], c.name)
		assert.Equal(t, store.OutcomeRefused, res.Entry().Outcome, c.name)
	}
	assert.Zero(t, ran, "no body ran")
}

// TestCursorReplicasShareAKey: a cursor one registry gave is accepted by
// another with the same CursorKey (replicas), and refused by one that
// drew its own.
func TestCursorReplicasShareAKey(t *testing.T) {
	tb := &table{ids: []string{"a1", "a2", "a3"}}
	a, b := keysetRegistry(t, tb, 0, "shared"), keysetRegistry(t, tb, 0, "shared")
	res, err := a.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 1}})
	require.NoError(t, err)
	next := res.Value.(Page[map[string]any]).Next
	require.NotEmpty(t, next)
	assert.Contains(t, res.Text, next, "Value and Text give the same cursor")
	res, err = b.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 1, "cursor": next}})
	require.NoError(t, err)
	assert.Equal(t, "a2", res.Value.(Page[map[string]any]).Items[0]["id"])

	own := NewRegistry(nil)
	require.NoError(t, own.Register(a.mustAction(t, "t/rows")))
	_, err = own.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 1, "cursor": next}})
	requireRefusal(t, err, codes.InvalidParameters)
}

// mustAction is the action registered as id.
func (r *Registry) mustAction(t *testing.T, id string) Action {
	reg, ok := r.lookup(id)
	require.True(t, ok)
	return reg.action
}

// TestCursorReplayNeedsNoKey: the entry of a paged call records the
// position its cursor stood for and the body's own next, so a registry
// with another key replays it exactly.
func TestCursorReplayNeedsNoKey(t *testing.T) {
	tb := &table{ids: []string{"a1", "a2", "a3", "a4"}}
	live := keysetRegistry(t, tb, 0, "live")
	res, err := live.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 1}})
	require.NoError(t, err)
	next := res.Value.(Page[map[string]any]).Next
	res, err = live.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 1, "cursor": next}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"cursor":"a1","size":1}`, res.Entry().Parameters, "the entry records the position")
	assert.Contains(t, res.Entry().Result, `"next":"a2"`, "and the body's next as it gave it")
	_, err = keysetRegistry(t, tb, 0, "another").Replay(context.Background(), res.Records[0])
	require.NoError(t, err)
}

// TestCursorInABatchStep: a batch step's result gives its next as a
// cursor that the same call, made on its own, accepts.
func TestCursorInABatchStep(t *testing.T) {
	tb := &table{ids: []string{"a1", "a2", "a3"}}
	reg := keysetRegistry(t, tb, 0, "k")
	caller := &identity.Caller{Principal: "p", Surface: identity.SurfaceMCP}
	b := Batch{Steps: []Step{{Call: "t/rows", With: map[string]any{"size": 1}}}}
	res, err := reg.Run(context.Background(), Call{Batch: &b, Caller: caller})
	require.NoError(t, err)
	require.Len(t, res.StepResults, 1)
	next, _ := res.StepResults[0].(map[string]any)["next"].(string)
	require.NotEmpty(t, next)
	assert.NotEqual(t, "a1", next)
	res, err = reg.Run(context.Background(), Call{Action: "t/rows", Params: map[string]any{"size": 1, "cursor": next}, Caller: caller})
	require.NoError(t, err)
	assert.Equal(t, "a2", res.Value.(Page[map[string]any]).Items[0]["id"])
}
