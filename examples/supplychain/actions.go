package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// Env is the context each body receives: the model, the body's own trace
// (to record commands and call other actions), and who is calling — the
// batch job, or the MCP client's name.
type Env struct {
	Model  *Model
	Trace  *actions.Trace
	Caller string
}

// The parameters schemas. Each is JSON Schema 2020-12 with the registry's
// ref keyword; see docs/parameters.md.
const (
	actorRef = `{"type": "string", "minLength": 1, "ref": "actor",
		"description": "The actor, named in any of the dataset's languages."}`
	periodParam = `{"type": "string", "pattern": "^[0-9]{4}$", "default": "2024",
		"description": "The reporting year."}`

	listActorsSchema = `{"type": "object", "additionalProperties": false, "properties": {
		"type": {"enum": ["plant", "warehouse", "depot", "supplier"], "description": "Only actors of this type."},
		"lang": {"type": "string", "enum": ["en", "fr"], "default": "en", "description": "The language of the names."},
		"limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100, "description": "At most this many actors per page."},
		"cursor": ` + actions.CursorSchema + `}}`

	getActorSchema = `{"type": "object", "additionalProperties": false,
		"properties": {"actor": ` + actorRef + `}, "required": ["actor"]}`

	createActorSchema = `{"type": "object", "additionalProperties": false, "required": ["id", "display_name"],
		"properties": {
			"id": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$", "description": "The new actor's id: lower case letters, digits and underscores."},
			"type": {"enum": ["plant", "warehouse", "depot", "supplier"], "default": "plant"},
			"display_name": {"anyOf": [
				{"type": "string", "minLength": 1},
				{"type": "object", "minProperties": 1,
				 "propertyNames": {"pattern": "^[a-z]{2}$"},
				 "additionalProperties": {"type": "string", "minLength": 1}}
			], "description": "The actor's name."}}}`

	recordEmissionsSchema = `{"type": "object", "additionalProperties": false, "required": ["actor", "co2_t"],
		"properties": {
			"actor": ` + actorRef + `,
			"period": ` + periodParam + `,
			"co2_t": {"type": "number", "minimum": 0, "maximum": 1e9, "description": "Tonnes of CO2 emitted in the period."}}}`

	deleteActorSchema = getActorSchema

	clearEmissionsSchema = `{"type": "object", "additionalProperties": false, "required": ["actor"],
		"properties": {"actor": {"type": "string", "pattern": "^act_[0-9]+$", "description": "The actor's key."}}}`

	totalEmissionsSchema = `{"type": "object", "additionalProperties": false, "properties": {
		"period": ` + periodParam + `,
		"type": {"enum": ["plant", "warehouse", "depot", "supplier"], "description": "Only actors of this type."}}}`
)

