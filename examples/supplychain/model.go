package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/actionreg/actions"
)

// Actor is one actor of the supply chain: a plant, a warehouse, a depot or
// a supplier. Key is the model's own handle (what a ref resolves to); ID is
// the stable name people and models use; DisplayName maps a language tag to
// the actor's name in that language.
type Actor struct {
	Key         string            `json:"key"`
	ID          string            `json:"id"`
	Type        string            `json:"type"`
	DisplayName map[string]string `json:"display_name"`
}

// Emission is the CO2 an actor emitted in one period, in tonnes.
type Emission struct {
	Actor  string  `json:"actor"` // the actor's key
	Period string  `json:"period"`
	CO2t   float64 `json:"co2_t"`
}

// Model is the example's data set, held in memory and safe for concurrent
// use. It stands for the host's real store: each method changes it in one
// step, under one lock. It keeps no transaction: a host on a real store
// would run each tool call, and each batch as a whole, in one.
type Model struct {
	mu        sync.Mutex
	languages []string
	actors    map[string]*Actor // by key
	emissions []Emission
	nextKey   int
}

// errIDTaken is returned by CreateActor for an id already used.
var errIDTaken = errors.New("the id is taken")

// LoadModel decodes a model file (see model.json): the dataset's languages,
// source language first, its actors and their emissions. It refuses
// unknown fields, repeated keys or ids, and emissions of unknown actors.
func LoadModel(data []byte) (*Model, error) {
	var file struct {
		Languages []string   `json:"languages"`
		Actors    []Actor    `json:"actors"`
		Emissions []Emission `json:"emissions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if len(file.Languages) == 0 {
		return nil, errors.New("model: no language")
	}
	m := &Model{languages: file.Languages, actors: map[string]*Actor{}}
	ids := map[string]bool{}
	for i := range file.Actors {
		a := file.Actors[i]
		if a.Key == "" || m.actors[a.Key] != nil || ids[a.ID] {
			return nil, fmt.Errorf("model: actor %d: empty or repeated key or id", i)
		}
		m.actors[a.Key] = &a
		ids[a.ID] = true
	}
	for i, e := range file.Emissions {
		if m.actors[e.Actor] == nil {
			return nil, fmt.Errorf("model: emission %d: unknown actor %s", i, e.Actor)
		}
	}
	m.emissions = file.Emissions
	m.nextKey = len(m.actors) + 1
	return m, nil
}

// Languages returns the dataset's languages, the source language first.
func (m *Model) Languages() []string { return append([]string(nil), m.languages...) }

// ResolveRef is the host's [actions.RefResolver] over the model: for the
// model schema "actor", the key of the actor whose id is value, and the
// keys of the actors whose display name, in any language, is value. The
// registry then applies the rule: an id wins, one name gives its key, no
// match or several names are refused with invalid_parameters.
func (m *Model) ResolveRef(_ context.Context, schema, value string) (actions.RefMatches, error) {
	if schema != "actor" {
		return actions.RefMatches{}, fmt.Errorf("model: no schema %q", schema)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var found actions.RefMatches
	for _, a := range m.actors {
		if a.ID == value {
			key := a.Key
			found.ID = &key
		}
		for _, name := range a.DisplayName {
			if name == value {
				found.Names = append(found.Names, a.Key)
				break
			}
		}
	}
	sort.Strings(found.Names)
	return found, nil
}

// Actor returns the actor of a key.
func (m *Model) Actor(key string) (Actor, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.actors[key]
	if !ok {
		return Actor{}, false
	}
	return *a, true
}

// Actors returns the actors of a type ("" for all), sorted by id.
func (m *Model) Actors(typ string) []Actor {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Actor
	for _, a := range m.actors {
		if typ == "" || a.Type == typ {
			out = append(out, *a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CreateActor adds an actor and returns it with its new key; errIDTaken
// when the id is used.
func (m *Model) CreateActor(id, typ string, names map[string]string) (Actor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.actors {
		if a.ID == id {
			return Actor{}, errIDTaken
		}
	}
	a := &Actor{Key: "act_" + strconv.Itoa(m.nextKey), ID: id, Type: typ, DisplayName: names}
	m.nextKey++
	m.actors[a.Key] = a
	return *a, nil
}

// DeleteActor removes an actor; false when there was none.
func (m *Model) DeleteActor(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.actors[key]
	delete(m.actors, key)
	return ok
}

// SetEmissions sets an actor's emissions for a period and returns the
// previous value (ok false when there was none).
func (m *Model) SetEmissions(key, period string, co2t float64) (previous float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, e := range m.emissions {
		if e.Actor == key && e.Period == period {
			m.emissions[i].CO2t = co2t
			return e.CO2t, true
		}
	}
	m.emissions = append(m.emissions, Emission{Actor: key, Period: period, CO2t: co2t})
	return 0, false
}

// ClearEmissions removes every emission of an actor and returns how many.
func (m *Model) ClearEmissions(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.emissions[:0]
	for _, e := range m.emissions {
		if e.Actor != key {
			kept = append(kept, e)
		}
	}
	n := len(m.emissions) - len(kept)
	m.emissions = kept
	return n
}

// Emissions returns an actor's emissions, sorted by period.
func (m *Model) Emissions(key string) []Emission {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Emission
	for _, e := range m.emissions {
		if e.Actor == key {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Period < out[j].Period })
	return out
}

// Total returns the emissions of a period summed over the actors of a type
// ("" for all), and the number of actors counted.
func (m *Model) Total(period, typ string) (co2t float64, actors int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.emissions {
		a := m.actors[e.Actor]
		if e.Period == period && a != nil && (typ == "" || a.Type == typ) {
			co2t += e.CO2t
			actors++
		}
	}
	return co2t, actors
}
