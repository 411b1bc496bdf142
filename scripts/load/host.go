package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

// httpConfig is what the host and bare targets run: every combination of
// work, engine, replicas, clients and server.
type httpConfig struct {
	root     string
	servers  []string
	engines  []string
	clients  []int
	replicas []int
	works    []string
	dur      time.Duration
	profile  string // a folder for the servers' CPU profiles; "" for none
	rounds   int
}

// hot are the actors every client's record_emissions writes, in period
// hotPeriod (which the model does not seed), so that the writes of all
// clients and replicas conflict; work spread writes them in the periods
// of spread too (none seeded either).
var (
	hot    = []string{"lyon_plant", "north_warehouse", "marseille_depot", "le_havre_depot", "bordeaux_supplier"}
	spread = []string{"2025", "2026", "2027", "2028"}
)

const hotPeriod = "2025"

// batchPeriod is the period the batches of work mix write and sum: their
// writes are not in the lost-update check (the replay checks them).
const batchPeriod = "2030"

// httpTable builds the servers, runs the cells and prints the table.
func httpTable(cfg httpConfig) {
	bin, err := os.MkdirTemp("", "actions-load-bin")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(bin)
	bins := map[string]string{}
	for _, s := range cfg.servers {
		bins[s] = filepath.Join(bin, s)
		// The host is built in its own folder, so that the module it
		// belongs to (the root's, or a nested examples module) decides.
		dir, pkg := filepath.Join(cfg.root, "examples", "supplychain"), "."
		if s == "bare" {
			dir, pkg = cfg.root, "./scripts/baresdk"
		}
		build := exec.Command("go", "build", "-o", bins[s], pkg)
		build.Dir = dir
		if out, err := build.CombinedOutput(); err != nil {
			fail(fmt.Errorf("build %s: %v\n%s", s, err, out))
		}
	}
	fmt.Println("| server | engine | work | replicas | clients | calls | calls/s | p50 | p99 | errors | lost | CPU s per 1,000 calls: servers | clients | PostgreSQL | replay of the log |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, work := range cfg.works {
		for _, engine := range cfg.engines {
			for _, r := range cfg.replicas {
				for range max(cfg.rounds, 1) {
					for _, c := range cfg.clients {
						for _, s := range cfg.servers {
							if s == "bare" && (engine != "file" || r != 1 || work != "emissions") {
								continue
							}
							row, err := httpCell(cfg, s, bins[s], engine, work, r, c)
							if err != nil {
								fail(fmt.Errorf("%s %s %s r=%d c=%d: %w", s, engine, work, r, c, err))
							}
							fmt.Println(row)
						}
					}
				}
			}
		}
	}
}

// httpCell runs one cell: a fresh database, the servers, the clients for
// cfg.dur, then the checks.
func httpCell(cfg httpConfig, server, bin, engine, work string, nrep, nclients int) (string, error) {
	dsn, drop, err := freshDatabase(engine)
	if err != nil {
		return "", err
	}
	defer drop()
	procs := make([]*serverProc, nrep)
	for i := range procs {
		var args []string
		if server == "host" {
			args = []string{"serve", "-http", "127.0.0.1:0", "-stateless", "-db", dsn, "-replica", "r" + strconv.Itoa(i)}
		} else {
			args = []string{"-http", "127.0.0.1:0", "-stateless", "-db", dsn, "-model", filepath.Join(cfg.root, "examples", "supplychain", "model.json")}
		}
		if cfg.profile != "" {
			name := fmt.Sprintf("%s-%s-%s-r%dc%d-%d.pprof", server, engine, work, nrep, nclients, i)
			args = append(args, "-cpuprofile", filepath.Join(cfg.profile, name))
		}
		// The replicas start one after the other: the first seeds the
		// database.
		if procs[i], err = startServer(bin, args); err != nil {
			return "", err
		}
		defer procs[i].stop()
	}
	ctx := context.Background()
	sessions := make([]*mcp.ClientSession, nclients)
	for c := range sessions {
		if sessions[c], err = connect(ctx, procs[c%nrep].url); err != nil {
			return "", err
		}
		defer sessions[c].Close()
	}
	cpu0, err := cpuOf(pids(procs))
	if err != nil {
		return "", err
	}
	self0, db0 := selfCPU(), databaseCPU(engine)
	res := driveHTTP(ctx, sessions, work, cfg.dur)
	cpu1, err := cpuOf(pids(procs))
	if err != nil {
		return "", err
	}
	self1, db1 := selfCPU(), databaseCPU(engine)
	for _, p := range procs {
		p.stop()
	}
	calls := len(res.lat)
	final, err := finalFigures(engine, dsn)
	if err != nil {
		return "", err
	}
	lost, broken := lostUpdates(res.writes, final)
	if broken != "" {
		fmt.Fprintf(os.Stderr, "load: %s %s %s r=%d c=%d: %s\n", server, engine, work, nrep, nclients, broken)
	}
	replay := "none (no log)"
	if server == "host" {
		if replay, err = replayLog(bin, dsn, calls); err != nil {
			return "", err
		}
	}
	slices.Sort(res.lat)
	pct := func(p float64) time.Duration {
		if calls == 0 {
			return 0
		}
		return res.lat[min(calls-1, int(p*float64(calls)))]
	}
	perK := func(from, to float64) string {
		if calls == 0 || from < 0 || to < 0 {
			return "-"
		}
		return strconv.FormatFloat((to-from)/float64(calls)*1000, 'f', 2, 64)
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %d | %.0f | %s | %s | %d | %d | %s | %s | %s | %s |",
		server, engine, work, nrep, nclients, calls, float64(calls)/res.elapsed.Seconds(),
		ms(pct(0.50)), ms(pct(0.99)), res.errors, lost, perK(cpu0, cpu1), perK(self0, self1), perK(db0, db1), replay), nil
}

