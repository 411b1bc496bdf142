package mcpserver_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
)

// TestKeyedCallOutlivesItsClient: on stateless HTTP, a keyed call whose
// client leaves mid-run is not cut short: its body sees no cancellation,
// and the client's retry on the other replica waits for it and gets its
// answer; the body ran once.
func TestKeyedCallOutlivesItsClient(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		_, err := db.Exec("CREATE TABLE charges (amount TEXT NOT NULL)")
		require.NoError(t, err)
		var runs atomic.Int64
		started, release := make(chan struct{}), make(chan struct{})
		bodyCtxErr := make(chan error, 1)
		replica := func() *mcpserver.Handler {
			pool, err := sql.Open(db.Driver, db.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = pool.Close() })
			s, err := sqlstore.New(pool, db.Dialect, nil)
			require.NoError(t, err)
			require.NoError(t, s.Migrate(context.Background()))
			reg := actions.NewRegistry(&actions.Options{Store: s, KeyWait: time.Minute})
			reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge", NeedsIdempotencyKey: true},
				func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
					runs.Add(1)
					tx, _ := sqlstore.Tx(ctx)
					if _, err := tx.ExecContext(ctx, "INSERT INTO charges (amount) VALUES ('5')"); err != nil {
						return nil, err
					}
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
					}
					bodyCtxErr <- ctx.Err()
					return map[string]any{"charged": 5}, ctx.Err()
				}))
			server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0"}, nil)
			require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
				Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
					return &actions.Caller{Principal: "ann", Surface: actions.SurfaceMCP}
				}}))
			return mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: true})
		}
		h1, h2 := replica(), replica()
		gone := make(chan struct{}) // the first replica saw the client's request end
		srv1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Watch") != "" {
				go func() { <-r.Context().Done(); close(gone) }()
			}
			h1.ServeHTTP(w, r)
		}))
		srv2 := httptest.NewServer(h2)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			assert.NoError(t, h1.Shutdown(ctx))
			assert.NoError(t, h2.Shutdown(ctx))
			srv1.Close()
			srv2.Close()
		}()
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shop-charge","arguments":{},"_meta":{"io.actionreg/idempotency-key":"k-1"}}}`

		first := newRawClient(srv1.URL)
		first.version = "2025-11-25"
		ctx, leave := context.WithCancel(context.Background())
		left := make(chan struct{})
		go func() {
			defer close(left)
			if resp, err := first.post(ctx, call, "X-Watch", "1"); err == nil {
				_ = resp.Body.Close()
			}
		}()
		<-started
		leave() // the client leaves mid-run
		<-left
		<-gone

		retry := newRawClient(srv2.URL)
		retry.version = "2025-11-25"
		answer := make(chan string, 1)
		go func() {
			resp, err := retry.post(context.Background(), call)
			if err != nil {
				answer <- err.Error()
				return
			}
			answer <- readAll(t, resp)
		}()
		close(release)
		require.NoError(t, <-bodyCtxErr, "the body was not cancelled by its client leaving")
		body := <-answer
		assert.Contains(t, body, `{\"charged\":5}`)
		assert.NotContains(t, body, `"isError":true`)
		assert.Equal(t, int64(1), runs.Load(), "the body ran once")
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM charges").Scan(&n))
		assert.Equal(t, 1, n, "the first call committed")
	})
}
