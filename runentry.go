// What a call leaves in the run log: its RunEntry and the RunSteps of the calls it made.

package actions

import (
	"encoding/json"

	"github.com/actionreg/actions/store"
)

// refused marks e as refused by err, with the parameters text params.
func refusedEntry(e store.RunEntry, err error, params string) store.RunEntry {
	e.Parameters = params
	e.ParametersSHA256, e.ParametersBytes = "", 0
	e.Outcome = store.OutcomeRefused
	e.Error = CodeOf(err)
	e.Result = ""
	e.ResultSHA256, e.ResultBytes = "", 0
	return e
}

// clone copies e with its steps, commands and nested entries.
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
