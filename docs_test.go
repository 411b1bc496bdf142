package actions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
)

// The examples written in docs/parameters.md and docs/refusals.md are run
// here, so that the pages cannot drift from what the code does. Each check reads the page itself: a row or an example changed
// in the page is checked as written.

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("docs/" + name)
	require.NoError(t, err)
	return string(b)
}

// tableRows returns the cells of the rows of the first Markdown table
// whose header row starts with header.
func tableRows(t *testing.T, page, header string) [][]string {
	t.Helper()
	var rows [][]string
	in := false
	for _, line := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		case in:
			require.NotEmpty(t, rows, "the table %q is empty", header)
			return rows
		}
	}
	require.NotEmpty(t, rows, "no table %q", header)
	return rows
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// spans returns the code spans of a cell.
func spans(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func refusalOf(t *testing.T, err error) *Refusal {
	t.Helper()
	var r *Refusal
	require.True(t, errors.As(err, &r), "%v", err)
	return r
}

// TestDocParametersRegistrationTable compiles every whole schema in the
// examples of the table of registration faults and checks the pointer the
// table gives.
func TestDocParametersRegistrationTable(t *testing.T) {
	rows := tableRows(t, readDoc(t, "parameters.md"), "| fault | example | pointer |")
	ran := 0
	for _, row := range rows {
		require.Len(t, row, 3, "%v", row)
		ptrs := spans(row[2])
		for _, ex := range spans(row[1]) {
			var top map[string]any
			whole := ex == "true" || ex == "[]" ||
				(json.Unmarshal([]byte(ex), &top) == nil && (top["type"] != nil || top["properties"] != nil))
			if !whole {
				continue // a fragment, not a whole schema
			}
			_, err := CompileParameters(ex, Limits{})
			require.Error(t, err, "%s must be refused", ex)
			r := refusalOf(t, err)
			assert.Equal(t, codes.ConstraintViolation, r.Code)
			require.Len(t, r.Issues, 1)
			require.NotEmpty(t, ptrs, "row %q names no pointer", row[0])
			want := ptrs[0]
			if want == `""` {
				want = ""
			}
			assert.Equal(t, want, r.Issues[0].Path, "%s: %v", ex, r)
			assert.NotEmpty(t, r.Issues[0].Keyword, "%s", ex)
			ran++
		}
	}
	assert.GreaterOrEqual(t, ran, 4, "the table's whole-schema examples")
}

// TestDocParametersContradictions checks the table of schemas whose
// defaults contradict them: each is refused at the pointer and keyword the
// table gives.
func TestDocParametersContradictions(t *testing.T) {
	rows := tableRows(t, readDoc(t, "parameters.md"), "| schema | refused at | keyword |")
	require.Len(t, rows, 4, "the table's four schemas")
	for _, row := range rows {
		schema, at, kw := spans(row[0])[0], spans(row[1])[0], spans(row[2])[0]
		_, err := CompileParameters(schema, Limits{})
		require.Error(t, err, schema)
		r := refusalOf(t, err)
		assert.Equal(t, codes.ConstraintViolation, r.Code)
		require.Len(t, r.Issues, 1)
		assert.Equal(t, at, r.Issues[0].Path, schema)
		assert.Equal(t, kw, r.Issues[0].Keyword, schema)
	}
}

// TestDocParametersExamples runs the examples written in the prose of
// parameters.md.
func TestDocParametersExamples(t *testing.T) {
	page := readDoc(t, "parameters.md")
	ctx := context.Background()

	// "So `SCHEMA` fills `{}` into `VALUE`" (defaults through $ref).
	m := regexp.MustCompile("So `([^`]+)`\\s+fills `\\{\\}` into `([^`]+)`").FindStringSubmatch(page)
	require.NotNil(t, m, "the $ref defaults example")
	ps, err := CompileParameters(m[1], Limits{})
	require.NoError(t, err)
	got, err := ps.Check(ctx, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, decodeExact(t, []byte(m[2])), any(got))

	// "says where: `MESSAGE` for `SCHEMA`" (a schema that is not JSON).
	m = regexp.MustCompile("says where: `([^`]+)` for\\s+`([^`]+)`").FindStringSubmatch(page)
	require.NotNil(t, m, "the schema text example")
	_, err = CompileParameters(m[2], Limits{})
	r := refusalOf(t, err)
	assert.Contains(t, r.Issues[0].Message, m[1])
	assert.Equal(t, "json", r.Issues[0].Keyword)

	// The enum and const messages.
	for _, c := range []struct{ pattern, schema, params string }{
		{"`(must be one of \"low\", \"normal\" or \"high\")`", `{"type":"object","properties":{"p":{"enum":["low","normal","high"]}}}`, `{"p":"x"}`},
		{"`(must be one of 1, 2, 3, 5, 8, or 3 more values the schema lists)`", `{"type":"object","properties":{"p":{"enum":[1,2,3,5,8,13,21,34]}}}`, `{"p":4}`},
		{"`(must be \"on\")`", `{"type":"object","properties":{"p":{"const":"on"}}}`, `{"p":"off"}`},
	} {
		m := regexp.MustCompile(c.pattern).FindStringSubmatch(page)
		require.NotNil(t, m, "the page shows %s", c.pattern)
		ps, err := CompileParameters(c.schema, Limits{})
		require.NoError(t, err)
		_, err = ps.Check(ctx, c.params, nil)
		r := refusalOf(t, err)
		require.Len(t, r.Issues, 1)
		assert.Equal(t, m[1], r.Issues[0].Message)
	}
}

// TestDocRefusalsPolicyTable checks the table of transports and retry
// verdicts against codes.PolicyOf, for every code the registry raises.
func TestDocRefusalsPolicyTable(t *testing.T) {
	rows := tableRows(t, readDoc(t, "refusals.md"), "| code | transport | retry |")
	known := map[codes.Code]bool{}
	for _, c := range registryCodes() {
		known[c] = true
	}
	seen := map[codes.Code]bool{}
	for _, row := range rows {
		for _, c := range spans(row[0]) {
			code := codes.Code(c)
			if !known[code] {
				continue
			}
			seen[code] = true
			p := codes.PolicyOf(code)
			assert.Equal(t, row[1], string(p.Transport), "transport of %s", code)
			assert.Equal(t, row[2], string(p.Retry), "retry of %s", code)
		}
	}
	for c := range known {
		assert.True(t, seen[c], "refusals.md lists no policy for %s", c)
	}
	last := rows[len(rows)-1]
	require.Equal(t, "a domain code", last[0])
	assert.Equal(t, string(codes.PolicyOf(codes.Domain).Transport), last[1])
}

// TestDocRefusalsExamples runs the examples of refusals.md: the message
// that names a limit and no value, and the body's own refusal.
func TestDocRefusalsExamples(t *testing.T) {
	page := readDoc(t, "refusals.md")
	require.Contains(t, page, "`\"/count must be >= 1\"`")
	ps, err := CompileParameters(`{"type":"object","properties":{"count":{"type":"integer","minimum":1}}}`, Limits{})
	require.NoError(t, err)
	_, err = ps.Check(context.Background(), json.RawMessage(`{"count":0}`), nil)
	r := refusalOf(t, err)
	require.Len(t, r.Issues, 1)
	assert.Equal(t, "/count must be >= 1", r.Issues[0].Path+" "+r.Issues[0].Message)

	require.Contains(t, page, `actions.NewRefusal("tank_empty", "the tank is empty")`)
	nr := NewRefusal("tank_empty", "the tank is empty")
	assert.Equal(t, codes.TransportToolResult, nr.Transport)
	assert.Equal(t, codes.RetryNever, nr.Retry)
	assert.Equal(t, `tank_empty: the tank is empty`, strings.SplitN(nr.Error(), " (", 2)[0])
}
