package actions

import (
	"strconv"
	"strings"

	"github.com/actionreg/actions/internal/ijson"
)

// A call must never be refused for what the caller did not send. Schemas
// whose defaults contradict them are refused at registration when the
// contradiction shows on the empty object (see internal/schema's
// Contradictions); one that shows only once the caller's own values pick
// a branch (an if the caller's value satisfies, a then whose default
// breaks the object) is caught here, on the refusal path only.

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

func underAny(path string, prefixes []string) bool {
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
