package actions

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCodeOfCancelled: an error whose chain holds a context's own error is
// recorded as cancelled, not as a server fault; a code the error carries
// itself still wins.
func TestCodeOfCancelled(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"canceled", context.Canceled, CodeCancelled},
		{"deadline", context.DeadlineExceeded, CodeCancelled},
		{"wrapped", fmt.Errorf("waiting for the pump: %w", context.Canceled), CodeCancelled},
		{"refusal wins", NewRefusal("tank_empty", "empty"), "tank_empty"},
		{"plain", errors.New("disk full"), CodeInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, CodeOf(c.err))
		})
	}
	r := NewRefusal(CodeCancelled, "")
	assert.ErrorIs(t, r, ErrCancelled)
	assert.Equal(t, Policy{TransportProtocol, RetryAfterBackoff}, PolicyOf(CodeCancelled))
	assert.Contains(t, Policies(), CodeCancelled)
}
