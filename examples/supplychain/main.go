// Command supplychain is an example host of the actions registry: a small
// supply chain model (actors named in English and French, and their CO2
// emissions) in a SQL database, with seven actions on it.
//
// Usage:
//
//	supplychain [-db DB] [-batch FILE]   run a batch and print what it did
//	supplychain serve [-db DB]           serve the actions as MCP tools on stdio
//	supplychain serve -http ADDR         serve them over streamable HTTP at http://ADDR/mcp
//	supplychain serve -http ADDR -stateless [-replica NAME] [-serial]
//	                                     the same, each request on its own (for replicas)
//	supplychain serve ... -tool-search   list supply-get_actor, run_batch, tool_search and
//	                                     tool_describe only; find the other tools by search
//	supplychain serve ... -cpuprofile FILE
//	                                     and write a CPU profile of the run (runtime/pprof)
//	supplychain replay -db DB            replay the database's run log on a fresh model
//
// The database (-db, or the SUPPLYCHAIN_DB variable): by default SQLite in
// memory (modernc.org/sqlite, pure Go: nothing to install), seeded from the
// embedded model.json; a file path for SQLite in that file; postgres://...
// for PostgreSQL (pgx), which replicas share (docs/database.md). The
// model's tables, the run log and the pending changes live there; each
// tool call, batch and confirmation runs in one transaction with its
// records (sqlstore.Store as the registry's Store), and the server also
// offers the batch tool run_batch.
//
// Without arguments it runs the sample batch (batch.json, embedded) on the
// embedded model (model.json), then prints the batch's result, each run
// entry as one line of canonical JSON (RFC 8785), and the tool list as
// JSON, exported with the model's languages. A refused call stops the
// batch: the entries so far are printed and the command exits with
// status 1.
//
// While serving, standard output carries MCP messages only (stdio); the
// run entries of the calls and the server's logs go to standard error. On
// SIGTERM or an interrupt the server stops taking calls, lets the calls in
// flight end for up to drainTime, cancels the rest, and exits.
//
// Who calls (gate.go): over stdio, the person who started the server, as
// the editor; over HTTP, the user of the bearer token, viewer
// (viewer-demo-token: reads, scope mcp:read) or editor
// (editor-demo-token: reads and writes, scopes mcp:read mcp:write). Each
// sees only the tools it may call. Deleting an actor needs the person's
// confirmation: a client that supports elicitation is asked; any other
// gets a receipt, confirmed with POST /pending/{id}/confirm (or /reject)
// and the same token, or on the pages for people at /ui/ (package pages:
// the pending changes, their confirmation screens and the run log).
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

//go:embed model.json
var modelJSON []byte

//go:embed batch.json
var batchJSON []byte

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	shutdown, err := startTelemetry(ctx)
	if err == nil {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		err = errors.Join(err, shutdown(context.WithoutCancel(ctx)))
	}
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "supplychain:", err)
		}
		os.Exit(1)
	}
}

// run runs the command line args (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		return serve(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "replay" {
		return replayLog(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("supplychain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	batchFile := fs.String("batch", "", "run this batch file instead of the embedded batch.json")
	dsn := dbFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (try serve)", fs.Arg(0))
	}
	text := batchJSON
	if *batchFile != "" {
		b, err := os.ReadFile(*batchFile)
		if err != nil {
			return err
		}
		text = b
	}
	return runJob(ctx, *dsn, text, stdout)
}

// dbFlag adds -db to fs, its default from SUPPLYCHAIN_DB.
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", os.Getenv("SUPPLYCHAIN_DB"),
		"the database: empty for SQLite in memory, a file path for SQLite, postgres://... for PostgreSQL (default $SUPPLYCHAIN_DB)")
}

// runJob runs a batch on the model in the database dsn names, in one
// transaction with its records, and prints the result, the run entries
// and the tools.
func runJob(ctx context.Context, dsn string, batchText []byte, w io.Writer) error {
	model, reg, err := setupDB(ctx, dsn, "batch", nil)
	if err != nil {
		return err
	}
	defer model.Close()
	b, err := reg.DecodeBatch(batchText)
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	res, runErr := reg.Run(ctx, actions.Call{Batch: &b})
	if runErr == nil {
		text, err := actions.CanonicalJSON(res.Value)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "result:\n%s\n", text)
	}
	fmt.Fprintln(w, "run entries:")
	for _, rec := range res.Records {
		line, err := actions.CanonicalJSON(rec.Entry)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", line)
	}
	if runErr != nil {
		return fmt.Errorf("batch: %w", runErr)
	}
	if err := replayJob(ctx, res.Records, w); err != nil {
		return err
	}
	tools, err := reg.Tools(&actions.ToolOptions{Languages: model.Languages()})
	if err != nil {
		return err
	}
	text, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "tools:\n%s\n", text)
	return nil
}

