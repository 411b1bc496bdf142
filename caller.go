// Who calls: the Caller the host builds for each call, and the Audit line that records it.

package actions

import (
	"slices"

	"github.com/actionreg/actions/identity"
)

// clone copies c with its slices.
func cloneCaller(c *identity.Caller) identity.Caller {
	cp := *c
	cp.Capabilities = slices.Clone(c.Capabilities)
	cp.Scopes = slices.Clone(c.Scopes)
	if c.Client != nil {
		cl := *c.Client
		cp.Client = &cl
	}
	return cp
}
