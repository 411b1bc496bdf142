package cpuclock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsedGrows checks that work done between two readings shows in
// their difference, and that PerOp reports one metric divided by n.
func TestUsedGrows(t *testing.T) {
	a, ok := Used()
	if !ok {
		t.Skip("no CPU clock on this platform")
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	b, _ := Used()
	require.Greater(t, b, a, "x=%d", x)

	var got []float64
	var units []string
	done := PerOp(func(v float64, u string) { got, units = append(got, v), append(units, u) }, func() int { return 4 })
	for i := range 50_000_000 {
		x ^= i * i
	}
	done()
	require.Equal(t, []string{"cpu-ns/op"}, units, "x=%d", x)
	require.Greater(t, got[0], 0.0)
}