// replayJob replays the batch's records in order on a fresh copy of the
// model, as a host checks a new release against its log, and prints one
// line per entry: "same", or where the replay departs from it.
func replayJob(ctx context.Context, recs []store.Record, w io.Writer) error {
	fresh, freshReg, err := setupDB(ctx, memoryDSN, "replay", nil)
	if err != nil {
		return err
	}
	defer fresh.Close()
	fmt.Fprintln(w, "replay on a fresh model:")
	for i, rec := range recs {
		verdict := "same"
		if _, err := freshReg.Replay(ctx, rec); err != nil {
			var d *actions.Divergence
			if !errors.As(err, &d) {
				return fmt.Errorf("replay: %w", err)
			}
			verdict = "departs at " + d.Path + ": " + d.Reason()
		}
		fmt.Fprintf(w, "%d %s: %s\n", i, rec.Entry.Action, verdict)
	}
	return nil
}

// setup opens a fresh model in memory and registers the actions.
func setup() (*Model, *actions.Registry, error) {
	return setupDB(context.Background(), memoryDSN, "", nil)
}

// setupDB opens the model in the database dsn names (seeding it from the
// embedded model when empty) and registers the actions; origin names the
// writer in the run log, and onRecord (may be nil) sees each record.
func setupDB(ctx context.Context, dsn, origin string, onRecord func(store.Record)) (*Model, *actions.Registry, error) {
	return setupDBOrder(ctx, dsn, origin, false, onRecord)
}

// setupDBOrder is setupDB whose store runs one unit at a time when serial
// (OpenModelSerial), side by side otherwise (OpenModel).
func setupDBOrder(ctx context.Context, dsn, origin string, serial bool, onRecord func(store.Record)) (*Model, *actions.Registry, error) {
	open := OpenModel
	if serial {
		open = OpenModelSerial
	}
	model, err := open(ctx, dsn, modelJSON, origin)
	if err != nil {
		return nil, nil, err
	}
	reg, err := NewRegistry(model, onRecord)
	if err != nil {
		model.Close()
		return nil, nil, err
	}
	return model, reg, nil
}

// newServer returns an MCP server whose tools are the visible actions of
// reg, and the batch tool; what the client is not told (a body's error,
// a panic) goes to logger.
func newServer(model *Model, reg *actions.Registry, logger *slog.Logger) (*mcp.Server, error) {
	return newServerAt(model, reg, logger, nil, nil)
}

// newServerAt is newServer whose held calls' receipts link to their
// confirmation screen, at the URL confirmURL gives (nil: none), and
// which lists only some tools and finds the others on demand when
// search is not nil.
func newServerAt(model *Model, reg *actions.Registry, logger *slog.Logger, confirmURL func(id string) string, search *mcpserver.ToolSearch) (*mcp.Server, error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "supplychain", Title: "Supply chain (actions example)", Version: "v0.1.0"},
		&mcp.ServerOptions{Logger: logger})
	err := mcpserver.AddTools(server, reg, &mcpserver.Options{
		Batch: &mcpserver.BatchTool{},
		OnError: func(_ context.Context, tool string, err error) {
			logger.Error("tool call failed", "tool", tool, "error", err)
		},
		Languages:  model.Languages(),
		Caller:     callerOf, // see gate.go
		ConfirmURL: confirmURL,
		ToolSearch: search,
	})
	if err != nil {
		return nil, err
	}
	observeServer(server)
	return server, nil
}

// drainTime is how long the calls in flight may run on when the server is
// asked to stop, before they are cancelled.
const drainTime = 10 * time.Second

