package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves s on standard input and output (the SDK's
// StdioTransport: one JSON-RPC message per line) until the client closes
// the stream or ctx is done. Nothing else may write to standard output
// meanwhile; log to standard error. It returns nil when the client closed
// the stream, ctx.Err() when ctx ended the session, or the session's error.
func ServeStdio(ctx context.Context, s *mcp.Server) error {
	return s.Run(ctx, &mcp.StdioTransport{})
}
