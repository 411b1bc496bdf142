package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// TestStressEverythingAtOnce runs, under -race, goroutines that register
// actions, run them, run batches, export tools, and call tools through the
// MCP server, all on one registry at once. Loops are bounded; the test
// checks counts, not timings.
func TestStressEverythingAtOnce(t *testing.T) {
	f := connect(t, "")
	reg := f.reg
	ctx := context.Background()
	const rounds = 40
	var wg sync.WaitGroup
	var runs, batches, exports, calls atomic.Int64
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for g := range 2 { // registering
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				err := reg.Register(actions.Action{
					Definition: actions.Definition{ID: fmt.Sprintf("load/a%d_%d", g, i),
						Parameters: `{"type":"object","properties":{"n":{"type":"integer","default":1}}}`},
					Run: func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil },
				})
				if err != nil {
					report(err)
				}
			}
		}()
	}
	for range 2 { // running, valid and invalid
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if _, err := reg.Run(ctx, actions.Call{Action: "shop/greet", Params: map[string]any{"name": "Ada"}}); err != nil {
					report(err)
				}
				if _, err := reg.Run(ctx, actions.Call{Action: "shop/greet", Params: map[string]any{"name": i}}); err == nil {
					report(fmt.Errorf("an invalid call passed"))
				}
				runs.Add(2)
			}
		}()
	}
	wg.Add(1)
	go func() { // batches
		defer wg.Done()
		b, err := reg.DecodeBatch([]byte(`{"commands":[
			{"call":"shop/greet","with":{"name":"Ada"},"as":"g"},
			{"call":"shop/greet","with":{"name":"${g.hello}","times":2}}]}`))
		if err != nil {
			report(err)
			return
		}
		for range rounds {
			if res, err := reg.Run(ctx, actions.Call{Batch: &b}); err != nil || len(res.Records) != 2 {
				report(fmt.Errorf("batch: %v, %d records", err, len(res.Records)))
			}
			batches.Add(1)
		}
	}()
	wg.Add(1)
	go func() { // exports
		defer wg.Done()
		for range rounds {
			tools, err := reg.Tools(nil)
			if err != nil {
				report(err)
			}
			if defs := reg.Definitions(); len(defs) < len(tools) {
				report(fmt.Errorf("%d definitions for %d tools", len(defs), len(tools)))
			}
			if len(tools) < 5 {
				report(fmt.Errorf("only %d tools", len(tools)))
			}
			exports.Add(1)
		}
	}()
	for range 2 { // MCP calls
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				res, err := f.session.CallTool(ctx, &mcp.CallToolParams{Name: "shop-greet", Arguments: map[string]any{"name": "Ada", "times": i%3 + 1}})
				if err != nil || res.IsError {
					report(fmt.Errorf("call: %v", err))
					continue
				}
				bad, err := f.session.CallTool(ctx, &mcp.CallToolParams{Name: "shop-greet", Arguments: json.RawMessage(`{"name":5}`)})
				if err != nil || !bad.IsError {
					report(fmt.Errorf("an invalid MCP call passed: %v", err))
				}
				calls.Add(2)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.EqualValues(t, 4*rounds, runs.Load())
	assert.EqualValues(t, rounds, batches.Load())
	assert.EqualValues(t, rounds, exports.Load())
	assert.EqualValues(t, 4*rounds, calls.Load())
	assert.Len(t, reg.Definitions(), 7+2*rounds) // the test registry holds 7
	// The registry's OnRecord sees every call it runs, direct or over
	// MCP: 4 per round run directly, 2 per batch, 4 per round over MCP.
	require.Len(t, f.runEntries(), 4*rounds+2*rounds+4*rounds, "OnRecord saw every call")
}
