package actions

// Limits bound what one registration or one call may cost. A zero field
// means its default. Each limit, when passed, gives a typed refusal, never
// a crash; docs/security.md lists them with the refusal each gives.
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
}

// The defaults of [Limits].
const (
	DefaultMaxParamDepth        = 64
	DefaultMaxParamBytes        = 1 << 20
	DefaultMaxSchemaDepth       = 32
	DefaultMaxSchemaBytes       = 1 << 20
	DefaultMaxCallDepth         = 16
	DefaultMaxRefs              = 256
	DefaultMaxBatchCalls        = 1000
	DefaultMaxPlaceholderLength = 256
	DefaultMaxPlaceholders      = 1000
)

// withDefaults returns l with every zero (or negative) field set to its
// default.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxParamDepth, DefaultMaxParamDepth)
	def(&l.MaxParamBytes, DefaultMaxParamBytes)
	def(&l.MaxSchemaDepth, DefaultMaxSchemaDepth)
	def(&l.MaxSchemaBytes, DefaultMaxSchemaBytes)
	def(&l.MaxCallDepth, DefaultMaxCallDepth)
	def(&l.MaxRefs, DefaultMaxRefs)
	def(&l.MaxBatchCalls, DefaultMaxBatchCalls)
	def(&l.MaxPlaceholderLength, DefaultMaxPlaceholderLength)
	def(&l.MaxPlaceholders, DefaultMaxPlaceholders)
	return l
}
