package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
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
func callerOf(_ context.Context, token *auth.TokenInfo, _ http.Header) *identity.Caller {
	principal := "editor"
	if token != nil {
		principal = token.UserID
	}
	return &identity.Caller{Principal: principal, Capabilities: principals[principal]}
}

// protect puts the MCP handler behind the SDK's bearer-token check and the
// scope challenge (a read token calling a write gets HTTP 403 with
// WWW-Authenticate), and adds the host's own confirmation endpoint:
// POST /pending/{id}/confirm or /pending/{id}/reject with the same token.
func protect(mux *http.ServeMux, mcpHandler http.Handler, reg *actions.Registry) {
	bearer := auth.RequireBearerToken(verifyToken, nil)
	mux.Handle("/mcp", bearer(mcpserver.ScopeChallenge(reg, &mcpserver.Options{Caller: callerOf})(mcpHandler)))
	mux.Handle("POST /pending/{id}/{decision}", bearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := auth.TokenInfoFromContext(r.Context())
		caller := callerOf(r.Context(), token, r.Header)
		caller.Surface = identity.SurfaceUI // the host's own screen
		// The token's scopes, as mcpserver gives them to the gate: a
		// decision is checked as the token allows, as a call is.
		caller.Token = token != nil
		if token != nil {
			caller.Scopes = append([]string(nil), token.Scopes...)
		}
		d := actions.Decision{Change: r.PathValue("id"), Caller: caller}
		switch r.PathValue("decision") {
		case "confirm":
			d.Confirm = true
		case "reject":
		default:
			http.NotFound(w, r)
			return
		}
		// The change is taken, and run, in the decision's transaction.
		res, err := reg.Decide(r.Context(), d)
		w.Header().Set("Content-Type", "application/json")
		var rf *actions.Refusal
		if errors.As(err, &rf) && rf.Code == codes.InsufficientScope {
			// The same answer a call over MCP gets (RFC 6750 §3.1).
			w.Header().Set("WWW-Authenticate", rf.Challenge)
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": rf.Code, "message": rf.Message})
			return
		}
		if errors.As(err, &rf) && rf.Code != codes.Internal {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": rf.Code, "message": rf.Message})
			return
		}
		if err != nil {
			http.Error(w, "the change could not be decided", http.StatusInternalServerError)
			return
		}
		e := res.Entry()
		outcome := string(e.Outcome)
		if !d.Confirm {
			outcome = "rejected"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"outcome": outcome, "result": json.RawMessage(orNull(e.Result))})
	})))
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}
