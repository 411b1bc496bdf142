package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/portable"
	"github.com/actionreg/actions/store"
)

// orderSchema has an optional property with a default: a strict OpenAI
// tool makes it nullable, and a null sent for it means left out.
const orderSchema = `{"type":"object","properties":{"item":{"type":"string"},"qty":{"type":"integer","default":1}},
	"required":["item"],"additionalProperties":false}`

// An unknown profile is refused when the adapter is made, with
// constraint_violation and no other code.
func TestNewUnknownProfile(t *testing.T) {
	a, err := New(actions.NewRegistry(nil), "nobody")
	assert.Nil(t, a)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "profiles: constraint_violation: unknown export profile"), err.Error())
	assert.Equal(t, codes.ConstraintViolation, actions.CodeOf(err))
	for _, c := range []codes.Code{codes.UnknownAction, codes.InvalidParameters, codes.Internal} {
		assert.NotErrorIs(t, err, c)
	}
	var r *actions.Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "profile", r.Issues[0].Keyword)
}

// A tool name that is itself an id (the model sent "shop/order" for the
// tool "shop-order") runs nothing: it is refused unknown_action and
// recorded under the name with its slash written %2F; another name with
// a slash is recorded as it came.
func TestRunToolCallIDAsName(t *testing.T) {
	var seen []store.Record
	ran := 0
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) { seen = append(seen, rec) }})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/order", DeprecatedAliases: []string{"shop/buy"}, Parameters: orderSchema},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { ran++; return "ok", nil }))
	a, err := New(reg, OpenAIChat)
	require.NoError(t, err)
	ctx := context.Background()
	caller := &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}
	for name, recorded := range map[string]string{"shop/order": "shop%2Forder", "shop/buy": "shop%2Fbuy", "shop/none": "shop/none", "a/b-c": "a/b-c"} {
		seen = nil
		res, err := a.RunToolCall(ctx, actions.Call{Action: name, Params: `{"item":"tea"}`, Caller: caller, ToolCallID: "call_1"})
		assert.ErrorIs(t, err, codes.UnknownAction, name)
		assert.Equal(t, codes.UnknownAction, actions.CodeOf(err), name)
		require.Len(t, seen, 1, "%s: the refused call is recorded", name)
		assert.Equal(t, recorded, seen[0].Entry.Action, name)
		assert.Equal(t, store.OutcomeRefused, seen[0].Entry.Outcome, name)
		assert.Equal(t, codes.UnknownAction, seen[0].Entry.Error, name)
		assert.Equal(t, "call_1", seen[0].Audit.ToolCallID, name)
		assert.Equal(t, recorded, res.Entry().Action, name)
	}
	assert.Zero(t, ran, "no body ran")
}

// An action registered after its first
// call is learned on its own first call, an alias maps as its id, and
// an unknown id costs no export.
func TestAdapterLearnsLater(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/order", Parameters: orderSchema}, echo))
	a, err := New(reg, OpenAIChat)
	require.NoError(t, err)
	ctx := context.Background()
	args := `{"item":"tea","qty":null}`

	res, err := a.RunToolCall(ctx, actions.Call{Action: "shop-order", Params: args})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1")}, res.Value)

	_, err = a.RunToolCall(ctx, actions.Call{Action: "shop-later", Params: args})
	assert.ErrorIs(t, err, codes.UnknownAction)
	_, known := a.back.Load("shop/later")
	assert.False(t, known, "an unknown id is not cached")

	reg.MustRegister(actions.New(actions.Definition{ID: "shop/later", DeprecatedAliases: []string{"shop/old"}, Parameters: orderSchema}, echo))
	for _, name := range []string{"shop-later", "shop-old"} {
		res, err = a.RunToolCall(ctx, actions.Call{Action: name, Params: args})
		require.NoError(t, err, name)
		assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1")}, res.Value, name)
		assert.Equal(t, "shop/later", res.Entry().Action, "%s: recorded under the id", name)
	}

	res, err = a.RunToolCall(ctx, actions.Call{Action: "shop-order", Params: map[string]any{"item": "tea"}})
	require.NoError(t, err, "params that are not text go to Run as they are")
	assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1")}, res.Value)
	res, err = a.RunToolCall(ctx, actions.Call{Action: "shop-order", Params: " "})
	assert.ErrorIs(t, err, codes.InvalidParameters, "empty arguments are {}, which lacks item")
	assert.Equal(t, "{}", res.Entry().Parameters)
}

// A hidden action is in no export, so its nulls pass as they are when
// the host calls it; the adapter remembers that it looked.
func TestAdapterHiddenAction(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/hidden", Surfaces: []identity.Surface{}, Parameters: orderSchema}, echo))
	a, err := New(reg, OpenAIChat)
	require.NoError(t, err)
	_, err = a.RunToolCall(context.Background(), actions.Call{Action: "shop-hidden", Params: `{"item":"tea","qty":null}`})
	assert.ErrorIs(t, err, codes.InvalidParameters)
	v, ok := a.back.Load("shop/hidden")
	require.True(t, ok)
	assert.False(t, v.(*exported).strict)
	res, err := a.RunToolCall(context.Background(), actions.Call{Action: "shop-hidden", Params: `{"item":"tea"}`})
	require.NoError(t, err)
	assert.Equal(t, "tea", res.Value.(map[string]any)["item"])
}

