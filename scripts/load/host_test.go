package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLostUpdates checks the load program's lost-update check on writes
// that chain, and on each way a chain breaks.
func TestLostUpdates(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	w := func(actor string, co2 float64, prev *float64) write {
		return write{Actor: actor, Period: "2025", CO2t: co2, Previous: prev}
	}
	cases := []struct {
		name   string
		writes []write
		final  map[string]float64
		lost   int
	}{
		{"one chain, any order", []write{w("a", 3, f(2)), w("a", 1, nil), w("a", 2, f(1))}, map[string]float64{"a 2025": 3}, 0},
		{"two rows", []write{w("a", 1, nil), w("b", 5, nil), w("b", 6, f(5))}, map[string]float64{"a 2025": 1, "b 2025": 6}, 0},
		{"two writes replaced one figure", []write{w("a", 1, nil), w("a", 2, f(1)), w("a", 3, f(1))}, map[string]float64{"a 2025": 3}, 1},
		{"two firsts", []write{w("a", 1, nil), w("a", 2, nil)}, map[string]float64{"a 2025": 2}, 1},
		{"the database ends elsewhere", []write{w("a", 1, nil), w("a", 2, f(1))}, map[string]float64{"a 2025": 1}, 1},
		{"a row the database lacks", []write{w("a", 1, nil)}, map[string]float64{}, 1},
		{"the database ends at a figure nobody wrote", []write{w("a", 1, nil)}, map[string]float64{"a 2025": 7}, 2},
		{"no writes", nil, map[string]float64{"a 2025": 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lost, note := lostUpdates(c.writes, c.final)
			assert.Equal(t, c.lost, lost)
			assert.Equal(t, c.lost == 0, note == "", note)
		})
	}
}
