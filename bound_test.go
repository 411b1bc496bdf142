package actions

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

var updateBounds = flag.Bool("update-bounds", false, "rewrite the want members of testdata/bounds/cases.json")

type boundCase struct {
	Name   string          `json:"name"`
	Limit  int             `json:"limit"`
	Cursor bool            `json:"cursor"`
	Params map[string]any  `json:"params"`
	Result json.RawMessage `json:"result"`
	Want   json.RawMessage `json:"want,omitempty"`
	Code   codes.Code      `json:"code,omitempty"`
}

// boundRegistry registers t/r, whose body returns result, with or
// without a cursor parameter, under a result bound of limit.
func boundRegistry(t testing.TB, limit int, cursor bool, result any, log store.Store) *Registry {
	schema := `{"type":"object"}`
	if cursor {
		schema = `{"type":"object","properties":{"cursor":` + CursorSchema + `}}`
	}
	reg := NewRegistry(&Options{Limits: Limits{MaxResultBytes: limit}, Store: log, CursorKey: []byte("a fixed key, for fixtures")})
	require.NoError(t, reg.Register(New(Definition{ID: "t/r", Parameters: schema},
		func(context.Context, map[string]any, *Trace) (any, error) { return result, nil })))
	return reg
}

func TestBoundFixtures(t *testing.T) {
	data, err := os.ReadFile("testdata/bounds/cases.json")
	require.NoError(t, err)
	var file struct {
		Comment string      `json:"comment"`
		Cases   []boundCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(data, &file))
	for i, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			v, err := ijson.Decode(c.Result, 0)
			require.NoError(t, err)
			whole, err := exactText(v)
			require.NoError(t, err)
			res, err := boundRegistry(t, c.Limit, c.Cursor, v, nil).Run(context.Background(), Call{Action: "t/r", Params: c.Params})
			if *updateBounds {
				file.Cases[i].Want, file.Cases[i].Code = nil, ""
				if err != nil {
					file.Cases[i].Code = CodeOf(err)
				} else {
					file.Cases[i].Want = json.RawMessage(res.Text)
				}
				return
			}
			if c.Code != "" {
				requireRefusal(t, err, c.Code)
				assert.NotContains(t, err.Error(), "zzzz", "the message quotes no value")
				assert.Contains(t, err.Error(), fmt.Sprint(c.Limit), "the message names the bound")
				assert.Equal(t, store.OutcomeRefused, res.Entry().Outcome)
				assert.Equal(t, c.Code, res.Entry().Error)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, string(c.Want), res.Text)
			assert.LessOrEqual(t, len(res.Text), c.Limit, "the answer fits its bound")
			assert.True(t, utf8.ValidString(res.Text))
			b, bounded := res.Value.(*bound.Bounded)
			if len(whole) <= c.Limit {
				assert.False(t, bounded, "a result within its bound is given whole")
				assert.Equal(t, whole, res.Text)
				return
			}
			require.True(t, bounded, "a result over its bound is bounded")
			if c.Cursor { // the whole as its caller would get it: its next sealed
				assert.GreaterOrEqual(t, b.Bound.Bytes, len(whole))
			} else {
				assert.Equal(t, len(whole), b.Bound.Bytes)
			}
			assert.Equal(t, b.Bound.Total, b.Bound.Kept+b.Bound.Left)
			assert.Positive(t, b.Bound.Kept)
			assert.Equal(t, c.Cursor, b.Bound.NextCall != nil, "a next call exactly when the action declares a cursor")
		})
	}
	if *updateBounds {
		out, err := json.MarshalIndent(file, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("testdata/bounds/cases.json", append(out, '\n'), 0o644))
	}
}

// TestBoundStringCutsAtACharacter cuts strings of multi-byte characters
// at every bound from the smallest that fits one character upwards: the
// part kept is always a prefix of whole characters.
func TestBoundStringCutsAtACharacter(t *testing.T) {
	s := strings.Repeat("aé😀\u2028\x01", 30)
	whole, err := exactText(s)
	require.NoError(t, err)
	for limit := 130; limit < len(whole); limit += 7 {
		res, err := boundRegistry(t, limit, false, s, nil).Run(context.Background(), Call{Action: "t/r"})
		require.NoError(t, err, "limit %d", limit)
		b := res.Value.(*bound.Bounded)
		part := b.Value.(string)
		assert.True(t, strings.HasPrefix(s, part), "limit %d", limit)
		assert.True(t, utf8.ValidString(part))
		assert.Equal(t, utf8.RuneCountInString(part), b.Bound.Kept)
		assert.Equal(t, utf8.RuneCountInString(s), b.Bound.Total)
		assert.LessOrEqual(t, len(res.Text), limit)
	}
}

