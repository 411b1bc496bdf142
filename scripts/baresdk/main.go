// Command baresdk is the baseline of the load benchmark
// (docs/performance.md, "The example host against the bare SDK"): what a
// team would write without the actions library, on the official MCP Go
// SDK alone. It serves one typed tool, carbon-record_emissions, over
// streamable HTTP, and does the SQL the example host's
// carbon/record_emissions does on the same tables (the actor's ref
// resolved by id or name, its row read, the previous figure read, the
// row updated or inserted), in one transaction on an SQLite file: no
// parameter check beyond the SDK's own, no gate, no run log, no locks.
//
// Usage:
//
//	baresdk -db FILE -model MODEL.json [-http ADDR] [-stateless] [-cpuprofile FILE]
//
// It creates the example's tables in FILE when they are missing and seeds
// the actors and emissions of MODEL.json (the example's model.json) when
// the table of actors is empty, then prints "serving MCP at
// http://ADDR/mcp" on standard error and serves until interrupted.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

func main() {
	addr := flag.String("http", "127.0.0.1:0", "serve streamable HTTP on this address")
	path := flag.String("db", "", "the SQLite file")
	model := flag.String("model", "", "the model file to seed an empty database from (examples/supplychain/model.json)")
	stateless := flag.Bool("stateless", false, "no sessions, each request served on its own")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile (runtime/pprof) of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "baresdk:", err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *path, *model, *stateless); err != nil {
		fmt.Fprintln(os.Stderr, "baresdk:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, path, model string, stateless bool) error {
	if path == "" {
		return errors.New("-db is required")
	}
	// The pragmas and the one writer connection of the example host's
	// SQLite file (sqlstore.OpenSQLite): WAL, synchronous FULL (the
	// driver's default), writes one at a time.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := seed(ctx, db, model); err != nil {
		return err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "baresdk", Version: "v0.1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "carbon-record_emissions",
		Description: "Sets an actor's CO2 emissions for a period, replacing any earlier figure.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in emissionsParams) (*mcp.CallToolResult, emissionsRecord, error) {
		out, err := recordEmissions(ctx, db, in)
		return nil, out, err
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux}
	fmt.Fprintf(os.Stderr, "baresdk: serving MCP at http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type emissionsParams struct {
	Actor  string  `json:"actor" jsonschema:"the actor: its id, or its exact display name in any language"`
	Period string  `json:"period,omitempty" jsonschema:"the reporting year"`
	CO2t   float64 `json:"co2_t" jsonschema:"tonnes of CO2 emitted in the period"`
}

type emissionsRecord struct {
	Actor    string   `json:"actor"`
	Period   string   `json:"period"`
	CO2t     float64  `json:"co2_t"`
	Previous *float64 `json:"previous_co2_t,omitempty"`
}

// recordEmissions is carbon/record_emissions' SQL in one transaction:
// the ref (an id wins, else exactly one name), the actor's row, the
// previous figure, then the update or the insert.
func recordEmissions(ctx context.Context, db *sql.DB, in emissionsParams) (emissionsRecord, error) {
	if in.Period == "" {
		in.Period = "2024"
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return emissionsRecord{}, err
	}
	defer tx.Rollback()
	key, err := resolve(ctx, tx, in.Actor)
	if err != nil {
		return emissionsRecord{}, err
	}
	var id, typ, names string
	if err := tx.QueryRowContext(ctx, "SELECT id, type, display_name FROM sc_actors WHERE actor_key = ?", key).Scan(&id, &typ, &names); err != nil {
		return emissionsRecord{}, err
	}
	var display map[string]string
	if err := json.Unmarshal([]byte(names), &display); err != nil {
		return emissionsRecord{}, err
	}
	out := emissionsRecord{Actor: id, Period: in.Period, CO2t: in.CO2t}
	var previous float64
	switch err := tx.QueryRowContext(ctx, "SELECT co2_t FROM sc_emissions WHERE actor_key = ? AND period = ?", key, in.Period).Scan(&previous); {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, "INSERT INTO sc_emissions (actor_key, period, co2_t) VALUES (?, ?, ?)", key, in.Period, in.CO2t)
		if err != nil {
			return emissionsRecord{}, err
		}
	case err != nil:
		return emissionsRecord{}, err
	default:
		if _, err := tx.ExecContext(ctx, "UPDATE sc_emissions SET co2_t = ? WHERE actor_key = ? AND period = ?", in.CO2t, key, in.Period); err != nil {
			return emissionsRecord{}, err
		}
		out.Previous = &previous
	}
	return out, tx.Commit()
}

// resolve finds the actor's key: the actor whose id is ref, else the one
// actor one of whose names is ref.
func resolve(ctx context.Context, tx *sql.Tx, ref string) (string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT 0, actor_key FROM sc_actors WHERE id = ? UNION ALL SELECT 1, actor_key FROM sc_actor_names WHERE name = ?", ref, ref)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var key string
	var byName []string
	for rows.Next() {
		var isName int
		var k string
		if err := rows.Scan(&isName, &k); err != nil {
			return "", err
		}
		if isName == 0 {
			key = k
		} else {
			byName = append(byName, k)
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	sort.Strings(byName)
	switch {
	case key != "":
		return key, nil
	case len(byName) == 1:
		return byName[0], nil
	}
	return "", errors.New("no single actor has this id or name")
}

// seed creates the example's tables and, when there is no actor, fills
// them from the model file.
func seed(ctx context.Context, db *sql.DB, model string) error {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS sc_actors (actor_key TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, display_name TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS sc_emissions (actor_key TEXT NOT NULL REFERENCES sc_actors (actor_key), period TEXT NOT NULL, co2_t DOUBLE PRECISION NOT NULL, PRIMARY KEY (actor_key, period))`,
		`CREATE TABLE IF NOT EXISTS sc_actor_names (name TEXT NOT NULL, actor_key TEXT NOT NULL, PRIMARY KEY (name, actor_key))`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sc_actors").Scan(&n); err != nil || n > 0 {
		return err
	}
	if model == "" {
		return errors.New("an empty database needs -model")
	}
	text, err := os.ReadFile(model)
	if err != nil {
		return err
	}
	var file struct {
		Actors []struct {
			Key, ID, Type string
			DisplayName   map[string]string `json:"display_name"`
		}
		Emissions []struct {
			Actor, Period string
			CO2t          float64 `json:"co2_t"`
		}
	}
	if err := json.Unmarshal(text, &file); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, a := range file.Actors {
		names, _ := json.Marshal(a.DisplayName)
		if _, err := tx.ExecContext(ctx, "INSERT INTO sc_actors (actor_key, id, type, display_name) VALUES (?, ?, ?, ?)", a.Key, a.ID, a.Type, string(names)); err != nil {
			return err
		}
		for _, name := range a.DisplayName {
			if _, err := tx.ExecContext(ctx, "INSERT INTO sc_actor_names (name, actor_key) VALUES (?, ?) ON CONFLICT DO NOTHING", name, a.Key); err != nil {
				return err
			}
		}
	}
	for _, e := range file.Emissions {
		if _, err := tx.ExecContext(ctx, "INSERT INTO sc_emissions (actor_key, period, co2_t) VALUES (?, ?, ?)", e.Actor, e.Period, e.CO2t); err != nil {
			return err
		}
	}
	return tx.Commit()
}
