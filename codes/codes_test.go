package codes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoliciesTableInFull: Policies is the published table of
// testdata/policies.json, code for code, and PolicyOf agrees with it on
// every key; the domain key holds what PolicyOf gives a body's own code.
func TestPoliciesTableInFull(t *testing.T) {
	b, err := os.ReadFile("testdata/policies.json")
	require.NoError(t, err)
	var want map[Code]Policy
	require.NoError(t, json.Unmarshal(b, &want))
	require.Contains(t, want, Domain)
	assert.Equal(t, want, Policies())
	for c, p := range want {
		assert.Equal(t, p, PolicyOf(c), "PolicyOf(%s)", c)
	}
	assert.Equal(t, want[Domain], PolicyOf("tank_empty"), "a body's own code")
	assert.Equal(t, want[Internal], PolicyOf(""), "the empty code is internal's")
}

// TestPoliciesFresh: each call of Policies gives a map of its own.
func TestPoliciesFresh(t *testing.T) {
	m := Policies()
	m[Internal] = Policy{}
	delete(m, Timeout)
	assert.Equal(t, Policy{Transport: TransportProtocol, Retry: RetryAfterBackoff}, Policies()[Internal])
	assert.Contains(t, Policies(), Timeout)
}

// TestCodeIsItsOwnSentinel: a Code is an error whose text is the code,
// matched by errors.Is through wrapping, and by no other code.
func TestCodeIsItsOwnSentinel(t *testing.T) {
	for name, err := range map[string]error{
		"bare":    Timeout,
		"wrapped": fmt.Errorf("pumping: %w", Timeout),
		"joined":  errors.Join(errors.New("busy"), Timeout),
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, err, Timeout)
			assert.NotErrorIs(t, err, Cancelled)
			assert.NotErrorIs(t, err, Code("tank_empty"))
		})
	}
	assert.Equal(t, "timeout", Timeout.Error())
	assert.ErrorIs(t, fmt.Errorf("filling: %w", Code("tank_empty")), Code("tank_empty"))
}
