//go:build !race

package ijson

const raceEnabled = false
