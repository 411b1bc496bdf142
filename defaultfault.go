package actions

import (
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/actionreg/actions/internal/ijson"
)

// A call must never be refused for what the caller did not send. Schemas
// whose defaults contradict them are refused at registration when the
// contradiction shows on the empty object (see internal/schema's
// Contradictions); one that shows only once the caller's own values pick
// a branch (an if the caller's value satisfies, a then whose default
// breaks the object) is caught here, on the refusal path only.

// contradiction returns an internal refusal when some breach of the
// filled parameters v is the defaults' doing: it lies at or under a
// member a default filled, or at an object holding one (maxProperties,
// not...) that the caller's parameters without the defaults do not
// break. A missing member (required, dependentRequired) never is, nor a
// breach of a value the caller sent that holds no filled member: the
// caller can fix those. params is what the caller gave.
func (ps *ParameterSchema) contradiction(params any, v any, issues []Issue) *Refusal {
	sent, err := ps.copyParams(params)
	if err != nil {
		return nil
	}
	var filled []string
	filledPaths(sent, v, "", &filled)
	var own map[[2]string]bool
	var fault []Issue
	for _, is := range issues {
		if is.Keyword == "required" || is.Keyword == "dependentRequired" {
			continue
		}
		if under(is.Path, filled) {
			fault = append(fault, is)
			continue
		}
		if !holdsFilled(is.Path, filled) {
			// A value the caller sent, holding nothing the defaults
			// filled: its breach is the caller's to fix, even when a
			// default chose the branch that judges it.
			continue
		}
		if own == nil {
			own = map[[2]string]bool{}
			if err := ps.validate(sent); err != nil {
				if ve, ok := err.(*jsonschema.ValidationError); ok {
					for _, o := range issuesOf(ve) {
						own[[2]string{o.Path, o.Keyword}] = true
					}
				}
			}
		}
		if !own[[2]string{is.Path, is.Keyword}] {
			fault = append(fault, is)
		}
	}
	if len(fault) == 0 {
		return nil
	}
	r := NewRefusal(CodeInternal, "the action's parameters schema contradicts itself: the defaults it filled break it")
	r.cause = &contradictionError{issues: fault}
	return r
}

// filledPaths appends the pointers of the members v holds and sent does
// not: those the defaults filled.
func filledPaths(sent, v any, at string, out *[]string) {
	switch vv := v.(type) {
	case map[string]any:
		sm, _ := sent.(map[string]any)
		for k, e := range vv {
			p := ijson.AppendToken(at, k)
			if se, ok := sm[k]; ok {
				filledPaths(se, e, p, out)
			} else {
				*out = append(*out, p)
			}
		}
	case []any:
		sa, _ := sent.([]any)
		for i, e := range vv {
			if i < len(sa) {
				filledPaths(sa[i], e, ijson.AppendToken(at, strconv.Itoa(i)), out)
			}
		}
	}
}

// holdsFilled reports whether the value at path holds a filled member.
func holdsFilled(path string, filled []string) bool {
	for _, p := range filled {
		if strings.HasPrefix(p, path+"/") {
			return true
		}
	}
	return false
}

func under(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// contradictionError is the cause of the refusal, for the host: the
// breaches the defaults made, each at its pointer into the parameters
// with the keyword broken.
type contradictionError struct {
	issues []Issue
}

func (e *contradictionError) Error() string {
	var b strings.Builder
	b.WriteString("actions: the defaults of the parameters schema break it")
	for i, is := range e.issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(orRootPath(is.Path) + " [" + is.Keyword + "] " + is.Message)
	}
	return b.String()
}

func orRootPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}
