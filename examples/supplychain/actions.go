package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
)

// Env is the context each body receives: the model, the body's own trace
// (to record commands and call other actions), and who is calling — the
// batch job, or the MCP client's name.
type Env struct {
	Model  *Model
	Trace  *actions.Trace
	Caller string
}

// Body is the signature of the example's action bodies.
type Body = func(ctx context.Context, p map[string]any, env *Env) (any, error)

// The parameters schemas. Each is JSON Schema 2020-12 with the registry's
// ref keyword; see docs/parameters.md.
const (
	actorRef = `{"type": "string", "minLength": 1, "ref": "actor",
		"description": "The actor: its id, or its exact display name in any language."}`
	periodParam = `{"type": "string", "pattern": "^[0-9]{4}$", "default": "2024",
		"description": "The reporting year."}`

	listActorsSchema = `{"type": "object", "additionalProperties": false, "properties": {
		"type": {"enum": ["plant", "warehouse", "depot", "supplier"], "description": "Only actors of this type."},
		"lang": {"type": "string", "enum": ["en", "fr"], "default": "en", "description": "The language of the names."}}}`

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
// Trace.Call (delete_actor calls clear_emissions).
func definitions() []actions.Action[*Env] {
	return []actions.Action[*Env]{
		{Definition: actions.Definition{
			ID: "supply/list_actors", Title: "List actors", Effect: actions.EffectRead, Idempotent: true, Capability: capRead,
			Description: "Lists the actors of the supply chain, sorted by id, with their names in one language.",
			Parameters:  listActorsSchema,
		}, Run: listActors},
		{Definition: actions.Definition{
			ID: "supply/get_actor", Title: "Get an actor", Effect: actions.EffectRead, Idempotent: true, Capability: capRead,
			Description: "Gives one actor with its names in every language and its emissions per period.",
			Parameters:  getActorSchema,
		}, Run: getActor},
		{Definition: actions.Definition{
			ID: "supply/create_actor", Title: "Create an actor", Effect: actions.EffectWrite, Additive: true, Capability: capWrite,
			Refusals:    []actions.DeclaredRefusal{{Code: "id_taken", Retry: actions.RetryAfterEdit}},
			Description: "Adds an actor to the supply chain and gives it back with its key.",
			Parameters:  createActorSchema, Writes: []string{"actor"},
		}, Run: createActor},
		{Definition: actions.Definition{
			ID: "supply/delete_actor", Title: "Delete an actor", Effect: actions.EffectDelete, Capability: capWrite,
			NeedsConfirmation: true,
			Description:       "Deletes an actor and every emission recorded for it.",
			Parameters:        deleteActorSchema, Writes: []string{"actor", "emission"},
		}, Run: deleteActor},
		{Definition: actions.Definition{
			ID: "carbon/record_emissions", Title: "Record emissions", Effect: actions.EffectWrite, Idempotent: true, Capability: capWrite,
			Description: "Sets an actor's CO2 emissions for a period, replacing any earlier figure.",
			Parameters:  recordEmissionsSchema, Writes: []string{"emission"},
		}, Run: recordEmissions},
		{Definition: actions.Definition{
			ID: "carbon/clear_emissions", Title: "Clear emissions", Effect: actions.EffectDelete, Surfaces: []actions.Surface{},
			Description: "Removes every emission of an actor, by key. Called by delete_actor only.",
			Parameters:  clearEmissionsSchema, Writes: []string{"emission"},
		}, Run: clearEmissions},
		{Definition: actions.Definition{
			ID: "carbon/total_emissions", Title: "Total emissions", Effect: actions.EffectRead, Idempotent: true, Capability: capRead,
			Description: "Sums the CO2 emissions of a period over the actors, or over the actors of one type.",
			Parameters:  totalEmissionsSchema,
		}, Run: totalEmissions},
	}
}

// NewRegistry registers the example's actions.
func NewRegistry() (*actions.Registry[*Env], error) {
	reg := actions.NewRegistry[*Env](nil)
	if err := reg.Register(definitions()...); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	return reg, nil
}

// NewHost returns the host of the calls made by caller on model: bodies
// get an *Env, refs resolve over the model, and each top-level entry goes
// to onEntry (which may be nil).
func NewHost(model *Model, caller string, onEntry func(actions.RunEntry)) *actions.Host[*Env] {
	return &actions.Host[*Env]{
		Env:     func(t *actions.Trace) *Env { return &Env{Model: model, Trace: t, Caller: caller} },
		Resolve: model.ResolveRef,
		OnEntry: onEntry,
	}
}

func listActors(_ context.Context, p map[string]any, env *Env) (any, error) {
	typ, _ := p["type"].(string)
	lang := p["lang"].(string) // the schema gives a default
	list := []any{}
	for _, a := range env.Model.Actors(typ) {
		list = append(list, map[string]any{"key": a.Key, "id": a.ID, "type": a.Type, "name": nameIn(a, lang, env.Model)})
	}
	return map[string]any{"actors": list}, nil
}

func getActor(_ context.Context, p map[string]any, env *Env) (any, error) {
	a, err := actorOf(p, env)
	if err != nil {
		return nil, err
	}
	view := actorView(a)
	periods := map[string]any{}
	for _, e := range env.Model.Emissions(a.Key) {
		periods[e.Period] = e.CO2t
	}
	view["co2_t"] = periods
	return view, nil
}

func createActor(_ context.Context, p map[string]any, env *Env) (any, error) {
	id := p["id"].(string)
	typ := p["type"].(string)
	names := localized(p["display_name"], env.Model.Languages()[0])
	a, err := env.Model.CreateActor(id, typ, names)
	if errors.Is(err, errIDTaken) {
		r := actions.NewRefusal("id_taken", "an actor already has this id")
		r.Retry = actions.RetryAfterEdit
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
	return actorView(a), nil
}

func deleteActor(ctx context.Context, p map[string]any, env *Env) (any, error) {
	a, err := actorOf(p, env)
	if err != nil {
		return nil, err
	}
	// The emissions go first, through the hidden action: its entry is a
	// step of this one.
	cleared, err := env.Trace.Call(ctx, "carbon/clear_emissions", map[string]any{"actor": a.Key})
	if err != nil {
		return nil, err
	}
	env.Model.DeleteActor(a.Key)
	if err := env.Trace.Command(map[string]any{"op": "delete", "schema": "actor", "key": a.Key, "by": env.Caller}, nil); err != nil {
		return nil, err
	}
	return map[string]any{"deleted": a.ID, "key": a.Key, "emissions": cleared}, nil
}

func recordEmissions(_ context.Context, p map[string]any, env *Env) (any, error) {
	a, err := actorOf(p, env)
	if err != nil {
		return nil, err
	}
	period := p["period"].(string)
	co2t, err := p["co2_t"].(json.Number).Float64()
	if err != nil {
		return nil, err
	}
	previous, had := env.Model.SetEmissions(a.Key, period, co2t)
	cmd := map[string]any{"op": "upsert", "schema": "emission", "by": env.Caller,
		"values": map[string]any{"actor": a.Key, "period": period, "co2_t": co2t}}
	if err := env.Trace.Command(cmd, nil); err != nil {
		return nil, err
	}
	res := map[string]any{"actor": a.ID, "period": period, "co2_t": co2t}
	if had {
		res["previous_co2_t"] = previous
	}
	return res, nil
}

func clearEmissions(_ context.Context, p map[string]any, env *Env) (any, error) {
	key := p["actor"].(string)
	n := env.Model.ClearEmissions(key)
	if err := env.Trace.Command(map[string]any{"op": "delete", "schema": "emission", "where": map[string]any{"actor": key}}, map[string]any{"deleted": n}); err != nil {
		return nil, err
	}
	return n, nil
}

func totalEmissions(_ context.Context, p map[string]any, env *Env) (any, error) {
	period := p["period"].(string)
	typ, _ := p["type"].(string)
	co2t, n := env.Model.Total(period, typ)
	res := map[string]any{"period": period, "total_co2_t": co2t, "actors": n}
	if typ != "" {
		res["type"] = typ
	}
	return res, nil
}

// actorOf returns the actor a resolved ref names. The registry resolved
// the ref before the body ran, so it is a key; a concurrent delete may
// still have removed it since.
func actorOf(p map[string]any, env *Env) (Actor, error) {
	key := p["actor"].(string)
	a, ok := env.Model.Actor(key)
	if !ok {
		r := actions.NewRefusal("not_found", "the actor was deleted meanwhile")
		r.NextAction = "Call supply-list_actors to see the actors that remain."
		return Actor{}, r
	}
	return a, nil
}

// actorView is the JSON form of an actor in results.
func actorView(a Actor) map[string]any {
	return map[string]any{"key": a.Key, "id": a.ID, "type": a.Type, "display_name": anyMap(a.DisplayName)}
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
