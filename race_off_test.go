//go:build !race

package actions_test

const raceEnabled = false
