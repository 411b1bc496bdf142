package overrun_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/actionreg/actions/internal/overrun"
)

func TestGroupReleasesAfterTheLastGoroutine(t *testing.T) {
	g := &overrun.Group{}
	ctx := overrun.With(context.Background(), g)
	done1, done2 := overrun.Begin(ctx), overrun.Begin(ctx)
	done1()
	released := 0
	g.End(func() { released++ })
	assert.Equal(t, 0, released, "a goroutine still runs")
	assert.Equal(t, 1, g.Running())
	done2()
	done2() // counted out once
	assert.Equal(t, 1, released)
	assert.Equal(t, 0, g.Running())
}

func TestGroupReleasesAtOnceWhenNothingRuns(t *testing.T) {
	g := &overrun.Group{}
	released := 0
	g.End(func() { released++ })
	assert.Equal(t, 1, released)
	overrun.Begin(context.Background())() // no group: nothing counted
}