// freshDatabase makes an empty database of engine: an SQLite file in a
// temporary folder, or a database on the PostgreSQL cluster of
// ACTIONS_TEST_POSTGRES. It returns the servers' -db value and how to
// drop it.
func freshDatabase(engine string) (dsn string, drop func(), err error) {
	switch engine {
	case "file":
		dir, err := os.MkdirTemp("", "actions-load")
		if err != nil {
			return "", nil, err
		}
		return filepath.Join(dir, "load.db"), func() { _ = os.RemoveAll(dir) }, nil
	case "postgresql":
		base := os.Getenv("ACTIONS_TEST_POSTGRES")
		if base == "" {
			return "", nil, errors.New("ACTIONS_TEST_POSTGRES is not set (eval \"$(scripts/pg-cluster.sh start)\")")
		}
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return "", nil, err
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := "actions_load_" + hex.EncodeToString(b[:])
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			_ = admin.Close()
			return "", nil, err
		}
		u, err := url.Parse(base)
		if err != nil {
			return "", nil, err
		}
		u.Path = "/" + name
		return u.String(), func() {
			_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			_ = admin.Close()
		}, nil
	}
	return "", nil, fmt.Errorf("engine %q: the servers run on file or postgresql", engine)
}

// serverProc is one server process.
type serverProc struct {
	cmd  *exec.Cmd
	url  string
	once sync.Once
	done chan struct{}
}

// startServer starts bin with args and waits for the line on its
// standard error that says where it serves ("serving MCP at URL"); the
// rest of its standard error (the host writes each record there) is
// read and dropped.
func startServer(bin string, args []string) (*serverProc, error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProc{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	var head strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		sent := false
		for sc.Scan() {
			if sent {
				continue
			}
			if _, rest, ok := strings.Cut(sc.Text(), "serving MCP at "); ok {
				u, _, _ := strings.Cut(rest, " ")
				urls <- u
				sent = true
			} else if head.Len() < 4096 {
				head.WriteString(sc.Text() + "\n")
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case p.url = <-urls:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited: %s", filepath.Base(bin), head.String())
	case <-time.After(time.Minute):
		p.stop()
		return nil, fmt.Errorf("%s did not start", filepath.Base(bin))
	}
}

// stop interrupts the server and waits for it to end (killing it after
// 30 s).
func (p *serverProc) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func pids(procs []*serverProc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.cmd.Process.Pid
	}
	return out
}

// cpuOf is the CPU time, in seconds, the processes have used so far:
// utime and stime of /proc/PID/stat, in clock ticks of 1/100 s (USER_HZ
// on Linux).
func cpuOf(pids []int) (float64, error) {
	var sum float64
	for _, pid := range pids {
		f, err := procStat(pid)
		if err != nil {
			return 0, err
		}
		for _, s := range f[11:13] {
			n, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return 0, err
			}
			sum += n / 100
		}
	}
	return sum, nil
}

