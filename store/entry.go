package store

import (
	"encoding/json"

	"github.com/actionreg/actions/codes"
)

// Outcome is how a call ended.
type Outcome string

// The outcomes of a call.
const (
	OutcomeDone    Outcome = "done"
	OutcomeRefused Outcome = "refused"
)

// RunEntry records one call: the run_entry of docs/runlog.md, field for
// field.
// Replaying a body against its entry compares these texts.
type RunEntry struct {
	// Action is the id called.
	Action string `json:"action"`
	// Parameters is the canonical JSON (RFC 8785) of the checked
	// parameters, defaults filled and refs resolved; for a call refused
	// before its check passed, of the parameters as given ("null" when
	// they were not JSON text, or larger than Limits.MaxParamBytes, or
	// kept as ParametersSHA256 and ParametersBytes).
	Parameters string `json:"parameters"`
	// ParametersSHA256 and ParametersBytes stand for the parameters of a
	// call refused before its check passed (by the gate, as unknown, as
	// invalid) whose text is longer than Limits.MaxRefusedParamBytes:
	// Parameters is then "null", and these are the hex SHA-256 of the
	// text and its size in bytes. Left out otherwise. Replay does not
	// compare them: such a call replays with no parameters, refused again
	// (see docs/runlog.md).
	ParametersSHA256 string `json:"parametersSHA256,omitempty"`
	ParametersBytes  int    `json:"parametersBytes,omitempty"`
	// Steps are what the body did, in order: commands it emitted and
	// actions it called. Never nil.
	Steps []RunStep `json:"steps"`
	// Outcome is done or refused.
	Outcome Outcome `json:"outcome"`
	// Error is the code of a refused call
	// ([github.com/actionreg/actions.CodeOf] its error: a refusal's code, the
	// code of an error with a Code() string method, or internal); empty when
	// done.
	Error codes.Code `json:"error,omitempty"`
	// Result is the canonical JSON of the body's result; empty when the
	// body returned nil or the call was refused.
	Result string `json:"result,omitempty"`
	// ResultSHA256 and ResultBytes stand for a result longer than
	// Limits.MaxEntryResultBytes, which the entry does not keep (Result
	// is then empty): the hex SHA-256 of its canonical JSON and that
	// text's size in bytes. Replay compares the digest. Left out
	// otherwise, so that an entry of a small result keeps the
	// plain run_entry shape.
	ResultSHA256 string `json:"resultSHA256,omitempty"`
	ResultBytes  int    `json:"resultBytes,omitempty"`
	// AsHost is true for a nested call its body made as the host
	// ([github.com/actionreg/actions.Trace.CallAsHost]) rather than as its
	// caller; left out otherwise.
	AsHost bool `json:"asHost,omitempty"`
}

// RunStep is one step of a body: a command with its result, or a nested
// call. Exactly one of Command and Call is set.
type RunStep struct {
	// Command is the command as the body emitted it, in canonical JSON:
	// placeholders such as ${now()} stay as they are.
	Command json.RawMessage `json:"command,omitempty"`
	// Result is the canonical JSON of the command's result; empty for
	// none.
	Result string `json:"result,omitempty"`
	// Call is the entry of a nested call, done or refused.
	Call *RunEntry `json:"call,omitempty"`
}