// definitions returns the example's actions. Between them they use: effect
// read (list_actors, get_actor, total_emissions), write (create_actor,
// additive; record_emissions, which overwrites) and delete (delete_actor,
// which also needs a person's confirmation), the capabilities
// supply.read and supply.write (see gate.go), no surface at all
// (clear_emissions, called by the host and by delete_actor only), a
// declared domain refusal (id_taken), defaults (lang, type, period), ref
// (actor), a localized text parameter (display_name), Trace.Command
// (create_actor, record_emissions, delete_actor, clear_emissions) and
// Trace.CallAsHost (delete_actor calls clear_emissions, which no caller
// may call).
//
// All but one are typed ([actions.Typed]): their bodies take a Go struct
// and return one, whose schema becomes the tool's output schema.
// list_actors infers its parameters schema from its struct, whose tags
// say the enums and the default (actions:"enum=...,default=..."); the
// others keep a hand-written parameters schema (patterns, bounds, refs
// with a description), which Register checks against the struct. create_actor stays
// untyped ([actions.New]): its localized display_name is a string or an
// object, which a map[string]any reads as naturally as any Go type would;
// it declares its output schema by hand.
func definitions(m *Model) []actions.Action {
	return []actions.Action{
		actions.Typed(actions.Definition{
			ID: "supply/list_actors", Title: "List actors", Effect: actions.EffectRead, Idempotent: true, Capability: capRead,
			Description: "Lists the actors of the supply chain, sorted by id, with their names in one language, a page at a time: call again with the cursor an answer gives (next, or nextCall when the answer was bounded) for the next page.",
			// The schema adds the page's bounds and the cursor
			// to what listActorsParams' tags say (enums, default), which
			// Register checks it against.
			Parameters: listActorsSchema,
			PageKey:    "id",
		}, withEnv(m, listActors)),
		actions.Typed(actions.Definition{
			ID: "supply/get_actor", Title: "Get an actor", Effect: actions.EffectRead, Idempotent: true, Capability: capRead,
			Description: "Gives one actor with its names in every language and its emissions per period.",
			Parameters:  getActorSchema,
		}, withEnv(m, getActor)),
		actions.New(actions.Definition{
			ID: "supply/create_actor", Title: "Create an actor", Effect: actions.EffectWrite, Additive: true, Capability: capWrite,
			Refusals:    []actions.DeclaredRefusal{{Code: "id_taken", Retry: codes.RetryAfterEdit}},
			Description: "Adds an actor to the supply chain and gives it back with its key.",
			Parameters:  createActorSchema, Writes: []string{"actor"},
			OutputSchema: actorViewSchema,
		}, withEnv(m, createActor)),
		actions.Typed(actions.Definition{
			ID: "supply/delete_actor", Title: "Delete an actor", Effect: actions.EffectDelete, Capability: capWrite,
			NeedsConfirmation: true,
			Description:       "Deletes an actor and every emission recorded for it.",
			Parameters:        deleteActorSchema, Writes: []string{"actor", "emission"},
		}, withEnv(m, deleteActor)),
		actions.Typed(actions.Definition{
			ID: "carbon/record_emissions", Title: "Record emissions", Effect: actions.EffectWrite, Idempotent: true, Capability: capWrite,
			Description: "Sets an actor's CO2 emissions for a period, replacing any earlier figure.",
			Parameters:  recordEmissionsSchema, Writes: []string{"emission"},
		}, withEnv(m, recordEmissions)),
		actions.Typed(actions.Definition{
			ID: "carbon/clear_emissions", Title: "Clear emissions", Effect: actions.EffectDelete, Surfaces: []identity.Surface{},
			Description: "Removes every emission of an actor, by key. Called by delete_actor only.",
			Parameters:  clearEmissionsSchema, Writes: []string{"emission"},
		}, withEnv(m, clearEmissions)),
		actions.Typed(actions.Definition{
			ID: "carbon/total_emissions", Title: "Total emissions", Effect: actions.EffectRead, Idempotent: true, Capability: capRead,
			Description: "Sums the CO2 emissions of a period over the actors, or over the actors of one type.",
			Parameters:  totalEmissionsSchema,
			// A report: over a large chain it runs for minutes, so an MCP
			// client that supports tasks gets a task and polls
			// (docs/tasks.md).
			Long: true,
		}, withEnv(m, totalEmissions)),
	}
}

// NewRegistry registers the example's actions on model: bodies get an
// *Env bound to the unit's transaction (withEnv), refs resolve over the model in
// it, every call, batch and confirmation runs in one transaction of the
// model's database with its records (sqlstore.Store), and the pending
// changes live there too. onRecord, when not nil, sees each record once
// its unit is settled.
func NewRegistry(model *Model, onRecord func(store.Record)) (*actions.Registry, error) {
	store := model.Store()
	reg := actions.NewRegistry(&actions.Options{
		Resolve: model.ResolveRef,
		Store:   store,
		// The demo's people answer in their own MCP client (elicitation)
		// as well as on the host's screen. A host whose clients may
		// answer by themselves leaves DecideFrom nil: ui alone.
		Gate:     &actions.GateOptions{Pending: store.Pending(), DecideFrom: []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP}},
		OnRecord: onRecord,
		Observer: observer(), // telemetry.go
	})
	if err := reg.Register(definitions(model)...); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	return reg, nil
}

// withEnv is body with the *Env of its call, which the body reaches
// through this closure: the registry hands a body its context and trace
// only.
func withEnv[P, R any](m *Model, body func(context.Context, P, *Env) (R, error)) func(context.Context, P, *actions.Trace) (R, error) {
	return func(ctx context.Context, p P, t *actions.Trace) (R, error) { return body(ctx, p, m.env(ctx, t)) }
}

// env builds the environment of one call: the model bound to the unit's
// transaction (sqlstore.Tx), the call's trace, and the name of who calls
// (the caller's principal; "batch" for the host's own calls), which the
// bodies write into their commands.
func (m *Model) env(ctx context.Context, t *actions.Trace) *Env {
	model := m
	if tx, ok := sqlstore.Tx(ctx); ok {
		model = m.On(tx)
	}
	by := "batch"
	if c := t.Caller(); c != nil && c.Principal != "" {
		by = c.Principal
	}
	return &Env{Model: model, Trace: t, Caller: by}
}

