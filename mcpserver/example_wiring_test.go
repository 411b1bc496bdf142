package mcpserver_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
)

// ticketCaller is who calls: the verified token's user, with the capabilities
// the host gives that user.
func ticketCaller(_ context.Context, token *auth.TokenInfo, _ http.Header) *identity.Caller {
	if token == nil {
		return nil
	}
	return &identity.Caller{Principal: token.UserID, Capabilities: []string{"tickets.write"}}
}

func verifyAnn(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if token != "ann-token" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: "ann", Scopes: []string{"mcp:read", "mcp:write"}, Expiration: time.Now().Add(time.Hour)}, nil
}

// A service on SQLite with the gate and MCP over streamable HTTP: every
// tool call, batch and confirmation runs in one transaction with its run
// records, and the pending changes live in the same database. The lines
// between the two marks are the whole wiring, as the README shows it.
func Example_wiring() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:wiring?mode=memory&cache=shared")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE tickets (title TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	openTicket := actions.New(actions.Definition{ID: "tickets/open", Capability: "tickets.write", Additive: true,
		Parameters: `{"type":"object","required":["title"],"properties":{"title":{"type":"string","minLength":1}}}`},
		func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			tx, _ := sqlstore.Tx(ctx) // the unit's transaction, which the store opened
			_, err := tx.ExecContext(ctx, `INSERT INTO tickets (title) VALUES (?)`, p["title"])
			return map[string]any{"opened": p["title"]}, err
		})

	// --- the wiring ---
	store, _ := sqlstore.New(db, sqlstore.SQLite, nil)
	_ = store.Migrate(ctx)
	reg := actions.NewRegistry(&actions.Options{
		Store: store, // each call, batch and confirmation: one transaction with its records
		Gate:  &actions.GateOptions{Pending: store.Pending()},
	})
	reg.MustRegister(openTicket)
	opts := &mcpserver.Options{Caller: ticketCaller, Batch: &mcpserver.BatchTool{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "v1"}, nil)
	_ = mcpserver.AddTools(server, reg, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verifyAnn, nil)(mcpserver.ScopeChallenge(reg, opts)(mcpserver.HTTPHandler(server, nil))))
	// --- end of the wiring; http.ListenAndServe(addr, mux) serves it ---

	web := httptest.NewServer(mux)
	defer web.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: web.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerToken("ann-token")}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "tickets-open", Arguments: map[string]any{"title": "printer jam"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	recs, _ := store.Read(ctx, sqlstore.Filter{})
	fmt.Println(len(recs), recs[0].Entry.Action, recs[0].Entry.Outcome, recs[0].Audit.Caller.Principal)
	// Output:
	// {"opened":"printer jam"}
	// 1 tickets/open done ann
}

// bearerToken adds a bearer token to each request.
type bearerToken string

func (b bearerToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
