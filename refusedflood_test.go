package actions

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// TestRefusedCallsAreRateLimited: with a rate set, calls refused for who
// makes them, or naming no action, are limited per principal in one
// bucket: a flood of them is refused rate_limited past Burst. A hidden
// action and a missing one give the same answers in the same order, so
// the limit tells them apart no more than the refusal does; the
// principal's own calls keep their own buckets.
func TestRefusedCallsAreRateLimited(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return at } // no refill during the test
	reg := NewRegistry(&Options{Now: now, Gate: &GateOptions{Rate: 1 / time.Minute.Seconds(), Burst: 3}})
	reg.MustRegister(New(Definition{ID: "t/secret", Capability: "admin", Parameters: `{"type":"object"}`},
		func(context.Context, map[string]any, *Trace) (any, error) { return "secret", nil }))
	reg.MustRegister(New(Definition{ID: "t/open", Effect: EffectRead, Parameters: `{"type":"object"}`},
		func(context.Context, map[string]any, *Trace) (any, error) { return "open", nil }))

	codesOf := func(principal, action string, n int) []codes.Code {
		var out []codes.Code
		for range n {
			_, err := reg.Run(context.Background(), Call{Action: action, Caller: &identity.Caller{Principal: principal, Surface: identity.SurfaceMCP}})
			out = append(out, CodeOf(err))
		}
		return out
	}
	hidden := codesOf("mallory", "t/secret", 6)
	missing := codesOf("trudy", "t/nothere", 6)
	want := []codes.Code{codes.UnknownAction, codes.UnknownAction, codes.UnknownAction, codes.RateLimited, codes.RateLimited, codes.RateLimited}
	assert.Equal(t, want, hidden, "a hidden action")
	assert.Equal(t, want, missing, "a missing action: the same answers")
	assert.Equal(t, []codes.Code{codes.RateLimited}, codesOf("mallory", "t/nothere", 1), "one bucket for every name")

	res, err := reg.Run(context.Background(), Call{Action: "t/open", Caller: &identity.Caller{Principal: "mallory", Surface: identity.SurfaceMCP}})
	require.NoError(t, err, "a call the principal may make has its own bucket")
	assert.Equal(t, "open", res.Value)

	_, err = reg.Run(context.Background(), Call{Action: "t/secret", Caller: &identity.Caller{Principal: "mallory", Surface: identity.SurfaceMCP}})
	r := requireRefusal(t, err, codes.RateLimited)
	assert.Equal(t, at.Add(time.Minute), r.RetryAt, "the refusal says when a call may pass")
	assert.NotContains(t, err.Error(), "t/secret")
}