// The parameters and results of the typed actions. The json tags name
// the members; the schemas above add what tags cannot say.
type (
	// listActorsParams says its enums and default in tags.
	listActorsParams struct {
		Type   string `json:"type,omitempty" jsonschema:"Only actors of this type." actions:"enum=plant|warehouse|depot|supplier"`
		Lang   string `json:"lang,omitempty" jsonschema:"The language of the names." actions:"enum=en|fr,default=en"`
		Limit  int    `json:"limit,omitempty" actions:"default=100"`
		Cursor string `json:"cursor,omitempty"`
	}
	actorSummary struct {
		Key  string `json:"key"`
		ID   string `json:"id"`
		Type string `json:"type"`
		Name string `json:"name"`
	}
	// actorParams names one actor; the registry has resolved the ref to
	// the actor's key before the body runs.
	actorParams struct {
		Actor string `json:"actor" actions:"ref=actor"`
	}
	actorDetail struct {
		Key         string             `json:"key"`
		ID          string             `json:"id"`
		Type        string             `json:"type"`
		DisplayName map[string]string  `json:"display_name"`
		CO2t        map[string]float64 `json:"co2_t"`
	}
	deletion struct {
		Deleted   string `json:"deleted"`
		Key       string `json:"key"`
		Emissions any    `json:"emissions"` // clear_emissions' result
	}
	emissionsParams struct {
		Actor  string  `json:"actor" actions:"ref=actor"`
		Period string  `json:"period"`
		CO2t   float64 `json:"co2_t"`
	}
	emissionsRecord struct {
		Actor    string   `json:"actor"`
		Period   string   `json:"period"`
		CO2t     float64  `json:"co2_t"`
		Previous *float64 `json:"previous_co2_t,omitempty"`
	}
	clearParams struct {
		Actor string `json:"actor"`
	}
	totalParams struct {
		Period string `json:"period"`
		Type   string `json:"type,omitempty"`
	}
	total struct {
		Period string  `json:"period"`
		CO2t   float64 `json:"total_co2_t"`
		Actors int     `json:"actors"`
		Type   string  `json:"type,omitempty"`
	}
)

// actorViewSchema is the output schema of create_actor, the untyped
// action: an actor with its key.
const actorViewSchema = `{"type": "object", "required": ["key", "id", "type", "display_name"], "additionalProperties": false,
	"properties": {"key": {"type": "string"}, "id": {"type": "string"}, "type": {"type": "string"},
		"display_name": {"type": "object", "additionalProperties": {"type": "string"}}}}`

// listActors gives one page of the actors ([actions.Page]), by key: its
// cursor stands for the id of the last actor given, and the query reads
// one more than a page to know whether more follow. The registry cuts a
// page over its result bound and goes on from the last actor kept (the
// action's PageKey names the id member).
func listActors(ctx context.Context, p listActorsParams, env *Env) (actions.Page[actorSummary], error) {
	rows, err := env.Model.ActorsAfter(ctx, p.Type, p.Cursor, p.Limit+1)
	if err != nil {
		return actions.Page[actorSummary]{}, err
	}
	items := make([]actorSummary, 0, len(rows))
	for _, a := range rows {
		items = append(items, actorSummary{Key: a.Key, ID: a.ID, Type: a.Type, Name: nameIn(a, p.Lang, env.Model)})
	}
	return actions.PageAfter(items, p.Limit, func(a actorSummary) string { return a.ID }), nil
}

func getActor(ctx context.Context, p actorParams, env *Env) (*actorDetail, error) {
	a, err := actorOf(ctx, p.Actor, env)
	if err != nil {
		return nil, err
	}
	d := &actorDetail{Key: a.Key, ID: a.ID, Type: a.Type, DisplayName: a.DisplayName, CO2t: map[string]float64{}}
	list, err := env.Model.Emissions(ctx, a.Key)
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		d.CO2t[e.Period] = e.CO2t
	}
	return d, nil
}

