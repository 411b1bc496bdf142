package actions

// Issue, one breach a refusal lists, and the wording of the issues a
// parameters check reports: one per failed keyword, at the pointer of the
// value at fault, from the schema's side of the engine's error only (never
// a submitted value).

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/actionreg/actions/internal/schema"
)

// Issue is one breach found in a call or a registration, such as one
// schema keyword that failed. Message never contains a value of the
// parameters; it may name what the caller chose as names: an action id,
// or a batch's own result names (unknown_reference: "no earlier step is
// named p").
type Issue struct {
	// Path is the RFC 6901 JSON Pointer of the value at fault: into the
	// parameters for invalid_parameters ("" is the whole object), into
	// the schema for constraint_violation, into the batch for script steps.
	// It may hold member names the caller sent; a segment over 64 bytes is
	// cut and ends with "…" (U+2026), and a path over 256 bytes stops
	// after its last whole segment with "/…".
	Path string `json:"path"`
	// Keyword is what failed: the JSON Schema keyword ("required",
	// "type", "ref", "default", ...); "json" for text that is not I-JSON;
	// at registration "id", "run" (a nil body), "body" or "definition"
	// (a manifest entry without its other half) or the schema keyword; in
	// a batch the key at fault ("commands", "call", "with", "as",
	// "result"); "call" for a nested call too deep.
	Keyword string `json:"keyword"`
	// Message says what was expected, in lower case, with limits and
	// keywords but no submitted value.
	Message string `json:"message"`
}

// An issue's path may hold member names the caller sent (an unknown
// property, a deep nest of them): so that an answer never grows with
// them, a path segment keeps at most maxPathSegment bytes and a path at
// most maxPath, each cut marked with "…" (U+2026).
const (
	maxPathSegment = 64
	maxPath        = 256
)

// clipPath bounds the JSON Pointer p as the constants above say: a long
// segment is cut at a UTF-8 boundary (and never inside a "~0" or "~1"
// escape) and ends with "…"; a long path is cut after its last whole
// segment that fits and ends with "/…".
func clipPath(p string) string {
	if len(p) <= maxPathSegment || p[0] != '/' {
		return p // no segment can be over the bound, or no pointer
	}
	var b strings.Builder
	for seg := range strings.SplitSeq(p[1:], "/") {
		if len(seg) > maxPathSegment {
			cut := maxPathSegment
			for cut > 0 && !utf8.RuneStart(seg[cut]) {
				cut--
			}
			if cut > 0 && seg[cut-1] == '~' {
				cut--
			}
			seg = seg[:cut] + "…"
		}
		if b.Len()+1+len(seg) > maxPath {
			b.WriteString("/…")
			break
		}
		b.WriteByte('/')
		b.WriteString(seg)
	}
	return b.String()
}

// issuesOf flattens a validation error into issues: one per failed
// keyword, at the pointer of the value at fault.
func issuesOf(ve *jsonschema.ValidationError) []Issue {
	bs := schema.Breaches(ve)
	out := make([]Issue, 0, len(bs))
	for _, b := range bs {
		var msg string
		switch k := b.Kind.(type) {
		case *kind.Required:
			msg = "is required"
		case *kind.DependentRequired:
			msg = "is required when " + k.Prop + " is present"
		case *kind.AdditionalProperties:
			msg = "is not allowed"
		case *schema.NameBreach:
			msg = "this property name is not allowed"
		case *kind.FalseSchema:
			msg = falseMessage(b.Keyword)
		default:
			b.Keyword, msg = describe(k)
		}
		out = append(out, Issue{b.Path, b.Keyword, msg})
	}
	return sortIssues(out)
}

func falseMessage(kw string) string {
	switch kw {
	case "unevaluatedProperties", "additionalProperties":
		return "is not allowed"
	case "unevaluatedItems", "items":
		return "no item is allowed here"
	}
	return "no value is allowed here"
}

