//go:build race

package ijson

// raceEnabled: under the race detector sync.Pool drops what it is given
// at random, so allocation counts are not the code's.
const raceEnabled = true
