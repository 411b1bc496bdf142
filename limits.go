package actions

import "math"

// Limits bound what one registration or one call may cost. One rule holds
// for every field: zero means its default, a negative value means no
// limit. Each limit, when passed, gives a typed refusal, never a crash;
// docs/security.md lists them with the refusal each gives. Lifting a
// depth limit is the host's own risk: hostile parameters or schemas
// nested deep enough then cost stack in proportion.
type Limits struct {
	// MaxParamDepth bounds the nesting of objects and arrays in a call's
	// parameters (default 64). Passing it: invalid_parameters.
	MaxParamDepth int
	// MaxParamBytes bounds parameters given as JSON text, in bytes
	// (default 1 MiB); it also bounds what the defaults of one call fill
	// in, and what one batch step's placeholders copy in and write
	// (strings by length, member names by length, other values 8 each).
	// Passing it: invalid_parameters (invalid_script_step in a batch).
	MaxParamBytes int
	// MaxSchemaDepth bounds the nesting of schema objects in a parameters
	// schema (default 32). Passing it: constraint_violation at Register.
	MaxSchemaDepth int
	// MaxSchemaBytes bounds a parameters schema's JSON text, in bytes
	// (default 1 MiB). Passing it: constraint_violation at Register.
	MaxSchemaBytes int
	// MaxCallDepth bounds nested Trace.Call levels below a top-level call
	// (default 16). Passing it: constraint_violation for the nested call.
	MaxCallDepth int
	// MaxRefs bounds the ref values one call resolves, that is the
	// resolver's fan-out (default 256). Passing it: invalid_parameters.
	MaxRefs int
	// MaxBatchCalls bounds the steps of one batch (default 1000).
	// Passing it: invalid_script_step before any call.
	MaxBatchCalls int
	// MaxPlaceholderLength bounds the text between "${" and "}" of one
	// placeholder, in bytes (default 256). Passing it: invalid_script_step.
	MaxPlaceholderLength int
	// MaxPlaceholders bounds the placeholders of one step's "with"
	// (default 1000). Passing it: invalid_script_step.
	MaxPlaceholders int
	// MaxResultBytes bounds a call's result as it reaches its caller:
	// bytes of its canonical JSON (RFC 8785). The default, 32 KiB, is
	// about 8k to 10k tokens of JSON, under the 25k tokens where MCP
	// clients cut a tool result and near the 10k where they warn: a
	// result a model never sees whole is one it reasons about wrongly.
	// Negative: no bound. An action may set its own
	// ([Definition].MaxResultBytes). Over it, a list is cut, a string
	// cut, anything else refused with result_too_large (see [bound.Bounded]).
	MaxResultBytes int
	// MaxBatchResultBytes bounds the results one batch gives back in
	// all, in bytes of canonical JSON (default 64 KiB): the batch's
	// result (bounded first, by MaxResultBytes, and reserved out of it)
	// and each step's result, bounded in turn by its action's bound and
	// by what is left. A step that no longer fits still runs; its result
	// is given as an omitted [bound.Bounded]. Negative: each step bounded by
	// its action's bound only. It sits beside MaxBatchCalls: with both,
	// a batch's answer is at most this plus a fixed size per step.
	MaxBatchResultBytes int
	// MaxEntryResultBytes bounds the result text a run entry keeps
	// (default 4 KiB): a longer one is kept as its SHA-256 and byte size
	// ([store.RunEntry].ResultSHA256, ResultBytes), which replay compares.
	// Negative: every result kept whole.
	MaxEntryResultBytes int
	// MaxBatchBytes bounds what one batch's steps cost in all, in bytes
	// (default 4 MiB): the canonical JSON of each step's parameters once
	// its placeholders are filled (what they copy in, and what its run
	// entry records), plus the rest of each step's run entry as kept
	// (its result text up to MaxEntryResultBytes, its commands and
	// nested calls). A step's placeholders copy in no more than is left,
	// and a step whose parameters would pass what is left is refused
	// before it runs: invalid_script_step at the step's pointer (a
	// [StepError]), keyword "maxBatchBytes", the unit not kept. It bounds
	// what a batch holds in memory and adds to the run log beside
	// MaxParamBytes, which bounds each step alone. Negative: no bound.
	MaxBatchBytes int
	// MaxRefusedParamBytes bounds the parameters text the run entry of a
	// call refused before its parameters' check passed keeps (refused by
	// the gate, as an unknown action, as invalid parameters), in bytes of
	// canonical JSON (default 1 KiB): longer parameters are kept as their
	// SHA-256 and size ([store.RunEntry].ParametersSHA256, ParametersBytes), so
	// that what a refused call adds to the log is bounded. Negative:
	// kept whole (up to MaxParamBytes).
	MaxRefusedParamBytes int
}

// defaultLimits are the limits a zero field means; the field docs above
// give each, and [Registry.Limits] reports what a registry applies.
var defaultLimits = Limits{
	MaxParamDepth:        64,
	MaxParamBytes:        1 << 20,
	MaxSchemaDepth:       32,
	MaxSchemaBytes:       1 << 20,
	MaxCallDepth:         16,
	MaxRefs:              256,
	MaxBatchCalls:        1000,
	MaxPlaceholderLength: 256,
	MaxPlaceholders:      1000,
	MaxResultBytes:       32 << 10,
	MaxBatchResultBytes:  64 << 10,
	MaxEntryResultBytes:  4 << 10,
	MaxBatchBytes:        4 << 20,
	MaxRefusedParamBytes: 1 << 10,
}

// unlimited is what a negative count, depth or size limit reads as once
// defaults are filled: larger than any text the registry is given, and
// small enough that the arithmetic done with it cannot overflow.
const unlimited = math.MaxInt32

// withDefaults returns l with every zero field set to its default. A
// negative field means no limit: the five result and batch bounds keep
// their negative value (read as "off" where they are applied), the other
// fields read as unlimited.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = unlimited
		}
	}
	def(&l.MaxParamDepth, defaultLimits.MaxParamDepth)
	def(&l.MaxParamBytes, defaultLimits.MaxParamBytes)
	def(&l.MaxSchemaDepth, defaultLimits.MaxSchemaDepth)
	def(&l.MaxSchemaBytes, defaultLimits.MaxSchemaBytes)
	def(&l.MaxCallDepth, defaultLimits.MaxCallDepth)
	def(&l.MaxRefs, defaultLimits.MaxRefs)
	def(&l.MaxBatchCalls, defaultLimits.MaxBatchCalls)
	def(&l.MaxPlaceholderLength, defaultLimits.MaxPlaceholderLength)
	def(&l.MaxPlaceholders, defaultLimits.MaxPlaceholders)
	zero := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	zero(&l.MaxResultBytes, defaultLimits.MaxResultBytes)
	zero(&l.MaxBatchResultBytes, defaultLimits.MaxBatchResultBytes)
	zero(&l.MaxEntryResultBytes, defaultLimits.MaxEntryResultBytes)
	zero(&l.MaxBatchBytes, defaultLimits.MaxBatchBytes)
	zero(&l.MaxRefusedParamBytes, defaultLimits.MaxRefusedParamBytes)
	return l
}