// TestBoundShortestEnvelope: no cut result is shorter than
// minBoundedBytes, the envelope of nothing kept, so that a limit below it
// is refused without decoding the result.
func TestBoundShortestEnvelope(t *testing.T) {
	for _, v := range []any{"", []any{}} {
		text, err := exactText(&bound.Bounded{Value: v})
		require.NoError(t, err)
		assert.Len(t, text, minBoundedBytes, "%q", text)
	}
	cuts := 0
	for _, result := range []string{`"abcdefghijklmnopqrstuvwxyz"`, `[1,2,3,4,5,6,7,8,9]`, `["` + strings.Repeat("x", 200) + `",1]`, `{"items":[1,2],"n":3}`} {
		for limit := range minBoundedBytes + 40 {
			form, err := boundText(result, limit, nil)
			if limit < minBoundedBytes {
				require.ErrorIs(t, err, errCannotCut, "%s within %d", result, limit)
				continue
			}
			if err == nil {
				text := must(exactText(form))
				assert.GreaterOrEqual(t, len(text), minBoundedBytes, text)
				assert.LessOrEqual(t, len(text), limit, text)
				cuts++
			}
		}
	}
	assert.Positive(t, cuts, "some limits above the envelope hold a cut")
}

// pagedRegistry registers t/list, which pages n items with Paginate,
// size items at most per page (0: every item left).
func pagedRegistry(t testing.TB, n, size, limit int) *Registry {
	all := make([]map[string]any, n)
	for i := range all {
		all[i] = map[string]any{"id": fmt.Sprintf("item-%04d", i), "note": strings.Repeat("n", i%17)}
	}
	reg := NewRegistry(&Options{Limits: Limits{MaxResultBytes: limit}})
	require.NoError(t, reg.Register(New(Definition{ID: "t/list",
		Parameters: `{"type":"object","properties":{"cursor":` + CursorSchema + `,"tag":{"type":"string"}}}`},
		func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			c, _ := p["cursor"].(string)
			return Paginate(all, c, size)
		})))
	return reg
}

// TestBoundNextCallFollowed follows nextCall (when bounded) or the page's
// next (when not) until neither is left: every item comes exactly once,
// in order, and the caller's own parameters ride along.
func TestBoundNextCallFollowed(t *testing.T) {
	for _, size := range []int{0, 7, 70} {
		t.Run(fmt.Sprintf("page_size_%d", size), func(t *testing.T) {
			reg := pagedRegistry(t, 1000, size, 2048)
			params := map[string]any{"tag": "kept"}
			var seen []string
			for calls := 0; ; calls++ {
				require.Less(t, calls, 2000, "the pages end")
				res, err := reg.Run(context.Background(), Call{Action: "t/list", Params: params})
				require.NoError(t, err)
				require.LessOrEqual(t, len(res.Text), 2048)
				var page struct {
					Items []struct{ ID string } `json:"items"`
					Next  string                `json:"next"`
				}
				var next map[string]any
				if b, ok := res.Value.(*bound.Bounded); ok {
					require.NoError(t, json.Unmarshal(must(exactText(b.Value)), &page))
					require.NotNil(t, b.Bound.NextCall)
					assert.Equal(t, "t/list", b.Bound.NextCall.Action)
					assert.Equal(t, b.Bound.NextCall.Params["cursor"], page.Next, "the page's next agrees with nextCall")
					next = b.Bound.NextCall.Params
				} else {
					require.NoError(t, json.Unmarshal([]byte(res.Text), &page))
					if page.Next != "" {
						next = map[string]any{"tag": "kept", "cursor": page.Next}
					}
				}
				for _, it := range page.Items {
					seen = append(seen, it.ID)
				}
				if next == nil {
					break
				}
				assert.Equal(t, "kept", next["tag"])
				params = next
			}
			require.Len(t, seen, 1000)
			for i, id := range seen {
				require.Equal(t, fmt.Sprintf("item-%04d", i), id)
			}
		})
	}
}

