package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
)

// progressOf is the Call.Progress of a tool call: when the client sent a
// progressToken (params._meta.progressToken), each report the registry
// delivers goes to it as notifications/progress (progress, total,
// message), on the request's own stream. The registry rate-limits the
// reports (Options.ProgressInterval, 100 ms by default), keeps them in
// order and delivers none after Run returned, so none follows the answer.
// Nil when the client asked for none. A notification that cannot be sent
// is dropped: the call goes on.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) func(actions.Progress) {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	ss := req.Session
	return func(p actions.Progress) {
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Done, Total: p.Total, Message: p.Message})
	}
}
