//go:build race

package mcpserver_test

// raceEnabled: the race detector multiplies memory and time, so the
// heaviest load tests skip themselves under it.
const raceEnabled = true