// serve runs "serve [-http ADDR [-stateless]] [-tool-search]" until the client leaves or
// ctx ends.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("supplychain serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	stateless := fs.Bool("stateless", false, "with -http: no sessions, each request served on its own, so that replicas can share clients")
	dsn := dbFlag(fs)
	replica := fs.String("replica", "", "this server's name in the run log (its origin), for replicas sharing a database")
	serial := fs.Bool("serial", false, "run one call at a time across every replica sharing the database, instead of side by side under the locks each call takes")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile (runtime/pprof) of the whole run to this file")
	toolSearch := fs.Bool("tool-search", false, "list only supply-get_actor, the batch tool, tool_search and tool_describe; the other tools are found by search and called by name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuprofile != "" {
		stop, err := startProfile(*cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if *stateless && *addr == "" {
		return errors.New("serve: -stateless needs -http")
	}
	// Each record, once its unit is settled, as a line of canonical JSON.
	records := actions.NewEntryWriter(stderr)
	model, reg, err := setupDBOrder(ctx, *dsn, *replica, *serial, records.Write)
	if err != nil {
		return err
	}
	defer model.Close()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var search *mcpserver.ToolSearch
	if *toolSearch {
		search = &mcpserver.ToolSearch{Pinned: []string{"supply/get_actor"}}
	}
	server, err := newServerAt(model, reg, logger, screenURL(*addr), search)
	if err != nil {
		return err
	}
	if *addr == "" {
		err := mcpserver.ServeStdio(ctx, server, nil)
		if errors.Is(err, context.Canceled) {
			return nil // interrupted
		}
		return err
	}
	opts := &mcpserver.HTTPOptions{Stateless: *stateless, Logger: logger}
	ui, err := newPages(reg, model) // the pages for people: pages.go
	if err != nil {
		return err
	}
	return serveHTTP(ctx, *addr, server, opts, stderr, func(mux *http.ServeMux, h http.Handler) {
		protect(mux, h, reg) // bearer tokens, scopes, confirmations: gate.go
		mux.Handle("/ui/", ui)
	})
}

// startProfile starts a CPU profile written to path; stop ends it and
// closes the file.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// screenURL gives the URL of a pending change's confirmation screen on
// the pages served at addr, for the receipts of held calls; nil when the
// address is not known in advance (no -http, or port 0).
func screenURL(addr string) func(id string) string {
	if addr == "" || strings.HasSuffix(addr, ":0") {
		return nil
	}
	return func(id string) string { return "http://" + addr + "/ui/changes/" + url.PathEscape(id) }
}

// serveHTTP serves server at http://addr/mcp, mounted by mount, until ctx
// ends, then drains.
func serveHTTP(ctx context.Context, addr string, server *mcp.Server, opts *mcpserver.HTTPOptions, stderr io.Writer, mount func(*http.ServeMux, http.Handler)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mcpHandler := mcpserver.HTTPHandler(server, opts)
	mux := http.NewServeMux()
	mount(mux, mcpHandler)
	srv := newHTTPServer(mux)
	mode := "sessions"
	if opts.Stateless {
		mode = "stateless"
	}
	fmt.Fprintf(stderr, "supplychain: serving MCP at http://%s/mcp (%s)\n", ln.Addr(), mode)
	fmt.Fprintf(stderr, "supplychain: pages for people at http://%s/ui/ (sign in as editor, password editor-demo-token)\n", ln.Addr())
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		// Both at once: the server stops listening and waits for its
		// connections; the MCP handler lets the calls in flight end, then
		// cancels the rest and closes the sessions, which frees the
		// connections the server waits for.
		drain, cancel := context.WithTimeout(context.Background(), drainTime)
		defer cancel()
		go func() { _ = srv.Shutdown(drain) }()
		err := mcpHandler.Shutdown(drain)
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(stderr, "supplychain: calls still running after %v were cancelled\n", drainTime)
		}
		// The connections left (an idle keep-alive, a stream the client
		// holds open) get a moment, then are closed.
		last, cancelLast := context.WithTimeout(context.Background(), time.Second)
		defer cancelLast()
		if err := srv.Shutdown(last); err != nil {
			_ = srv.Close()
		}
		done <- nil
	}()
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return <-done
	}
	return err
}

// newHTTPServer sets the limits of the example's HTTP server. The request
// body is bounded by the MCP handler (the SDK's 4 MiB), each write of a
// response by its WriteTimeout (30 s): the server's own WriteTimeout would
// bound a whole response, and cut a tool call's stream or the session's
// GET stream however healthy.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second, // slow headers (slowloris)
		ReadTimeout:       30 * time.Second, // the whole request, body included; no limit once it is read
		IdleTimeout:       2 * time.Minute,  // a keep-alive connection between requests
		MaxHeaderBytes:    64 << 10,
	}
}

// replayLog runs "replay -db DB": it replays the committed records of the
// database's run log, in the order they were committed, on a fresh model
// in memory, as a replica or a new release checks the log; it prints one
// line per entry ("SEQ ORIGIN ACTION: same", or where the replay departs
// and why) and then whether the fresh model ends equal to the database's.
// The log and the model are read in one snapshot (sqlstore.Store.View),
// so a database still being written replays exactly. Any departure makes
// it fail.
func replayLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("supplychain replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := dbFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	model, err := OpenModel(ctx, *dsn, modelJSON, "replay")
	if err != nil {
		return err
	}
	defer model.Close()
	var (
		recs []sqlstore.Record
		want string
	)
	err = model.Store().View(ctx, func(ctx context.Context) error {
		var err error
		if recs, err = model.Store().Read(ctx, sqlstore.Filter{}); err != nil {
			return err
		}
		tx, _ := sqlstore.Tx(ctx)
		want, err = model.On(tx).Dump(ctx)
		return err
	})
	if err != nil {
		return err
	}
	fresh, reg, err := setupDB(ctx, memoryDSN, "replay", nil)
	if err != nil {
		return err
	}
	defer fresh.Close()
	departed := 0
	for _, r := range recs {
		verdict := "same"
		if _, err := reg.Replay(ctx, r.Record); err != nil {
			var d *actions.Divergence
			if !errors.As(err, &d) {
				return fmt.Errorf("replay %d: %w", r.Seq, err)
			}
			verdict = "departs at " + d.Path + ": " + d.Reason()
			departed++
		}
		fmt.Fprintf(stdout, "%d %s %s: %s\n", r.Seq, r.Origin, r.Entry.Action, verdict)
	}
	got, err := fresh.Dump(ctx)
	if err != nil {
		return err
	}
	if got != want {
		fmt.Fprintf(stdout, "model: differs\nthe database:\n%sthe replay:\n%s", want, got)
		return errors.New("replay: the replayed model differs from the database's")
	}
	fmt.Fprintln(stdout, "model: same")
	if departed > 0 {
		return fmt.Errorf("replay: %d entries depart", departed)
	}
	return nil
}
