package actions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// plantSchema is the parameters schema the examples share: a required
// species and a count that defaults to 1.
const plantSchema = `{
	"type": "object",
	"properties": {
		"species": {"type": "string", "minLength": 1},
		"count": {"type": "integer", "minimum": 1, "default": 1}
	},
	"required": ["species"],
	"additionalProperties": false
}`

// plantAction records the command it would send to its engine and returns
// the new plant's key.
func plantAction() actions.Action {
	return actions.Action{
		Definition: actions.Definition{ID: "garden/plant", Title: "Plant", Effect: actions.EffectWrite, Additive: true, Parameters: plantSchema},
		Run: func(ctx context.Context, p map[string]any, t *actions.Trace) (any, error) {
			cmd := map[string]any{"op": "create", "schema": "plant", "values": p, "at": "${now()}"}
			if err := t.Command(cmd, map[string]any{"key": "plant:1"}); err != nil {
				return nil, err
			}
			return map[string]any{"key": "plant:1", "count": p["count"]}, nil
		},
	}
}

func ExampleRegistry_Run() {
	reg := actions.NewRegistry(nil)
	if err := reg.Register(plantAction()); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	// A done call: count takes its default, the body's command and
	// result are in the entry.
	res, err := reg.Run(ctx, actions.Call{Action: "garden/plant", Params: map[string]any{"species": "rose"}})
	fmt.Println(res.Value, err)
	line, _ := actions.CanonicalJSON(res.Entry())
	fmt.Println(string(line))

	// A refused call: the body does not run, the entry keeps the
	// parameters as they were given.
	res, err = reg.Run(ctx, actions.Call{Action: "garden/plant", Params: []byte(`{"count": 0}`)})
	fmt.Println(err)
	entry := res.Entry()
	fmt.Println(res.Value, entry.Outcome, entry.Error, entry.Parameters)
	// Output:
	// map[count:1 key:plant:1] <nil>
	// {"action":"garden/plant","outcome":"done","parameters":"{\"count\":1,\"species\":\"rose\"}","result":"{\"count\":1,\"key\":\"plant:1\"}","steps":[{"command":{"at":"${now()}","op":"create","schema":"plant","values":{"count":1,"species":"rose"}},"result":"{\"key\":\"plant:1\"}"}]}
	// invalid_parameters: the parameters break the schema: /count must be >= 1; /species is required
	// <nil> refused invalid_parameters {"count":0}
}

func ExampleTrace_Call() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(plantAction())
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "garden/hedge"},
		Run: func(ctx context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			// Each call goes through the same registry and gate, as
			// the same caller, and becomes a step of this entry, done
			// or refused.
			first, err := t.Call(ctx, "garden/plant", map[string]any{"species": "box", "count": 12})
			if err != nil {
				return nil, err
			}
			if _, err := t.Call(ctx, "garden/plant", map[string]any{"species": ""}); err != nil {
				fmt.Println("nested:", err)
			}
			return first, nil
		},
	})

	res, err := reg.Run(context.Background(), actions.Call{Action: "garden/hedge"})
	entry := res.Entry()
	fmt.Println(entry.Action, entry.Outcome, err)
	for _, step := range entry.Steps {
		fmt.Println("  step:", step.Call.Action, step.Call.Outcome, step.Call.Error, step.Call.Parameters)
	}
	// Output:
	// nested: invalid_parameters: the parameters break the schema: /species must be at least 1 character long
	// garden/hedge done <nil>
	//   step: garden/plant done  {"count":12,"species":"box"}
	//   step: garden/plant refused invalid_parameters {"species":""}
}

// A body that must act beyond its caller's rights says so: the nested
// call runs as the host, and its entry records it.
func ExampleTrace_CallAsHost() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		// Only the host may write the audit trail.
		actions.New(actions.Definition{ID: "audit/append", Additive: true, Surfaces: []identity.Surface{}},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return "appended", nil }),
		actions.New(actions.Definition{ID: "shop/checkout"},
			func(ctx context.Context, _ map[string]any, t *actions.Trace) (any, error) {
				// As the caller: refused, since the caller may not
				// call audit/append.
				_, err := t.Call(ctx, "audit/append", nil)
				fmt.Println("as the caller:", err)
				// As the host: it runs.
				return t.CallAsHost(ctx, "audit/append", nil)
			}),
	)
	shopper := &identity.Caller{Principal: "sam", Surface: identity.SurfaceMCP}
	res, err := reg.Run(context.Background(), actions.Call{Action: "shop/checkout", Caller: shopper})
	fmt.Println(res.Value, err)
	for _, step := range res.Entry().Steps {
		fmt.Println("  step:", step.Call.Action, step.Call.Outcome, step.Call.Error, step.Call.AsHost)
	}
	// Output:
	// as the caller: unknown_action: no action is registered under this id
	// appended <nil>
	//   step: audit/append refused forbidden_surface false
	//   step: audit/append done  true
}

