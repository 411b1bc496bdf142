// Package cpuclock reads the CPU time the process has used, user and
// system, for benchmarks that report it beside the wall time: on a
// shared machine the wall time of a call includes the time it waited
// for a core, its CPU time does not.
package cpuclock

import "time"

// Used returns the CPU time (user and system, every thread) the process
// has used so far, and false where the platform does not tell it.
func Used() (time.Duration, bool) { return used() }

// PerOp reports, when the returned function is called, the process's
// CPU time since PerOp was called divided by n() as the benchmark
// metric "cpu-ns/op" (nothing where the platform does not tell it).
// Call it just before the benchmark's loop and the function just after.
func PerOp(report func(float64, string), n func() int) func() {
	start, ok := used()
	return func() {
		end, ok2 := used()
		if ok && ok2 && n() > 0 {
			report(float64(end-start)/float64(n()), "cpu-ns/op")
		}
	}
}
