//go:build !race

package otelactions_test

const raceEnabled = false