// The profiles' way back goes through the registry's result bound.
func TestBoundRunToolCall(t *testing.T) {
	all := make([]map[string]any, 200)
	for i := range all {
		all[i] = map[string]any{"id": strings.Repeat("i", 8), "note": strings.Repeat("n", i%17)}
	}
	reg := actions.NewRegistry(&actions.Options{Limits: actions.Limits{MaxResultBytes: 1024}})
	reg.MustRegister(actions.New(actions.Definition{ID: "t/list",
		Parameters: `{"type":"object","properties":{"cursor":` + actions.CursorSchema + `,"tag":{"type":"string"}}}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			c, _ := p["cursor"].(string)
			return actions.Paginate(all, c, 0)
		}))
	res, err := runToolCall(context.Background(), reg, OpenAIChat, actions.Call{Action: "t-list", Params: `{"tag":"x"}`})
	require.NoError(t, err)
	b, ok := res.Value.(*bound.Bounded)
	require.True(t, ok)
	assert.LessOrEqual(t, len(res.Text), 1024)
	require.NotNil(t, b.Bound.NextCall)
	assert.Equal(t, "x", b.Bound.NextCall.Params["tag"], "the next call keeps the other parameters")
	next, err := json.Marshal(b.Bound.NextCall.Params)
	require.NoError(t, err)
	_, err = runToolCall(context.Background(), reg, OpenAIChat, actions.Call{Action: "t-list", Params: string(next)})
	require.NoError(t, err, "the next call's cursor is accepted")
	_, err = runToolCall(context.Background(), reg, OpenAIChat, actions.Call{Action: "t-list", Params: `{"tag":"x","cursor":"40"}`})
	assert.Equal(t, codes.InvalidParameters, actions.CodeOf(err), "a made-up cursor is refused")
}

// An action that needs an idempotency key says so in every profile.
func TestKeyToolSaysEveryProfile(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge", NeedsIdempotencyKey: true,
		Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}}}`}, echo))
	for _, p := range All() {
		t.Run(string(p), func(t *testing.T) {
			ex, err := exportOf(reg, p, nil)
			require.NoError(t, err)
			text, err := actions.CanonicalJSON(ex.Tools)
			require.NoError(t, err)
			assert.Contains(t, string(text), "idempotency key")
		})
	}
}

// Calls at once on a new adapter learn the strict exports once and each
// map their nulls back (run under -race).
func TestAdapterConcurrent(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/order", Parameters: orderSchema}, echo),
		actions.New(actions.Definition{ID: "shop/other", Parameters: orderSchema}, echo))
	a, err := New(reg, OpenAIResponses)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			name := []string{"shop-order", "shop-other"}[i%2]
			res, err := a.RunToolCall(context.Background(), actions.Call{Action: name, Params: `{"item":"tea","qty":null}`})
			if err == nil && res.Value.(map[string]any)["qty"] != json.Number("1") {
				err = errors.New(name + ": the null was not mapped back")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

// The package's constant and the rule the root applies at Register are one
// number.
func TestPortableLengthIsTheRegistrysRule(t *testing.T) {
	assert.Equal(t, portable.MaxToolNameLength, MaxPortableToolNameLength)
}

// strictNullsFile is testdata/strict_nulls_nested.json.
type strictNullsFile struct {
	Cases []struct {
		Name      string          `json:"name"`
		Schema    json.RawMessage `json:"schema"`
		Arguments string          `json:"arguments"`
		Want      json.RawMessage `json:"want"`
	} `json:"cases"`
}

// The nulls of a strict tool are mapped back wherever the export made a
// property nullable: inside an allOf the export merged as well as inside
// anyOf branches. The export names the property by the merged schema's
// pointer, the walk back by the source's, and both mean the same value.
func TestRunToolCallStrictNullsNested(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "strict_nulls_nested.json"))
	require.NoError(t, err)
	var file strictNullsFile
	require.NoError(t, json.Unmarshal(data, &file))
	require.NotEmpty(t, file.Cases)
	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			reg := actions.NewRegistry(nil)
			reg.MustRegister(actions.New(actions.Definition{ID: "shop/order", Parameters: string(tc.Schema)}, echo))
			for _, p := range []Profile{OpenAIChat, OpenAIResponses} {
				a, err := New(reg, p)
				require.NoError(t, err)
				ex, err := a.Export(nil)
				require.NoError(t, err)
				require.Len(t, ex.Tools, 1)
				fn := ex.Tools[0]
				if p == OpenAIChat {
					fn = fn["function"].(map[string]any)
				}
				require.Equal(t, true, fn["strict"], "%s: the tool is exported strict", p)
				res, err := a.RunToolCall(context.Background(), actions.Call{Action: "shop-order", Params: tc.Arguments})
				require.NoError(t, err, "%s: the arguments a strict tool asks for are refused", p)
				got, err := json.Marshal(res.Value)
				require.NoError(t, err)
				assert.JSONEq(t, string(tc.Want), string(got), string(p))
			}
		})
	}
}
