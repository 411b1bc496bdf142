package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// TestListingNearTheBareSDK: each tool tools/list gives is within 1.2×
// the bytes of the same tool (name, title, description, annotations,
// input and output schemas) listed by a server written on the bare SDK:
// what makes a result a refusal or a cut one is said in few bytes, not
// repeated in full in every tool.
func TestListingNearTheBareSDK(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			reg := listingRegistry(t)
			server := mcp.NewServer(&mcp.Implementation{Name: "ours", Version: "v0.0.1"}, nil)
			require.NoError(t, mcpserver.AddTools(server, reg, nil))
			ours := listTools(t, server, v.ask)

			bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "v0.0.1"}, nil)
			tools, err := reg.Tools(nil)
			require.NoError(t, err)
			for _, tool := range tools {
				bt := &mcp.Tool{Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: tool.InputSchema}
				if tool.OutputSchema != nil {
					bt.OutputSchema = tool.OutputSchema
				}
				for _, o := range ours.Tools {
					if o.Name == tool.Name {
						bt.Annotations = o.Annotations
					}
				}
				bare.AddTool(bt, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
			}
			theirs := listTools(t, bare, v.ask)

			size := map[string]int{}
			for _, tool := range theirs.Tools {
				b, err := json.Marshal(tool)
				require.NoError(t, err)
				size[tool.Name] = len(b)
			}
			total, bareTotal := 0, 0
			for _, tool := range ours.Tools {
				b, err := json.Marshal(tool)
				require.NoError(t, err)
				total, bareTotal = total+len(b), bareTotal+size[tool.Name]
				require.Contains(t, size, tool.Name)
				assert.LessOrEqual(t, float64(len(b)), 1.2*float64(size[tool.Name]), "%s: %d bytes, bare SDK %d", tool.Name, len(b), size[tool.Name])
			}
			t.Logf("%d tools: %d bytes, bare SDK %d (%.2f×)", len(ours.Tools), total, bareTotal, float64(total)/float64(bareTotal))
		})
	}
}

// listTools lists the tools of server to a client asking for version
// ("" for the SDK's default).
func listTools(t *testing.T, server *mcp.Server, version string) *mcp.ListToolsResult {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0.0.1"}, nil).Connect(ctx, ct, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	return res
}

type (
	site struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Kind string `json:"kind" jsonschema:"plant or depot"`
	}
	siteQuery struct {
		Name string `json:"name" jsonschema:"the site's name"`
	}
)

// listingRegistry holds five typed actions with output schemas, of the
// sizes a host's tools have.
func listingRegistry(t *testing.T) *actions.Registry {
	reg := actions.NewRegistry(nil)
	for _, id := range []string{"supply/create_site", "supply/get_site", "supply/rename_site", "supply/close_site", "supply/find_site"} {
		reg.MustRegister(actions.Typed(actions.Definition{ID: id, Title: "A site action", Effect: actions.EffectRead,
			Description: "Does what its name says to one site of the supply chain, found by name."},
			func(_ context.Context, q siteQuery, _ *actions.Trace) (site, error) { return site{Name: q.Name}, nil }))
	}
	return reg
}