func must(s string, err error) []byte {
	if err != nil {
		panic(err)
	}
	return []byte(s)
}

// TestBoundBatchOfBigReads runs 50 reads each over its bound: every step
// runs, the answer's results stay within MaxBatchResultBytes, later steps
// are omitted, and the entries keep digests, not results.
func TestBoundBatchOfBigReads(t *testing.T) {
	log := NewRunLog()
	reg := NewRegistry(&Options{Store: log})
	require.NoError(t, reg.Register(New(Definition{ID: "t/big", Effect: EffectRead,
		Parameters: `{"type":"object","properties":{"cursor":` + CursorSchema + `}}`},
		func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			items := make([]any, 2000)
			for i := range items {
				items[i] = fmt.Sprintf("row %d of a long listing", i)
			}
			return map[string]any{"items": items}, nil
		})))
	var b Batch
	for range 50 {
		b.Steps = append(b.Steps, Step{Call: "t/big"})
	}
	res, err := reg.Run(context.Background(), Call{Batch: &b})
	require.NoError(t, err)
	require.Len(t, res.Records, 50)
	require.Len(t, res.StepResults, 50)
	total := len(res.Text)
	omitted := 0
	for i, v := range res.StepResults {
		bd, ok := v.(*bound.Bounded)
		require.True(t, ok, "step %d is bounded", i)
		if bd.Bound.Omitted {
			omitted++
			assert.Nil(t, bd.Value)
			require.NotNil(t, bd.Bound.NextCall, "step %d: an omitted read says how to get its result", i)
			assert.Equal(t, "t/big", bd.Bound.NextCall.Action)
			if omitted == 1 { // following it gets the result, bounded as a call of its own
				again, err := reg.Run(context.Background(), Call{Action: bd.Bound.NextCall.Action, Params: bd.Bound.NextCall.Params})
				require.NoError(t, err)
				assert.IsType(t, &bound.Bounded{}, again.Value)
			}
			continue
		}
		total += len(must(exactText(bd)))
		assert.NotNil(t, bd.Bound.NextCall)
	}
	assert.LessOrEqual(t, total, defaultLimits.MaxBatchResultBytes, "the results in all fit the batch's bound")
	assert.Greater(t, omitted, 40, "past the bound, results are left out")
	assert.IsType(t, &bound.Bounded{}, res.Value, "the batch's result is bounded too")
	assert.LessOrEqual(t, len(res.Text), defaultLimits.MaxResultBytes)
	for i, rec := range log.Records() {
		assert.Equal(t, store.OutcomeDone, rec.Entry.Outcome, "step %d ran", i)
		assert.Empty(t, rec.Entry.Result, "step %d: the entry keeps no big result", i)
		assert.Len(t, rec.Entry.ResultSHA256, 64)
		assert.Greater(t, rec.Entry.ResultBytes, defaultLimits.MaxEntryResultBytes)
		assert.False(t, rec.RolledBack)
	}
}

// TestBoundNestedResults: a nested call gives its body the whole result
// (bounds are for callers), its entry inside the outer one keeps a
// digest, and the outer result is bounded on its own.
func TestBoundNestedResults(t *testing.T) {
	reg := NewRegistry(&Options{Limits: Limits{MaxResultBytes: 1024, MaxEntryResultBytes: 256}})
	big := make([]any, 300)
	for i := range big {
		big[i] = fmt.Sprintf("v%d", i)
	}
	require.NoError(t, reg.Register(
		New(Definition{ID: "t/inner"}, func(context.Context, map[string]any, *Trace) (any, error) { return big, nil }),
		New(Definition{ID: "t/outer"}, func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			v, err := tr.Call(ctx, "t/inner", nil)
			if err != nil {
				return nil, err
			}
			return map[string]any{"count": len(v.([]any)), "values": v}, nil
		})))
	res, err := reg.Run(context.Background(), Call{Action: "t/outer"})
	require.NoError(t, err)
	b, ok := res.Value.(*bound.Bounded)
	require.True(t, ok)
	assert.Equal(t, "/values", b.Bound.Path)
	assert.Equal(t, 300, b.Bound.Total)
	assert.Equal(t, json.Number("300"), b.Value.(map[string]any)["count"], "the body got every nested item")
	assert.Nil(t, b.Bound.NextCall, "no cursor declared: no next call")
	e := res.Entry()
	require.Len(t, e.Steps, 1)
	inner := e.Steps[0].Call
	require.NotNil(t, inner)
	assert.Empty(t, inner.Result)
	assert.Equal(t, digestOf(must2(exactText(big))), inner.ResultSHA256)
	assert.Len(t, e.ResultSHA256, 64)

	// The nested result that is not cut: an object over the bound whose
	// list is not at its top.
	_, err = reg.Run(context.Background(), Call{Action: "t/r"})
	requireRefusal(t, err, codes.UnknownAction)
}

