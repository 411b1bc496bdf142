// Command benchratio reads `go test -bench` output on stdin and checks the
// performance targets of docs/performance.md: one line per target,
// "target NAME: RATIO (limit L) ok|over", and exit status 1 when a target
// is over. Each figure is the fastest of the runs (-count): on a shared
// machine, interference only ever slows a run down, so the minimum is the
// steadiest estimate of a benchmark's own cost; a target marked paired is
// judged on the median of the sample-by-sample ratios instead.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// runs maps "name@procs" to unit to the values seen.
type runs map[string]map[string][]float64

func parse(sc *bufio.Scanner) runs {
	r := runs{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name, procs := f[0], "1"
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name, procs = name[:i], name[i+1:]
			}
		}
		key := name + "@" + procs
		if r[key] == nil {
			r[key] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				r[key][f[i+1]] = append(r[key][f[i+1]], v)
			}
		}
	}
	return r
}

// best returns the smallest of name's unit at the given procs ("" for
// any).
func (r runs) best(name, procs, unit string) (float64, bool) {
	var vs []float64
	for key, units := range r {
		n, p, _ := strings.Cut(key, "@")
		if n == name && (procs == "" || p == procs) {
			vs = append(vs, units[unit]...)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	sort.Float64s(vs)
	return vs[0], true
}

type target struct {
	name       string
	num, den   string // benchmark names
	numP, denP string // procs, "" for the one present
	unit       string
	limit      float64
	atLeast    bool // the ratio must be at least limit
	// paired judges the target on the paired median rather than the
	// fastest samples: a limit on the typical call, not the luckiest.
	paired bool
	// by, when set, divides the ratio by its own (num/den of by): a
	// ratio relative to a reference measured in the same run.
	by *target
}

// samples returns name's values of unit at the given procs, in the order
// they were printed.
func (r runs) samples(name, procs, unit string) []float64 {
	var vs []float64
	for key, units := range r {
		n, p, _ := strings.Cut(key, "@")
		if n == name && (procs == "" || p == procs) {
			vs = append(vs, units[unit]...)
		}
	}
	return vs
}

// paired returns t's ratio taken sample by sample: the i-th sample of num
// over the i-th of den (each group prints its benchmarks in turn, so the
// two were taken a moment apart, under about the same load), as the
// median and quartiles of those ratios.
func (r runs) paired(t *target) (q1, med, q3 float64, ok bool) {
	ratios := r.pairedRatios(t)
	if len(ratios) == 0 {
		return 0, 0, 0, false
	}
	sort.Float64s(ratios)
	at := func(f float64) float64 { // linear between the closest ranks
		x := f * float64(len(ratios)-1)
		i := int(x)
		if i+1 >= len(ratios) {
			return ratios[i]
		}
		return ratios[i] + (x-float64(i))*(ratios[i+1]-ratios[i])
	}
	return at(0.25), at(0.5), at(0.75), true
}

func (r runs) pairedRatios(t *target) []float64 {
	ns := r.samples(t.num, t.numP, t.unit)
	ds := r.samples(t.den, t.denP, t.unit)
	var bs []float64
	if t.by != nil {
		bs = r.pairedRatios(t.by)
	}
	var out []float64
	for i := 0; i < len(ns) && i < len(ds); i++ {
		if ds[i] == 0 {
			continue
		}
		q := ns[i] / ds[i]
		if t.by != nil {
			if i >= len(bs) || bs[i] == 0 {
				break
			}
			q /= bs[i]
		}
		out = append(out, q)
	}
	return out
}

// ratio returns t's ratio of the fastest samples, and whether both were
// found.
func (r runs) ratio(t *target) (float64, bool) {
	n, ok1 := r.best(t.num, t.numP, t.unit)
	d, ok2 := r.best(t.den, t.denP, t.unit)
	if !ok1 || !ok2 || d == 0 {
		return 0, false
	}
	q := n / d
	if t.by != nil {
		b, ok := r.ratio(t.by)
		if !ok || b == 0 {
			return 0, false
		}
		q /= b
	}
	return q, true
}

func main() {
	r := parse(bufio.NewScanner(os.Stdin))
	targets := []target{
		{name: "run/validate (paired median)", num: "BenchmarkRun", den: "BenchmarkValidateParameters/jsonschema-v6/validate", unit: "ns/op", limit: 1.5, paired: true},
		{name: "run/google-defaults+validate", num: "BenchmarkRun", den: "BenchmarkValidateParameters/google-jsonschema-go/map", unit: "ns/op", limit: 1.0},
		{name: "run/check (context, no limit)", num: "BenchmarkRun", den: "BenchmarkValidateParameters/actions/map", unit: "ns/op", limit: 0, atLeast: true},
		{name: "check, entry texts and body / validate: what run must do, no call path (context, no limit)", num: "BenchmarkValidateParameters/actions/check+texts+body", den: "BenchmarkValidateParameters/jsonschema-v6/validate", unit: "ns/op", limit: 0, atLeast: true},
		{name: "run / check, entry texts and body: the call path's own share (context, no limit)", num: "BenchmarkRun", den: "BenchmarkValidateParameters/actions/check+texts+body", unit: "ns/op", limit: 0, atLeast: true},
		{name: "check/validate", num: "BenchmarkValidateParameters/actions/map", den: "BenchmarkValidateParameters/jsonschema-v6/validate", unit: "ns/op", limit: 1.5},
		{name: "canonical/marshal small", num: "BenchmarkCanonicalJSON/small", den: "BenchmarkMarshal/small", unit: "ns/op", limit: 1.0},
		{name: "canonical/marshal 1k", num: "BenchmarkCanonicalJSON/1k", den: "BenchmarkMarshal/1k", unit: "ns/op", limit: 1.0},
		{name: "canonical/marshal 100k", num: "BenchmarkCanonicalJSON/100k", den: "BenchmarkMarshal/100k", unit: "ns/op", limit: 1.0},
		{name: "canonical/marshal allocs small", num: "BenchmarkCanonicalJSON/small", den: "BenchmarkMarshal/small", unit: "allocs/op", limit: 1.0},
		{name: "canonical/marshal allocs 1k", num: "BenchmarkCanonicalJSON/1k", den: "BenchmarkMarshal/1k", unit: "allocs/op", limit: 1.0},
		{name: "canonical/marshal allocs 100k", num: "BenchmarkCanonicalJSON/100k", den: "BenchmarkMarshal/100k", unit: "allocs/op", limit: 1.0},
		{name: "batch per call 10000/10", num: "BenchmarkRunBatch/calls=10000", den: "BenchmarkRunBatch/calls=10", unit: "ns/call", limit: 1.2},
		{name: "run parallel scaling cpu2/cpu1, relative to the engine's", num: "BenchmarkRunParallel", numP: "1", den: "BenchmarkRunParallel", denP: "2", unit: "ns/op", limit: 0.9, atLeast: true,
			by: &target{num: "BenchmarkValidateParallel", numP: "1", den: "BenchmarkValidateParallel", denP: "2", unit: "ns/op"}},
		{name: "run parallel throughput cpu2/cpu1 (context, no limit)", num: "BenchmarkRunParallel", numP: "1", den: "BenchmarkRunParallel", denP: "2", unit: "ns/op", limit: 0, atLeast: true},
		{name: "engine parallel throughput cpu2/cpu1 (context, no limit)", num: "BenchmarkValidateParallel", numP: "1", den: "BenchmarkValidateParallel", denP: "2", unit: "ns/op", limit: 0, atLeast: true},
		{name: "machine compute cpu2/cpu1 (context, no limit)", num: "BenchmarkMachineParallel/compute", numP: "1", den: "BenchmarkMachineParallel/compute", denP: "2", unit: "ns/op", limit: 0, atLeast: true},
		{name: "machine allocate cpu2/cpu1 (context, no limit)", num: "BenchmarkMachineParallel/allocate", numP: "1", den: "BenchmarkMachineParallel/allocate", denP: "2", unit: "ns/op", limit: 0, atLeast: true},
		{name: "register/compile 1000", num: "BenchmarkRegister/actions", den: "BenchmarkRegister/jsonschema-v6/compile", unit: "ns/op", limit: 1.2},
		{name: "register+tools per action 10000/100", num: "BenchmarkRegisterScale/actions/n=10000", den: "BenchmarkRegisterScale/actions/n=100", unit: "ns/action", limit: 1.2},
		{name: "v6 compile per schema 10000/100 (context, no limit)", num: "BenchmarkRegisterScale/jsonschema-v6/n=10000", den: "BenchmarkRegisterScale/jsonschema-v6/n=100", unit: "ns/action", limit: 0, atLeast: true},
		{name: "heap held per action / per v6 schema, 10000", num: "BenchmarkRegisterScale/actions/n=10000", den: "BenchmarkRegisterScale/jsonschema-v6/n=10000", unit: "B/action", limit: 1.2},
		{name: "mcp tools/call actions/bare sdk", num: "BenchmarkToolCall/actions", den: "BenchmarkToolCall/sdk", unit: "ns/op", limit: 0.9},
		{name: "tools allocs/output 1000", num: "BenchmarkTools/actions", den: "BenchmarkTools/output", unit: "B/op", limit: 1.05},
		{name: "store call / hand-written transaction with the same record, sqlite memory", num: "BenchmarkCallMemory/store", den: "BenchmarkCallMemory/hand-tx", unit: "ns/op", limit: 1.3},
		{name: "store call / hand-written transaction with the same record, sqlite file", num: "BenchmarkCallStore/sqlite/store", den: "BenchmarkCallStore/sqlite/hand-tx", unit: "ns/op", limit: 1.3},
		{name: "store call / hand-written transaction with the same record, postgresql", num: "BenchmarkCallStore/postgresql/store", den: "BenchmarkCallStore/postgresql/hand-tx", unit: "ns/op", limit: 1.3},
		{name: "store call / hand-written transaction, CPU time, sqlite memory (context, no limit)", num: "BenchmarkCallMemory/store", den: "BenchmarkCallMemory/hand-tx", unit: "cpu-ns/op", limit: 0, atLeast: true},
		{name: "store call / hand-written transaction, CPU time, sqlite file (context, no limit)", num: "BenchmarkCallStore/sqlite/store", den: "BenchmarkCallStore/sqlite/hand-tx", unit: "cpu-ns/op", limit: 0, atLeast: true},
		{name: "store call / hand-written transaction, CPU time, postgresql client side (context, no limit)", num: "BenchmarkCallStore/postgresql/store", den: "BenchmarkCallStore/postgresql/hand-tx", unit: "cpu-ns/op", limit: 0, atLeast: true},
		{name: "hand-written transaction into the store's table / into a table of its own, sqlite memory (context, no limit)", num: "BenchmarkCallMemory/hand-tx-log", den: "BenchmarkCallMemory/hand-tx", unit: "ns/op", limit: 0, atLeast: true},
		{name: "store call / hand-written transaction into the store's table, sqlite memory (context, no limit)", num: "BenchmarkCallMemory/store", den: "BenchmarkCallMemory/hand-tx-log", unit: "ns/op", limit: 0, atLeast: true},
		{name: "registry's call alone, no store, no SQL / hand-written transaction, sqlite memory (context, no limit)", num: "BenchmarkCallMemory/registry-alone", den: "BenchmarkCallMemory/hand-tx", unit: "ns/op", limit: 0, atLeast: true},
		{name: "store call/host tx with RunLog, sqlite memory (context, no limit)", num: "BenchmarkCallMemory/store", den: "BenchmarkCallMemory/tx-runlog", unit: "ns/op", limit: 0, atLeast: true},
		{name: "store batch per step 1000/10, sqlite memory", num: "BenchmarkBatchMemory/steps=1000", den: "BenchmarkBatchMemory/steps=10", unit: "ns/step", limit: 1.2},
		{name: "typed run/untyped run, no output schema", num: "BenchmarkRunTyped/typed/no-contract", den: "BenchmarkRunTyped/untyped/no-contract", unit: "ns/op", limit: 1.15},
		{name: "typed run/untyped run, same output schema", num: "BenchmarkRunTyped/typed/contract", den: "BenchmarkRunTyped/untyped/contract", unit: "ns/op", limit: 1.15},
		{name: "output check/validate, map result", num: "BenchmarkOutputCheck/actions/map", den: "BenchmarkOutputCheck/jsonschema-v6/validate", unit: "ns/op", limit: 1.3},
		{name: "output check/validate, typed result", num: "BenchmarkOutputCheck/actions/typed", den: "BenchmarkOutputCheck/jsonschema-v6/validate", unit: "ns/op", limit: 1.3},
		{name: "output check typed/v6 marshal+validate (context, no limit)", num: "BenchmarkOutputCheck/jsonschema-v6/marshal+validate", den: "BenchmarkOutputCheck/actions/typed", unit: "ns/op", limit: 0, atLeast: true},
	}
	over := 0
	for _, t := range targets {
		fastest, found := r.ratio(&t)
		q1, med, q3, havePair := r.paired(&t)
		if !found || (t.paired && !havePair) {
			fmt.Printf("target %s: missing (%s, %s)\n", t.name, t.num, t.den)
			over++
			continue
		}
		ratio := fastest
		if t.paired {
			ratio = med
		}
		ok := ratio <= t.limit
		rel := "limit"
		if t.atLeast {
			ok = ratio >= t.limit
			rel = "at least"
		}
		verdict := "ok"
		if !ok {
			verdict = "over"
			over++
		}
		detail := ""
		switch {
		case t.paired:
			detail = fmt.Sprintf(" [fastest samples %.2f, paired quartiles %.2f-%.2f]", fastest, q1, q3)
		case havePair:
			detail = fmt.Sprintf(" [paired median %.2f, quartiles %.2f-%.2f]", med, q1, q3)
		}
		fmt.Printf("target %s: %.2f (%s %.2f) %s%s\n", t.name, ratio, rel, t.limit, verdict, detail)
	}
	if over > 0 {
		os.Exit(1)
	}
}
