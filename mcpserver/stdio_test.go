package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/mcpserver"
)

// answers parses the server's output: the id of each response, and the
// JSON-RPC error code of each error (0 for a result).
func answers(t *testing.T, out string) map[float64]int64 {
	t.Helper()
	got := map[float64]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			ID    *float64 `json:"id"`
			Error *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.ID == nil {
			continue // a notification
		}
		var code int64
		if m.Error != nil {
			code = m.Error.Code
		}
		_, dup := got[*m.ID]
		require.False(t, dup, "two answers to %v", *m.ID)
		got[*m.ID] = code
	}
	return got
}

// TestStdioEndOfInput: N requests, then the end of input, 100 times: each
// request is answered, once, and each call that ran is recorded: entries
// equal answers equal requests (the rule: on end of input, every request
// already read is answered).
func TestStdioEndOfInput(t *testing.T) {
	base := runtime.NumGoroutine()
	runs, n := 100, 200
	if raceEnabled || testing.Short() {
		n = 40
	}
	var input strings.Builder
	input.WriteString(initializeBody + "\n" + initializedLine + "\n")
	for i := range n {
		input.WriteString(echoCall(i+2) + "\n")
	}
	for run := range runs {
		w := newWaiter(t)
		out, err := serveInput(t, w.server(t), input.String(), nil)
		require.NoError(t, err, "run %d", run)
		got := answers(t, out)
		entries, _, _ := w.snapshot()
		require.Len(t, got, n+1, "run %d: answers (initialize included)", run)
		require.Len(t, entries, n, "run %d: entries", run)
		for i := range n {
			code, ok := got[float64(i+2)]
			require.True(t, ok, "run %d: call %d unanswered", run, i+2)
			require.Zero(t, code, "run %d: call %d", run, i+2)
		}
	}
	checkGoroutines(t, base)
}

// TestStdioEndOfInputCallStillRunning: the input ends while a body waits
// on its context: after the drain time it is cancelled (ErrClientGone),
// recorded as cancelled and answered with -32800.
func TestStdioEndOfInputCallStillRunning(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	input := initializeBody + "\n" + initializedLine + "\n" + callBody(2, "wait-block") + "\n" + echoCall(3) + "\n"
	out, err := serveInput(t, w.server(t), input, &mcpserver.ServeOptions{DrainTime: 100 * time.Millisecond})
	require.NoError(t, err)
	got := answers(t, out)
	assert.Equal(t, map[float64]int64{1: 0, 2: mcpserver.CodeRequestCancelled, 3: 0}, got)
	w.awaitCancelled(t, 1, mcpserver.ErrClientGone)
	entries, _, _ := w.snapshot()
	assert.Len(t, entries, 2, "one entry per call answered")
	checkGoroutines(t, base)
}

// TestStdioTruncatedLastLine: a last line cut short ends the input like
// its end: the complete requests are answered and Serve returns nil (the
// example exits 0).
func TestStdioTruncatedLastLine(t *testing.T) {
	w := newWaiter(t)
	input := initializeBody + "\n" + initializedLine + "\n" + echoCall(2) + "\n" + echoCall(3) + "\n" + `{"jsonrpc":"2.0","id":4,"meth`
	out, err := serveInput(t, w.server(t), input, nil)
	require.NoError(t, err)
	assert.Equal(t, map[float64]int64{1: 0, 2: 0, 3: 0}, answers(t, out))
}

// TestStdioBackpressure: a client writes 100,000 requests without reading
// a single answer. The server reads only while fewer than
// MaxCallsInFlight await an answer, so the writer soon blocks, having
// written a few hundred at most, and the heap stays within 16 MiB of
// where it was (without the bound: about 6 KiB a request, 600 MiB). Then
// the server is stopped: it answers what it read, and nothing is left.
func TestStdioBackpressure(t *testing.T) {
	const requests = 100_000
	base := runtime.NumGoroutine()
	heapBefore := heapAfterGC()
	w := newWaiter(t)
	p := servePipes(t, w.server(t), nil)
	var written atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		bw := bufio.NewWriter(p.in)
		fmt.Fprintln(bw, initializeBody)
		fmt.Fprintln(bw, initializedLine)
		for i := range requests {
			if _, err := fmt.Fprintln(bw, echoCall(i+2)); err != nil {
				return // the server closed its input
			}
			written.Add(1)
		}
		_ = bw.Flush()
	}()
	// Wait until the writer has been stuck for a while.
	last, still := int64(-1), 0
	for deadline := time.Now().Add(eventually); still < 10; {
		require.True(t, time.Now().Before(deadline), "the writer never blocked: the server read everything")
		time.Sleep(50 * time.Millisecond)
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	heapStuck := heapAfterGC()
	t.Logf("the writer is blocked after %d requests (bufio's 4 KiB buffer included); heap %.1f MiB before, %.1f MiB now",
		last, mib(heapBefore), mib(heapStuck))
	assert.Less(t, last, int64(10_000), "requests the server let in")
	assert.Less(t, heapStuck, heapBefore+16<<20, "heap with the client not reading")

	// Stop: the server answers what it read, then ends.
	lines := p.lines()
	p.cancel()
	select {
	case err := <-p.done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(eventually):
		t.Fatal("Serve did not return")
	}
	var out strings.Builder
	for l := range lines {
		out.WriteString(l + "\n")
	}
	got := answers(t, out.String())
	entries, _, _ := w.snapshot()
	assert.Len(t, entries, len(got)-1, "every call that ran was answered (initialize aside)")
	p.in.Close()
	<-writerDone
	checkGoroutines(t, base)
}

// TestStdioSDKClient: the official client over Serve, both protocol
// versions.
func TestStdioSDKClient(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			w := newWaiter(t)
			serverT, clientT := mcp.NewInMemoryTransports()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = mcpserver.Serve(ctx, w.server(t), serverT, nil)
			}()
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil).Connect(ctx, clientT, opts)
			require.NoError(t, err)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait-echo", Arguments: map[string]any{"n": 1}})
			require.NoError(t, err)
			assert.Equal(t, `{"n":1}`, textOf(t, res))
			cs.Close()
			cancel()
			wg.Wait()
		})
	}
}

var _ = bytes.MinRead
