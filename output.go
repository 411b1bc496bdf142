package actions

import (
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/actionreg/actions/codes"
)

// An output contract is an action's promise about its results: the
// output schema of its [Definition] (MCP's Tool.outputSchema). The
// registry compiles it at Register with the same strict rules as a
// parameters schema, except that its root may be any schema object, and
// checks each result against it after the body returns: a result that
// breaks it never reaches the caller.

// compileOutput compiles an output schema; nil gives nil. Refusals are
// those of [CompileParameters] without the rule on the root:
// constraint_violation, "invalid output schema", each issue's pointer
// prefixed with /outputSchema (as Register prefixes a parameters schema's
// with /parameters).
func compileOutput(s any, limits Limits) (*ParameterSchema, error) {
	if s == nil {
		return nil, nil
	}
	ps, _, err := compileParameters(s, limits.withDefaults(), false)
	if err != nil {
		if r := asRefusal(err); r != nil && r.Code == codes.ConstraintViolation {
			c := *r
			c.Message = "invalid output schema"
			c.Issues = make([]Issue, len(r.Issues))
			for i, is := range r.Issues {
				is.Path = "/outputSchema" + is.Path
				is.Message = strings.Replace(is.Message, "parameters schema", "output schema", 1)
				c.Issues[i] = is
			}
			return nil, &c
		}
		return nil, err
	}
	return ps, nil
}

// checkOutput returns a result in JSON's Go types, after checking it
// against the output schema ps. encode, when not nil, writes the result
// in JSON's Go types (a typed action's plan); otherwise [resultValue]
// does. A result without a JSON form gives an internal refusal; a breach
// gives an output_invalid refusal whose issues point into the result.
func (ps *ParameterSchema) checkOutput(result any, encode func(any) (any, error)) (any, error) {
	var v any
	var err error
	switch {
	case encode != nil:
		if v, err = encode(result); err != nil {
			r := refusef(codes.Internal, "the result has no JSON form")
			r.cause = err
			// The plan's encoder says only that it failed; the canonical
			// writer says why and where, for the host (an error path: its
			// cost does not matter).
			if _, cerr := CanonicalJSON(result); cerr != nil {
				r.cause = cerr
			}
			return nil, r
		}
		err = ps.validate(v)
	default:
		// A result made of JSON's Go types (and Go numbers) is judged as
		// it is, without a copy; one the engine cannot read is copied
		// into JSON's Go types first.
		v = result
		if err = ps.validate(v); err != nil && holdsInvalidValue(err) {
			if v, err = resultValue(result); err != nil {
				return nil, err
			}
			err = ps.validate(v)
		}
	}
	if err != nil {
		var ve *jsonschema.ValidationError
		issues := []Issue{{Path: "", Keyword: "schema", Message: "breaks the output schema"}}
		if errors.As(err, &ve) {
			issues = issuesOf(ve)
		} else if r := asRefusal(err); r != nil {
			return nil, r // the engine panicked
		}
		msg, issues := capIssues("the action's result breaks its output schema", issues)
		return nil, refusef(codes.OutputInvalid, msg, issues...)
	}
	return v, nil
}

// holdsInvalidValue reports whether the engine met a value that is not
// one of JSON's Go types (a struct, a typed map) while validating.
func holdsInvalidValue(err error) bool {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	var walk func(e *jsonschema.ValidationError) bool
	walk = func(e *jsonschema.ValidationError) bool {
		if _, ok := e.ErrorKind.(*kind.InvalidJsonValue); ok {
			return true
		}
		for _, c := range e.Causes {
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(ve)
}

// resultValue returns a result in JSON's Go types (numbers as
// json.Number), as its JSON text says: a Go value goes through
// encoding/json, so that its own MarshalJSON methods apply, as they do in
// the run entry.
func resultValue(result any) (any, error) {
	if result == nil {
		return nil, nil
	}
	v, cerr := copyValue(result, canonicalMaxDepth)
	if cerr != nil {
		r := refusef(codes.Internal, "the result has no JSON form")
		r.cause = cerr
		return nil, r
	}
	return v, nil
}
