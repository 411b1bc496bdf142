package actions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
)

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// TestJSONSchemaSuite runs the required tests of the JSON Schema Test Suite
// (draft 2020-12) through the registry's own compiler configuration, with
// the object-root rule lifted since suite schemas judge any value. Each
// group either compiles and agrees with every test, or is refused with
// constraint_violation; the reasons for refusal are logged and counted.
func TestJSONSchemaSuite(t *testing.T) {
	files, err := filepath.Glob("testdata/json-schema-test-suite/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var agreed, refused, disagreed int
	reasons := map[string]int{}
	limits := Limits{}.withDefaults()
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var groups []suiteGroup
		require.NoError(t, json.Unmarshal(b, &groups))
		for _, g := range groups {
			name := filepath.Base(f) + "/" + g.Description
			ps, _, err := compileParameters(json.RawMessage(g.Schema), limits, false)
			if err != nil {
				var r *Refusal
				require.True(t, errors.As(err, &r), "%s: %v", name, err)
				require.Equal(t, codes.ConstraintViolation, r.Code, name)
				refused++
				reasons[r.Issues[0].Message]++
				continue
			}
			ok := true
			for _, tc := range g.Tests {
				_, err := ps.check(context.Background(), json.RawMessage(tc.Data), nil)
				if (err == nil) != tc.Valid {
					ok = false
					t.Errorf("%s / %s: want valid=%v, got %v", name, tc.Description, tc.Valid, err)
				}
			}
			if ok {
				agreed++
			} else {
				disagreed++
			}
		}
	}
	var rs []string
	for r := range reasons {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	for _, r := range rs {
		t.Logf("refused %3d: %s", reasons[r], r)
	}
	t.Logf("json-schema-suite: %d agreed, %d refused, %d disagreed", agreed, refused, disagreed)
	assert.Zero(t, disagreed)
	assert.Greater(t, agreed, refused, "most groups must compile")
}