// describe names the failed keyword and says what was expected, from the
// schema's side of the error only.
func describe(k jsonschema.ErrorKind) (kw, msg string) {
	if p := k.KeywordPath(); len(p) > 0 {
		kw = p[0]
	}
	switch k := k.(type) {
	case *kind.Type:
		return "type", "must be " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		return "enum", "must be " + oneOf(k.Want)
	case *kind.Const:
		if text, ok := schemaValue(k.Want); ok {
			return "const", "must be " + text
		}
		return "const", "must be the value the schema fixes"
	case *kind.Format:
		return "format", "must be a valid " + k.Want
	case *kind.MinProperties:
		return kw, fmt.Sprintf("must have at least %d propert%s", k.Want, pluralY(k.Want))
	case *kind.MaxProperties:
		return kw, fmt.Sprintf("must have at most %d propert%s", k.Want, pluralY(k.Want))
	case *kind.MinItems:
		return kw, fmt.Sprintf("must have at least %d item%s", k.Want, plural(k.Want))
	case *kind.MaxItems:
		return kw, fmt.Sprintf("must have at most %d item%s", k.Want, plural(k.Want))
	case *kind.UniqueItems:
		return kw, fmt.Sprintf("items %d and %d must not be equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return kw, "must contain a matching item"
	case *kind.MinContains:
		return kw, fmt.Sprintf("must contain at least %d matching item%s", k.Want, plural(k.Want))
	case *kind.MaxContains:
		return kw, fmt.Sprintf("must contain at most %d matching item%s", k.Want, plural(k.Want))
	case *kind.MinLength:
		return kw, fmt.Sprintf("must be at least %d character%s long", k.Want, plural(k.Want))
	case *kind.MaxLength:
		return kw, fmt.Sprintf("must be at most %d character%s long", k.Want, plural(k.Want))
	case *kind.Pattern:
		return kw, "must match the pattern " + k.Want
	case *kind.Minimum:
		return kw, "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return kw, "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return kw, "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return kw, "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return kw, "must be a multiple of " + ratString(k.Want)
	case *kind.AnyOf:
		return kw, "must match at least one of the schemas in anyOf"
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return kw, "must match exactly one of the schemas in oneOf, not several"
		}
		return kw, "must match exactly one of the schemas in oneOf"
	case *kind.Not:
		return "not", "must not match the schema in not"
	case *kind.RefCycle:
		return "$ref", "the schema refers to itself without end"
	case *kind.InvalidJsonValue:
		return "type", "is not a JSON value"
	}
	if kw == "" {
		kw = "schema"
	}
	return kw, "breaks " + kw
}

// Values the schema allows are named in messages: every client sees them
// in the tool's schema already, and a model needs them to fix its call.
// They come from the schema alone, never from the parameters.
const (
	maxListed     = 5  // values listed for an enum
	maxValueBytes = 64 // longer values are counted, not written
)

// schemaValue writes a value of the schema as its canonical JSON (RFC
// 8785), if it is short enough to quote. A number a double does not hold
// (2^53+1, a 20-digit integer) keeps the schema's digits: RFC 8785 would
// round it, and the message would name a value the schema refuses.
func schemaValue(v any) (string, bool) {
	s, err := exactText(v)
	if err != nil || len(s) > maxValueBytes {
		return "", false
	}
	return s, true
}

// oneOf names the values of an enum: the first few short ones, then how
// many more the schema lists.
func oneOf(vals []any) string {
	var shown []string
	for _, v := range vals {
		if len(shown) == maxListed {
			break
		}
		if text, ok := schemaValue(v); ok {
			shown = append(shown, text)
		}
	}
	more := len(vals) - len(shown)
	switch {
	case len(shown) == 0:
		return fmt.Sprintf("one of the %d values the schema lists", len(vals))
	case more > 0:
		return fmt.Sprintf("one of %s, or %d more value%s the schema lists", strings.Join(shown, ", "), more, plural(more))
	case len(shown) == 1:
		return shown[0]
	}
	return "one of " + strings.Join(shown[:len(shown)-1], ", ") + " or " + shown[len(shown)-1]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

// ratString writes a bound of the schema in decimal without rounding: a
// bound given as JSON number text is a finite decimal, so its digits end.
// A value with no finite decimal form (never met from JSON text) is
// written as a fraction.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	// The decimal ends after n digits when the denominator divides 10^n.
	den := new(big.Int).Set(r.Denom())
	n := 0
	for _, f := range []int64{2, 5} {
		k, bf, m := 0, big.NewInt(f), new(big.Int)
		for {
			q, rem := new(big.Int).QuoRem(den, bf, m)
			if rem.Sign() != 0 {
				break
			}
			den, k = q, k+1
		}
		n = max(n, k)
	}
	if den.Cmp(big.NewInt(1)) != 0 {
		return r.RatString()
	}
	s := r.FloatString(n)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func sortIssues(is []Issue) []Issue {
	sort.Slice(is, func(i, j int) bool {
		if is[i].Path != is[j].Path {
			return is[i].Path < is[j].Path
		}
		if is[i].Keyword != is[j].Keyword {
			return is[i].Keyword < is[j].Keyword
		}
		return is[i].Message < is[j].Message
	})
	out := is[:0]
	for i, x := range is {
		if i == 0 || x != is[i-1] {
			out = append(out, x)
		}
	}
	return out
}
