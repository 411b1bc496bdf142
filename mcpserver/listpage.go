package mcpserver

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tools/list is filtered per caller. Filtering the SDK's own pages would
// leak: its cursor encodes the last tool of the page before filtering (a
// tool the caller may not see), and its pages shrink or come back empty
// where hidden tools were. So the list is served here: every page of the
// SDK is read, the whole list filtered for the caller, and that list cut
// into pages of the SDK's page size with a cursor of this package's own,
// which only ever names a tool the caller was shown.

// listCursorPrefix marks a cursor of this package (its version).
const listCursorPrefix = "v1."

// listCursor is the cursor of a page that ends with the tool name last:
// the next page lists the caller's tools sorted after it. It is opaque to
// clients; a tool it decodes to was on the caller's last page.
func listCursor(last string) string {
	return listCursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(last))
}

// afterCursor decodes a cursor of listCursor; ok is false for any other
// text. A forged cursor naming any text only says where in the caller's
// own sorted list to start: what follows is the same whether a tool of
// that name exists or not.
func afterCursor(cursor string) (string, bool) {
	rest, ok := strings.CutPrefix(cursor, listCursorPrefix)
	if !ok {
		return "", false
	}
	name, err := base64.RawURLEncoding.DecodeString(rest)
	return string(name), err == nil
}

// invalidCursor is the answer to a cursor this package did not write
// (MCP pagination: an invalid cursor is invalid params).
func invalidCursor() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: the cursor is not one this server gave"}
}

// listPerCaller serves a tools/list request: the whole list of next
// (every page of the SDK), filtered by filter, then the page the
// request's cursor asks for. The SDK lists tools sorted by name, and so
// does this.
func listPerCaller(ctx context.Context, req mcp.Request, next mcp.MethodHandler, filter func(*mcp.ListToolsResult)) (mcp.Result, error) {
	lr, _ := req.(*mcp.ListToolsRequest)
	if lr == nil {
		return next(ctx, "tools/list", req)
	}
	var params mcp.ListToolsParams
	if lr.Params != nil {
		params = *lr.Params
	}
	after, paged := "", params.Cursor != ""
	if paged {
		var ok bool
		if after, ok = afterCursor(params.Cursor); !ok {
			return nil, invalidCursor()
		}
	}
	// Every page of the SDK's, from the first.
	var all *mcp.ListToolsResult
	pageSize, cursor := 0, ""
	for {
		p := params
		p.Cursor = cursor
		res, err := next(ctx, "tools/list", &mcp.ListToolsRequest{Session: lr.Session, Params: &p, Extra: lr.Extra})
		if err != nil {
			return res, err
		}
		page, ok := res.(*mcp.ListToolsResult)
		if !ok || page == nil {
			return res, err
		}
		if all == nil {
			all = page
		} else {
			all.Tools = append(all.Tools, page.Tools...)
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			break
		}
		if pageSize == 0 {
			pageSize = len(page.Tools)
		}
		cursor = page.NextCursor
	}
	all.NextCursor = ""
	filter(all)
	if paged {
		start := len(all.Tools)
		for i, t := range all.Tools {
			if t.Name > after {
				start = i
				break
			}
		}
		all.Tools = all.Tools[start:]
	}
	if pageSize > 0 && len(all.Tools) > pageSize {
		all.Tools = all.Tools[:pageSize]
		all.NextCursor = listCursor(all.Tools[pageSize-1].Name)
	}
	return all, nil
}
