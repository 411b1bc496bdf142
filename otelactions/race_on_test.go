//go:build race

package otelactions_test

// raceEnabled: the race detector multiplies memory and time, so the
// heaviest load tests run scaled down under it; CI runs them at full
// size without it.
const raceEnabled = true