// procStat is the fields of /proc/PID/stat after the command's name
// (which is in parentheses and may hold spaces): f[0] is the state
// (field 3), f[1] the parent's pid, f[11] and f[12] utime and stime.
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return nil, errors.New("short /proc stat")
	}
	return f, nil
}

// selfCPU is the CPU time this process (the clients) has used so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// databaseCPU is the CPU time the PostgreSQL cluster of scripts/pg-cluster.sh
// (its postmaster, named in $ACTIONS_PG_DIR/data/postmaster.pid, and the
// processes it started) has used so far; -1 for another engine or when
// the cluster is not known. A backend that ends within a cell takes its
// time with it: the servers' pools keep theirs open.
func databaseCPU(engine string) float64 {
	dir := os.Getenv("ACTIONS_PG_DIR")
	if engine != "postgresql" || dir == "" {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return -1
	}
	first, _, _ := strings.Cut(string(b), "\n")
	master := strings.TrimSpace(first)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(pid); err == nil && (e.Name() == master || f[1] == master) {
			pids = append(pids, pid)
		}
	}
	sum, err := cpuOf(pids)
	if err != nil {
		return -1
	}
	return sum
}

// bearer adds the example's editor token to each request.
type bearer struct{ base http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer editor-demo-token")
	return b.base.RoundTrip(r)
}

// connect opens one client's session, on a connection pool of its own.
func connect(ctx context.Context, endpoint string) (*mcp.ClientSession, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	client := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "v0"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{tr}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// write is one record_emissions answered done: what it set and the
// figure it replaced.
type write struct {
	Actor    string   `json:"actor"`
	Period   string   `json:"period"`
	CO2t     float64  `json:"co2_t"`
	Previous *float64 `json:"previous_co2_t"`
}

type httpResult struct {
	lat     []time.Duration // of every call answered, done or refused
	errors  int
	writes  []write
	elapsed time.Duration
}

// driveHTTP runs every session as one client for dur, calling what work
// says, and gathers the answers.
func driveHTTP(ctx context.Context, sessions []*mcp.ClientSession, work string, dur time.Duration) httpResult {
	per := make([]httpResult, len(sessions))
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for c, cs := range sessions {
		wg.Go(func() {
			r := &per[c]
			for i := 0; time.Now().Before(deadline); i++ {
				params, checked := callOf(work, c, i)
				t0 := time.Now()
				res, err := cs.CallTool(ctx, params)
				d := time.Since(t0)
				if err == nil && res.IsError {
					text := ""
					if len(res.Content) > 0 {
						if t, ok := res.Content[0].(*mcp.TextContent); ok {
							text = t.Text
						}
					}
					err = fmt.Errorf("%s: tool error: %s", params.Name, text)
				}
				if err != nil {
					r.errors++
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					if res == nil {
						continue
					}
				}
				r.lat = append(r.lat, d)
				if checked && err == nil {
					b, _ := json.Marshal(res.StructuredContent)
					var w write
					if json.Unmarshal(b, &w) == nil {
						r.writes = append(r.writes, w)
					}
				}
			}
		})
	}
	wg.Wait()
	var all httpResult
	all.elapsed = time.Since(start)
	for _, r := range per {
		all.lat = append(all.lat, r.lat...)
		all.errors += r.errors
		all.writes = append(all.writes, r.writes...)
	}
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "load: first error: %v\n", firstErr)
	}
	return all
}

