package mcpserver

import (
	"context"
	_ "embed"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP Apps extension (SEP-1865, io.modelcontextprotocol/ui): a tool
// names, in its _meta.ui.resourceUri, an HTML view the client renders in a
// sandboxed frame with the tool's result. A tool whose action needs
// confirmation names the confirmation view below, so that a client that
// supports the extension shows a held call's receipt in place, with a
// button opening the host's own confirmation screen (Options.ConfirmURL).
// A client without the extension ignores the member and reads the receipt
// as text and structured content.
const (
	// ConfirmViewURI is the resource of the confirmation view.
	ConfirmViewURI = "ui://actions/confirm"
	// appMIMEType is the MIME type of an MCP Apps HTML view.
	appMIMEType = "text/html;profile=mcp-app"
)

// confirmView is the view: a static page that reads the tool result the
// client passes it (ui/notifications/tool-result) and asks the client to
// open the receipt's confirmUrl (ui/open-link). It confirms nothing
// itself, reaches no network, and holds no secret.
//
//go:embed app/confirm.html
var confirmView string

// addConfirmView adds the confirmation view to s and names it in the
// _meta of the tools whose action needs confirmation (and of the batch
// tool, whose batches may hold such a step). It does nothing without
// Options.ConfirmURL: the view has no screen to open.
func (srv *server) addConfirmView(s *mcp.Server, tools []*mcp.Tool) {
	if srv.opts.ConfirmURL == nil {
		return
	}
	s.AddResource(&mcp.Resource{
		URI:         ConfirmViewURI,
		Name:        "confirmation",
		Title:       "Waiting for your confirmation",
		Description: "Shows a held call's receipt and opens the host's confirmation screen.",
		MIMEType:    appMIMEType,
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: ConfirmViewURI, MIMEType: appMIMEType, Text: confirmView,
			Meta: mcp.Meta{"ui": map[string]any{"prefersBorder": true}},
		}}}, nil
	})
	for _, t := range tools {
		if t.Meta == nil {
			t.Meta = mcp.Meta{}
		}
		ui, _ := t.Meta["ui"].(map[string]any)
		if ui == nil {
			ui = map[string]any{}
		}
		ui["resourceUri"] = ConfirmViewURI
		t.Meta["ui"] = ui
	}
}

// needsConfirmation reports whether the action id needs confirmation.
func (srv *server) needsConfirmation(id string) bool {
	d, ok := srv.defs[id]
	return ok && d.NeedsConfirmation
}
