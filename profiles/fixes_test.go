package profiles

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// ruleFixture is one file of testdata/rules: actions that break
// a provider's rule unless the export handles them, the tool and the
// losses each profile exports (or its refusal), and tool calls mapped
// back. The expected exports are written by -update and read by people.
type ruleFixture struct {
	Description string     `json:"description"`
	Cases       []ruleCase `json:"cases"`
}

type ruleCase struct {
	Name     string                       `json:"name"`
	Action   json.RawMessage              `json:"action"`
	Profiles []Profile                    `json:"profiles"`
	Want     map[Profile]profileGoldenOne `json:"want"`
	Calls    []ruleCall                   `json:"calls,omitempty"`
}

// ruleCall is a tool call a model makes with the exported tool; params
// are what the body receives.
type ruleCall struct {
	Profile   Profile         `json:"profile"`
	Arguments json.RawMessage `json:"arguments"`
	Params    json.RawMessage `json:"params"`
}

func TestProfileProviderRules(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "rules", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			require.NoError(t, err)
			var f ruleFixture
			require.NoError(t, json.Unmarshal(data, &f))
			require.NotEmpty(t, f.Cases)
			for ci := range f.Cases {
				c := &f.Cases[ci]
				t.Run(c.Name, func(t *testing.T) {
					var def actions.Definition
					require.NoError(t, json.Unmarshal(c.Action, &def))
					got := map[Profile]profileGoldenOne{}
					for _, p := range c.Profiles {
						e, err := exportDefs([]actions.Definition{def}, p)
						if err != nil {
							var r *actions.Refusal
							require.ErrorAs(t, err, &r, p)
							got[p] = profileGoldenOne{Error: string(r.Code) + ": " + r.Issues[0].Path + ": " + r.Issues[0].Message}
							continue
						}
						require.Len(t, e.Tools, 1)
						assert.Empty(t, checkTool(p, e.Tools[0]), "%s breaks its provider's rules", p)
						got[p] = profileGoldenOne{Tool: exportJSON(t, e.Tools[0]), Losses: e.Losses}
					}
					if *updateProfiles {
						c.Want = got
						return
					}
					require.Len(t, got, len(c.Want), "give want for each profile (-update)")
					for p, w := range c.Want {
						g := got[p]
						assert.Equal(t, w.Error, g.Error, p)
						if len(w.Tool) > 0 || len(g.Tool) > 0 {
							require.NotEmpty(t, g.Tool, p)
							require.NotEmpty(t, w.Tool, p)
							assert.Equal(t, canonical(t, w.Tool), canonical(t, g.Tool), p)
						}
						assert.Equal(t, len(w.Losses), len(g.Losses), p)
						if len(w.Losses)+len(g.Losses) > 0 {
							assert.Equal(t, w.Losses, g.Losses, p)
						}
					}
					for _, call := range c.Calls {
						reg := actions.NewRegistry(nil)
						require.NoError(t, reg.Register(actions.New(def, echo)))
						res, err := runToolCall(context.Background(), reg, call.Profile, actions.Call{Action: actions.ToolName(def.ID), Params: call.Arguments})
						require.NoError(t, err, call.Profile)
						assert.Equal(t, canonical(t, call.Params), canonical(t, exportJSON(t, res.Value)), call.Profile)
					}
				})
			}
			if *updateProfiles {
				text, err := json.MarshalIndent(f, "", "  ")
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(name, append(text, '\n'), 0o644))
			}
		})
	}
}

// keysOf lists the property names of every properties map under s.
func keysOf(s any) []string {
	var out []string
	eachSchema(s, "", func(m map[string]any, ptr string) {
		if ps, ok := m["properties"].(map[string]any); ok {
			for n := range ps {
				out = append(out, ptr+"/properties/"+n+"\x00"+n)
			}
		}
	})
	sort.Strings(out)
	return out
}

// undeclaredRequired lists the names a required lists that the same
// schema's properties do not declare.
func undeclaredRequired(s any) []string {
	var out []string
	eachSchema(s, "", func(m map[string]any, ptr string) {
		ps, _ := m["properties"].(map[string]any)
		for n := range requiredSet(m) {
			if _, ok := ps[n]; !ok {
				out = append(out, "required name not in properties: "+ptr+" "+n)
			}
		}
	})
	sort.Strings(out)
	return out
}

func lastCut(s string) string { i := strings.LastIndexByte(s, 0); return s[i+1:] }
