package programs_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/programs"
	"github.com/actionreg/actions/store"
)

// run runs src as caller through the program action of reg bounded by
// opts, registering that action on first use (one per set of options).
func run(t testing.TB, reg *actions.Registry, caller *identity.Caller, src string, opts *programs.Options) (actions.Result, error) {
	return runCtx(context.Background(), t, reg, caller, src, opts)
}

func runCtx(ctx context.Context, t testing.TB, reg *actions.Registry, caller *identity.Caller, src string, opts *programs.Options) (actions.Result, error) {
	t.Helper()
	var o programs.Options
	if opts != nil {
		o = *opts
	}
	if o.ID == "" {
		o.ID = programs.DefaultID
		if opts != nil {
			o.ID = fmt.Sprintf("programs/run_%08x", crc32.ChecksumIEEE(fmt.Appendf(nil, "%+v", o)))
		}
	}
	if !slices.ContainsFunc(reg.Definitions(), func(d actions.Definition) bool { return d.ID == o.ID }) {
		require.NoError(t, reg.Register(programs.Action(reg, &o)))
	}
	return reg.Run(ctx, actions.Call{Action: o.ID, Params: map[string]any{"program": src}, Caller: caller})
}

// calls are the entries of the calls a program's run made, in order.
func calls(res actions.Result) []store.RunEntry {
	var out []store.RunEntry
	for _, s := range res.Entry().Steps {
		if s.Call != nil {
			out = append(out, *s.Call)
		}
	}
	return out
}
