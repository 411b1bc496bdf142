// Deep copies of what the registry hands a store and its callers (records,
// entries, callers), and the entry of a refused call.

package actions

import (
	"encoding/json"
	"slices"

	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// refusedEntry marks e as refused by err, with the parameters text params.
func refusedEntry(e store.RunEntry, err error, params string) store.RunEntry {
	e.Parameters = params
	e.ParametersSHA256, e.ParametersBytes = "", 0
	e.Outcome = store.OutcomeRefused
	e.Error = CodeOf(err)
	e.Result = ""
	e.ResultSHA256, e.ResultBytes = "", 0
	return e
}

// cloneEntry copies e with its steps, commands and nested entries.
func cloneEntry(e store.RunEntry) store.RunEntry {
	if e.Steps == nil {
		return e
	}
	steps := make([]store.RunStep, len(e.Steps))
	for i, s := range e.Steps {
		if s.Command != nil {
			s.Command = append(json.RawMessage(nil), s.Command...)
		}
		if s.Call != nil {
			c := cloneEntry(*s.Call)
			s.Call = &c
		}
		steps[i] = s
	}
	e.Steps = steps
	return e
}

// cloneRecord copies r deeply.
func cloneRecord(r store.Record) store.Record {
	r.Entry = cloneEntry(r.Entry)
	if r.Audit.Caller != nil {
		c := cloneCaller(r.Audit.Caller)
		r.Audit.Caller = &c
	}
	return r
}

// cloneCaller copies c with its slices.
func cloneCaller(c *identity.Caller) identity.Caller {
	cp := *c
	cp.Capabilities = slices.Clone(c.Capabilities)
	cp.Scopes = slices.Clone(c.Scopes)
	if c.Client != nil {
		cl := *c.Client
		cp.Client = &cl
	}
	return cp
}