// callOf is client c's call number i; checked is true for a
// record_emissions of a hot actor, whose answer the lost-update check
// reads. Work emissions: every call one, all in one period. Work spread:
// the same over four periods, clients 2k and 2k+1 in period k mod 4 (the
// host's writers of one period run one at a time). Work mix, in ten calls: five of those of emissions, two get_actor, one total_emissions, one create_actor of a new
// id, and one batch that records an emission of an actor (the same for
// every client's batches, by its French name) in batchPeriod and then
// sums that period.
func callOf(work string, c, i int) (params *mcp.CallToolParams, checked bool) {
	// A figure no other call of the cell writes: the check follows them.
	figure := float64(c*1_000_000 + i + 1)
	emission := &mcp.CallToolParams{Name: "carbon-record_emissions",
		Arguments: map[string]any{"actor": hot[(c+i)%len(hot)], "period": hotPeriod, "co2_t": figure}}
	switch work {
	case "emissions":
		return emission, true
	case "spread":
		// The period is the client's: four clients per period, two on
		// each of two replicas. (A period that changed with the call's
		// number gathered the clients in one period: a client leaves a
		// free period after a few quick calls and stays long in the one
		// whose lock has a queue, so the queue grows.)
		emission.Arguments.(map[string]any)["period"] = spread[(c/2)%len(spread)]
		return emission, true
	}
	switch i % 10 {
	case 5, 6:
		return &mcp.CallToolParams{Name: "supply-get_actor", Arguments: map[string]any{"actor": hot[i%len(hot)]}}, false
	case 7:
		return &mcp.CallToolParams{Name: "carbon-total_emissions", Arguments: map[string]any{"period": hotPeriod}}, false
	case 8:
		return &mcp.CallToolParams{Name: "supply-create_actor",
			Arguments: map[string]any{"id": fmt.Sprintf("load_%d_%d", c, i), "display_name": fmt.Sprintf("Load site %d %d", c, i)}}, false
	case 9:
		return &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
			map[string]any{"call": "carbon/record_emissions", "with": map[string]any{"actor": "Fournisseur de Bordeaux", "period": batchPeriod, "co2_t": figure}},
			map[string]any{"call": "carbon/total_emissions", "with": map[string]any{"period": batchPeriod}},
		}}}, false
	}
	return emission, true
}

// finalFigures reads the figures of the periods the load writes from the
// database once the servers have stopped, by actor id and period.
func finalFigures(engine, dsn string) (map[string]float64, error) {
	driver := "pgx"
	if engine == "file" {
		driver, dsn = "sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	q := "SELECT a.id, e.period, e.co2_t FROM sc_emissions e JOIN sc_actors a ON a.actor_key = e.actor_key WHERE e.period >= '" + spread[0] + "'"
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var id, period string
		var v float64
		if err := rows.Scan(&id, &period, &v); err != nil {
			return nil, err
		}
		out[id+" "+period] = v
	}
	return out, rows.Err()
}

// lostUpdates checks the writes answered done, row by row, in no order.
// Each write sets a figure no other call writes, and answers the figure
// it replaced: with no update lost, the writes of a row form one chain
// from the first (which replaced nothing: the periods start empty) to
// the figure the database ends with. A write whose figure no other
// write replaced, and which is not the row's final figure, was
// overwritten unseen: a lost update; so is a final figure no write set.
// lost counts them; broken says where, for the log.
func lostUpdates(writes []write, final map[string]float64) (lost int, broken string) {
	byRow := map[string][]write{}
	for _, w := range writes {
		byRow[w.Actor+" "+w.Period] = append(byRow[w.Actor+" "+w.Period], w)
	}
	var notes []string
	for row, ws := range byRow {
		replaced := map[float64]bool{}
		for _, w := range ws {
			if w.Previous != nil {
				replaced[*w.Previous] = true
			}
		}
		f, ok := final[row]
		off, set := 0, false
		for _, w := range ws {
			switch {
			case ok && w.CO2t == f:
				set = true
			case !replaced[w.CO2t]:
				off++
			}
		}
		if ok && !set {
			off++
		}
		if off > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d writes, %d lost (the database ends at %v, found %t)", row, len(ws), off, f, ok))
		}
		lost += off
	}
	return lost, strings.Join(notes, "; ")
}

// replayLog runs the host's "replay -db" on the database: the whole log
// replayed in order on a fresh model, then the model compared. It says
// how many entries came back the same, of how many records and calls.
func replayLog(bin, dsn string, calls int) (string, error) {
	cmd := exec.Command(bin, "replay", "-db", dsn)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	same, departs, model := 0, 0, "model ?"
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "model: "):
			model = line
		case strings.HasSuffix(line, ": same"):
			same++
		case strings.Contains(line, ": departs at "):
			if departs == 0 {
				fmt.Fprintf(os.Stderr, "load: replay: %s\n", line)
			}
			departs++
		}
	}
	if err != nil && departs == 0 && model == "model ?" {
		return "", fmt.Errorf("replay: %v: %s", err, stderr.String())
	}
	return fmt.Sprintf("%d of %d same (%d calls), %s", same, same+departs, calls, model), nil
}