func createActor(ctx context.Context, p map[string]any, env *Env) (any, error) {
	id := p["id"].(string)
	typ := p["type"].(string)
	names := localized(p["display_name"], env.Model.Languages()[0])
	a, err := env.Model.CreateActor(ctx, id, typ, names)
	if errors.Is(err, errIDTaken) {
		r := actions.NewRefusal("id_taken", "an actor already has this id")
		r.Retry = codes.RetryAfterEdit
		r.NextAction = "Choose another id, or call supply-get_actor to use the existing actor."
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	cmd := map[string]any{"op": "create", "schema": "actor", "by": env.Caller,
		"values": map[string]any{"id": id, "type": typ, "display_name": anyMap(names)}}
	if err := env.Trace.Command(cmd, map[string]any{"key": a.Key}); err != nil {
		return nil, err
	}
	return map[string]any{"key": a.Key, "id": a.ID, "type": a.Type, "display_name": anyMap(a.DisplayName)}, nil
}

func deleteActor(ctx context.Context, p actorParams, env *Env) (*deletion, error) {
	// The actor held for the delete (its row FOR UPDATE) before its
	// emissions go: no call records an emission of it meanwhile.
	a, ok, err := env.Model.LockActor(ctx, p.Actor)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, actorGone()
	}
	// The emissions go first, through the hidden action: its entry is a
	// step of this one. It is offered on no surface, so no caller may call
	// it, not even through this body: the body calls it as the host, which
	// the nested entry records (asHost).
	cleared, err := env.Trace.CallAsHost(ctx, "carbon/clear_emissions", map[string]any{"actor": a.Key})
	if err != nil {
		return nil, err
	}
	if _, err := env.Model.DeleteActor(ctx, a.Key); err != nil {
		return nil, err
	}
	if err := env.Trace.Command(map[string]any{"op": "delete", "schema": "actor", "key": a.Key, "by": env.Caller}, nil); err != nil {
		return nil, err
	}
	return &deletion{Deleted: a.ID, Key: a.Key, Emissions: cleared}, nil
}

func recordEmissions(ctx context.Context, p emissionsParams, env *Env) (*emissionsRecord, error) {
	a, err := actorOf(ctx, p.Actor, env)
	if err != nil {
		return nil, err
	}
	previous, had, err := env.Model.SetEmissions(ctx, a.Key, p.Period, p.CO2t)
	if err != nil {
		return nil, err
	}
	cmd := map[string]any{"op": "upsert", "schema": "emission", "by": env.Caller,
		"values": map[string]any{"actor": a.Key, "period": p.Period, "co2_t": p.CO2t}}
	if err := env.Trace.Command(cmd, nil); err != nil {
		return nil, err
	}
	res := &emissionsRecord{Actor: a.ID, Period: p.Period, CO2t: p.CO2t}
	if had {
		res.Previous = &previous
	}
	return res, nil
}

func clearEmissions(ctx context.Context, p clearParams, env *Env) (int, error) {
	n, err := env.Model.ClearEmissions(ctx, p.Actor)
	if err != nil {
		return 0, err
	}
	if err := env.Trace.Command(map[string]any{"op": "delete", "schema": "emission", "where": map[string]any{"actor": p.Actor}}, map[string]any{"deleted": n}); err != nil {
		return 0, err
	}
	return n, nil
}

func totalEmissions(ctx context.Context, p totalParams, env *Env) (total, error) {
	co2t, n, err := env.Model.Total(ctx, p.Period, p.Type)
	return total{Period: p.Period, CO2t: co2t, Actors: n, Type: p.Type}, err
}

// actorOf returns the actor of a resolved ref. The registry resolved the
// ref in the call's unit before the body ran, so it is a key, held
// against a delete by the resolution's locks; an earlier call of the same
// batch may still have deleted it.
func actorOf(ctx context.Context, key string, env *Env) (Actor, error) {
	a, ok, err := env.Model.Actor(ctx, key)
	if err != nil {
		return Actor{}, err
	}
	if !ok {
		return Actor{}, actorGone()
	}
	return a, nil
}

// actorGone is the refusal of a call whose actor was deleted after its
// ref was resolved.
func actorGone() error {
	r := actions.NewRefusal("not_found", "the actor was deleted meanwhile")
	r.NextAction = "Call supply-list_actors to see the actors that remain."
	return r
}

// nameIn is the actor's name in lang, else in the source language, else
// its id.
func nameIn(a Actor, lang string, m *Model) string {
	if n, ok := a.DisplayName[lang]; ok {
		return n
	}
	if n, ok := a.DisplayName[m.Languages()[0]]; ok {
		return n
	}
	return a.ID
}

// localized reads a localized text parameter: a plain string is text in
// the source language; an object maps languages to text.
func localized(v any, source string) map[string]string {
	out := map[string]string{}
	switch v := v.(type) {
	case string:
		out[source] = v
	case map[string]any:
		for lang, text := range v {
			out[lang], _ = text.(string)
		}
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