// A RunLog is the simplest [store.Store]: each unit's records, in
// order, in memory. What a refused call changed is undone by nobody but
// the body, so its record is marked rolled back.
func ExampleRunLog() {
	log := actions.NewRunLog()
	reg := actions.NewRegistry(&actions.Options{Store: log})
	_ = reg.Register(plantAction())

	ctx := context.Background()
	_, _ = reg.Run(ctx, actions.Call{Action: "garden/plant", Params: map[string]any{"species": "fern"}})
	_, _ = reg.Run(ctx, actions.Call{Action: "garden/prune"})

	// One record per top-level call, refused calls included.
	for _, rec := range log.Records() {
		e := rec.Entry
		fmt.Println(e.Action, e.Outcome, e.Error, len(e.Steps), rec.RolledBack)
	}
	fmt.Println(len(log.Records()))
	// Output:
	// garden/plant done  1 false
	// garden/prune refused unknown_action 0 true
	// 2
}

func ExampleRefusal() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(plantAction())
	_, err := reg.Run(context.Background(), actions.Call{Action: "garden/plant", Params: map[string]any{"count": "two", "colour": "red"}})

	// The sentinel tells the code; errors.As gives the fields.
	fmt.Println(errors.Is(err, codes.InvalidParameters))
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Code, r.Retry, r.Transport)
		for _, is := range r.Issues {
			fmt.Printf("%s %s: %s\n", is.Path, is.Keyword, is.Message)
		}
		fmt.Println(r.NextAction)
	}
	// Output:
	// true
	// invalid_parameters after-edit tool-result
	// /colour additionalProperties: is not allowed
	// /count type: must be integer
	// /species required: is required
	// Fix the parameters named in the issues and call again.
}

func ExampleRefResolver() {
	def := actions.Definition{
		ID: "garden/water",
		Parameters: `{
			"type": "object",
			"properties": {
				"plant": {"type": "string", "ref": "plant"},
				"litres": {"type": "number", "default": 0.5}
			},
			"required": ["plant"]
		}`,
	}
	// The host's resolver: one plant, key k7, id rose-7, named "Rose" in
	// English and French.
	resolve := func(_ context.Context, schema, value string) (actions.RefMatches, error) {
		var m actions.RefMatches
		if schema != "plant" {
			return m, nil
		}
		if value == "rose-7" {
			key := "k7"
			m.ID = &key
		}
		if value == "Rose" {
			m.Names = []string{"k7"}
		}
		return m, nil
	}
	ctx := context.Background()
	ps, err := actions.CompileParameters(def.Parameters, actions.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	checked, err := ps.Check(ctx, map[string]any{"plant": "Rose"}, resolve)
	fmt.Println(checked, err)

	_, err = ps.Check(ctx, map[string]any{"plant": "Tulip"}, resolve)
	fmt.Println(err)
	// Output:
	// map[litres:0.5 plant:k7] <nil>
	// invalid_parameters: some refs name no single instance: /plant no instance of plant has this id or display name
}

func ExampleRegistry_Bind() {
	defs, err := actions.DecodeManifest([]byte(`[
		{"id": "garden/plant", "parameters": {"type": "object", "properties": {"species": {"type": "string"}}}},
		{"id": "garden/list", "kind": "read"}
	]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	list := func(context.Context, map[string]any, *actions.Trace) (any, error) { return []any{}, nil }
	weed := func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }

	// Every fault is reported at once, and nothing is registered.
	reg := actions.NewRegistry(nil)
	err = reg.Bind(defs, map[string]actions.Body{"garden/list": list, "garden/weed": weed})
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Code)
		for _, is := range r.Issues {
			fmt.Println(is.Path, is.Message)
		}
	}
	fmt.Println(len(reg.Definitions()))

	plant := func(context.Context, map[string]any, *actions.Trace) (any, error) { return "planted", nil }
	err = reg.Bind(defs, map[string]actions.Body{"garden/list": list, "garden/plant": plant})
	fmt.Println(err)
	for _, a := range reg.Definitions() {
		fmt.Println(a.ID, a.EffectOf() == actions.EffectRead)
	}
	// Output:
	// constraint_violation
	// /0 the definition garden/plant has no body
	// /bodies/garden~1weed the body garden/weed has no definition
	// 0
	// <nil>
	// garden/list true
	// garden/plant false
}

func ExampleNewEntryWriter() {
	// A host would write to a file; each record (entry and audit) is one
	// line of canonical JSON (JSON Lines), written once its unit is
	// settled.
	w := actions.NewEntryWriter(os.Stdout)
	clock := func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
	reg := actions.NewRegistry(&actions.Options{
		OnRecord: w.Write,
		Now:      clock,
	})
	_ = reg.Register(plantAction())

	ctx := context.Background()
	_, _ = reg.Run(ctx, actions.Call{Action: "garden/plant", Params: map[string]any{"species": "ivy", "count": 3}})
	_, _ = reg.Run(ctx, actions.Call{Action: "garden/plant", Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}})
	if err := w.Err(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"audit":{"at":"2026-12-01T09:00:00Z"},"entry":{"action":"garden/plant","outcome":"done","parameters":"{\"count\":3,\"species\":\"ivy\"}","result":"{\"count\":3,\"key\":\"plant:1\"}","steps":[{"command":{"at":"${now()}","op":"create","schema":"plant","values":{"count":3,"species":"ivy"}},"result":"{\"key\":\"plant:1\"}"}]}}
	// {"audit":{"at":"2026-12-01T09:00:00Z","caller":{"principal":"ann","surface":"ui"},"code":"invalid_parameters"},"entry":{"action":"garden/plant","error":"invalid_parameters","outcome":"refused","parameters":"{}","steps":[]},"rolledBack":true}
}
