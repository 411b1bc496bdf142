package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
)

// The capabilities the example's actions need.
const (
	capRead  = "supply.read"
	capWrite = "supply.write"
)

// principals are the example's two people and the capabilities the host
// derives for each: a viewer who reads, an editor who also writes.
var principals = map[string][]string{
	"viewer": {capRead},
	"editor": {capRead, capWrite},
}

// demoTokens are the bearer tokens the HTTP server accepts, with their
// user and scopes. A real host verifies the tokens its authorization
// server issues; these fixed strings are for trying the example only.
var demoTokens = map[string]auth.TokenInfo{
	"viewer-demo-token": {UserID: "viewer", Scopes: []string{"mcp:read"}},
	"editor-demo-token": {UserID: "editor", Scopes: []string{"mcp:read", "mcp:write"}},
	// The editor with the read scope only: a write gets the scope
	// challenge (HTTP 403, WWW-Authenticate).
	"editor-read-demo-token": {UserID: "editor", Scopes: []string{"mcp:read"}},
}

// verifyToken is the example's auth.TokenVerifier.
func verifyToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	ti, ok := demoTokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	ti.Expiration = time.Now().Add(time.Hour)
	return &ti, nil
}

// callerOf is who calls: the token's user over HTTP, and over stdio (no
// token) the person who started the server, as the editor.
func callerOf(_ context.Context, token *auth.TokenInfo, _ http.Header) *actions.Caller {
	principal := "editor"
	if token != nil {
		principal = token.UserID
	}
	return &actions.Caller{Principal: principal, Capabilities: principals[principal]}
}

// protect puts the MCP handler behind the SDK's bearer-token check and the
// scope challenge (a read token calling a write gets HTTP 403 with
// WWW-Authenticate), and adds the host's own confirmation endpoint:
// POST /pending/{id}/confirm or /pending/{id}/reject with the same token.
func protect(mux *http.ServeMux, mcpHandler http.Handler, reg *actions.Registry[*Env], model *Model, onEntry func(actions.RunEntry)) {
	bearer := auth.RequireBearerToken(verifyToken, nil)
	mux.Handle("/mcp", bearer(mcpserver.ScopeChallenge(reg, mcpserver.Options[*Env]{Caller: callerOf}, 0)(mcpHandler)))
	mux.Handle("POST /pending/{id}/{decision}", bearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := callerOf(r.Context(), auth.TokenInfoFromContext(r.Context()), r.Header)
		caller.Surface = actions.SurfaceUI // the host's own screen
		id := r.PathValue("id")
		var err error
		var entry actions.RunEntry
		switch r.PathValue("decision") {
		case "confirm":
			// The change is taken in the confirmation's transaction.
			runner := sqlstore.NewRunner(model.Store(), reg)
			_, entry, err = runner.Confirm(r.Context(), id, inTx(withCaller(NewHost(model, caller.Principal, onEntry), caller)))
		case "reject":
			err = reg.Reject(r.Context(), id, caller)
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var rf *actions.Refusal
		if errors.As(err, &rf) {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": rf.Code, "message": rf.Message})
			return
		}
		if err != nil {
			http.Error(w, "the change could not be decided", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"outcome": strings.ToLower(string(entry.Outcome)), "result": json.RawMessage(orNull(entry.Result))})
	})))
}

func withCaller(h *actions.Host[*Env], c *actions.Caller) *actions.Host[*Env] {
	h.Caller = c
	return h
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}
