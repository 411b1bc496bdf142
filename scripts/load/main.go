// Command load drives the actions library under load and prints one
// table row per cell. See docs/performance.md ("The load benchmark") and
// scripts/load.sh, which starts a PostgreSQL cluster with fsync on for
// it. Two kinds of target:
//
// -target counter (the default) drives the SQL store's units in process,
// on many clients and replicas: calls/s, latency p50, p99 and max,
// errors, lost updates and log-order faults. Each call is t/add, one
// row's counter incremented in the unit's transaction (UPDATE ...
// RETURNING n), its entry appended by the store. Workload distinct: each
// client its own row; hot: every client on two rows. After each cell it
// checks, on the database:
//
//   - lost updates: the calls answered done minus the sum of the
//     counters (a lost increment, or one kept for a call answered
//     refused, shows as non-zero);
//   - log: the kept records of t/add against the calls done;
//   - order faults: read in Seq order, each row's answers must be 1, 2,
//     3, ...: a replay in log order gives every call the counter it saw.
//
// -target host,bare drives servers in processes of their own over
// streamable HTTP with the official SDK's client (host.go): host is the
// example host (examples/supplychain "serve -http -stateless"), one
// process per replica on one database; bare is scripts/baresdk, a server
// on the bare SDK whose one tool does carbon/record_emissions' SQL with
// no check, gate or log. Each row gives calls/s, latency, errors, lost
// updates, the servers' CPU-seconds per 1,000 calls (from /proc), and
// for the host the replay of the whole log on a fresh model.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	target := flag.String("target", "counter", "what to drive: counter (the store in process), or host and bare (servers over streamable HTTP)")
	engines := flag.String("engines", "", "engines: memory (SQLite in memory, counter only), file (SQLite WAL file), postgresql ($ACTIONS_TEST_POSTGRES); default memory,file,postgresql for counter, file,postgresql for host, file for bare")
	clients := flag.String("clients", "1,4,16", "clients per cell")
	replicas := flag.String("replicas", "1,2", "replicas per cell (counter: stores on their own pools, one database; host: server processes on one database; memory and bare run 1)")
	works := flag.String("work", "", "workloads: counter distinct (a row per client), hot (two rows for all); host emissions (record_emissions on two actors from every client), mix (the host's actions: writes, reads, creates, batches); default distinct,hot for counter and emissions for host and bare")
	modes := flag.String("mode", "", "counter's store setups, per engine: SQLite plain (one pool, no queue) or queue (OpenSQLite); PostgreSQL commit (OrderCommit, serializable), locks (OrderLocks, read committed) or serial (Options.Serial); default queue,commit,locks")
	dur := flag.Duration("dur", 2*time.Second, "length of each cell")
	rounds := flag.Int("rounds", 1, "host and bare: run every cell this many times, the rounds one after the other (a ratio taken within a round shares its load)")
	root := flag.String("root", ".", "the repository's root, where the servers are built from")
	cpuprofile := flag.String("cpuprofile", "", "host: a folder where each host process writes its CPU profile (serve -cpuprofile), one file per cell and replica")
	flag.Parse()
	if *target == "counter" {
		counterTable(def(*engines, "memory,file,postgresql"), *clients, *replicas, def(*works, "distinct,hot"), *modes, *dur)
		return
	}
	servers := split(*target)
	for _, s := range servers {
		if s != "host" && s != "bare" {
			fail(fmt.Errorf("unknown target %q", s))
		}
	}
	engs := split(def(*engines, "file,postgresql"))
	if !slices.Contains(servers, "host") {
		engs = []string{"file"}
	}
	httpTable(httpConfig{
		root: *root, servers: servers, engines: engs, clients: ints(*clients), replicas: ints(*replicas),
		works: split(def(*works, "emissions")), dur: *dur, profile: *cpuprofile, rounds: *rounds,
	})
}

func def(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "load:", err)
	os.Exit(1)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(s string) []int {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}