func must2(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// TestBoundReplayDigested replays the fixture record whose result was
// kept as a digest: it matches while the body gives the same result,
// and departs at /resultSHA256 when the body changes.
func TestBoundReplayDigested(t *testing.T) {
	data, err := os.ReadFile("testdata/bounds/replay_digested.json")
	require.NoError(t, err)
	var rec store.Record
	require.NoError(t, json.Unmarshal(data, &rec))
	require.Empty(t, rec.Entry.Result)
	text := strings.Repeat("0123456789", 500)
	body := text
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(New(Definition{ID: "t/text"},
		func(context.Context, map[string]any, *Trace) (any, error) { return body, nil })))
	got, err := reg.Replay(context.Background(), rec)
	require.NoError(t, err)
	assert.Equal(t, rec.Entry, got, "the replayed entry is kept small as the recorded one")

	// A run records the same entry.
	res, err := reg.Run(context.Background(), Call{Action: "t/text"})
	require.NoError(t, err)
	assert.Equal(t, rec.Entry, res.Entry())
	assert.Equal(t, text, res.Value, "within the default result bound, the caller gets it whole")

	body = text[:len(text)-1] + "x"
	_, err = reg.Replay(context.Background(), rec)
	var d *Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, "/resultSHA256", d.Path)
}

// TestBoundPerActionOverride: an action's own bound replaces the
// registry's; a negative one switches bounding off for it.
func TestBoundPerActionOverride(t *testing.T) {
	reg := NewRegistry(&Options{Limits: Limits{MaxResultBytes: 64}})
	long := strings.Repeat("x", 200)
	require.NoError(t, reg.Register(
		New(Definition{ID: "t/own", MaxResultBytes: 150}, func(context.Context, map[string]any, *Trace) (any, error) { return long, nil }),
		New(Definition{ID: "t/off", MaxResultBytes: -1}, func(context.Context, map[string]any, *Trace) (any, error) { return long, nil })))
	res, err := reg.Run(context.Background(), Call{Action: "t/own"})
	require.NoError(t, err)
	assert.Equal(t, 150, res.Value.(*bound.Bounded).Bound.Limit)
	assert.LessOrEqual(t, len(res.Text), 150)
	res, err = reg.Run(context.Background(), Call{Action: "t/off"})
	require.NoError(t, err)
	assert.Equal(t, long, res.Value)
}

// TestBoundOmittedWriteIsNotCalledAgain: a batch of writes whose results
// pass the batch's bound leaves them out with their sizes only: no next
// call, since making a write again is not a way to read its result.
func TestBoundOmittedWriteIsNotCalledAgain(t *testing.T) {
	reg := NewRegistry(nil)
	runs := 0
	require.NoError(t, reg.Register(New(Definition{ID: "t/write", Parameters: `{"type":"object"}`},
		func(context.Context, map[string]any, *Trace) (any, error) {
			runs++
			return map[string]any{"note": strings.Repeat("w", 30_000)}, nil
		})))
	var b Batch
	for range 5 {
		b.Steps = append(b.Steps, Step{Call: "t/write"})
	}
	res, err := reg.Run(context.Background(), Call{Batch: &b})
	require.NoError(t, err)
	omitted := 0
	for _, v := range res.StepResults {
		if bd, ok := v.(*bound.Bounded); ok && bd.Bound.Omitted {
			omitted++
			assert.Nil(t, bd.Bound.NextCall)
		}
	}
	assert.Positive(t, omitted)
	assert.Equal(t, 5, runs)
}
