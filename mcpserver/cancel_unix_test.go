//go:build unix

package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/mcpserver"
)

// stdioChildEnv makes the test binary the stdio host of
// TestHardenStdioClientKilled.
const stdioChildEnv = "MCPSERVER_TEST_STDIO_HOST"

// TestHardenStdioClientKilled: a stdio client killed while
// calls run closes the host's input and output at once. The host lives
// on: the answers fail with EPIPE instead of SIGPIPE ending the process,
// every call in flight is cancelled and recorded, Serve returns, and the
// host exits on its own terms.
func TestHardenStdioClientKilled(t *testing.T) {
	if os.Getenv(stdioChildEnv) == "1" {
		stdioHost(t)
		return
	}
	const calls = 3
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenStdioClientKilled$", "-test.count=1")
	cmd.Env = append(os.Environ(), stdioChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	input := []string{initializeBody, initializedLine}
	for i := range calls {
		input = append(input, callBody(10+i, "wait-block"))
	}
	_, err = io.WriteString(stdin, strings.Join(input, "\n")+"\n")
	require.NoError(t, err)
	// The host says on its standard error when each body starts.
	var log bytes.Buffer
	sc := bufio.NewScanner(stderr)
	for started := 0; started < calls && sc.Scan(); {
		log.WriteString(sc.Text() + "\n")
		if sc.Text() == "started" {
			started++
		}
	}
	// The client dies: both of its pipe ends close.
	require.NoError(t, stdin.Close())
	require.NoError(t, stdout.Close())
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	require.NoError(t, err, "the host ended so; its standard error:\n%s", log.String())
	assert.Contains(t, log.String(), fmt.Sprintf("recorded %d, cancelled %d", calls, calls), "%s", log.String())
}

// stdioHost serves the waiter's tools on standard input and output (a
// short drain time), says on standard error when each body starts, and
// at the end what was recorded.
func stdioHost(t *testing.T) {
	w := newWaiter(t)
	s := w.server(t)
	go func() {
		for range w.started {
			fmt.Fprintln(os.Stderr, "started")
		}
	}()
	err := mcpserver.Serve(context.Background(), s, &mcp.StdioTransport{}, &mcpserver.ServeOptions{DrainTime: 50 * time.Millisecond})
	fmt.Fprintf(os.Stderr, "serve returned: %v\n", err)
	// The SDK cancels the calls left when a write fails; their entries
	// follow.
	deadline := time.Now().Add(eventually)
	for {
		entries, _, _ := w.snapshot()
		cancelled := 0
		for _, e := range entries {
			if e.Error == codes.Cancelled {
				cancelled++
			}
		}
		if cancelled == len(entries) && len(entries) >= 3 || time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "recorded %d, cancelled %d\n", len(entries), cancelled)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Exit(0)
}
