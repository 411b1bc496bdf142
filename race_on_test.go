//go:build race

package actions_test

// raceEnabled: the race detector multiplies memory and time, so the
// heaviest load tests run scaled down under it; CI runs them at full
// size without it.
const raceEnabled = true
