package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// What the scope challenge reads of a POST body must be what the SDK will
// run, or a body can show the challenge one call and the SDK another. The
// SDK reads the first JSON value of the body and ignores what follows it
// (trailing bytes, a second value); it takes that value as a batch when it
// is an array, else as one message, decoded by jsonrpc.DecodeMessage. The
// functions below read a body the same way, with the SDK's own message
// decoder, and say when they cannot, so that the challenge refuses what it
// cannot read rather than let it through.

// toolCall is one tools/call of a body: the tool name, and the action ids
// its steps call when it is the batch tool.
type toolCall struct {
	name  string
	args  int64 // the bytes of its arguments
	steps []string
}

// bodyCalls returns the tools/call requests of a POST body as the SDK
// will decode them. batchTool is the batch tool's name ("" for none): the
// steps of a call of it are read too. ok is false when the body is an
// array the SDK may read as a batch but this reading cannot.
func bodyCalls(body []byte, batchTool string) (calls []toolCall, ok bool) {
	t := bytes.TrimLeft(body, " \t\r\n")
	var msgs [][]byte
	if len(t) > 0 && t[0] == '[' {
		var first json.RawMessage
		var batch []json.RawMessage
		if json.NewDecoder(bytes.NewReader(t)).Decode(&first) != nil || json.Unmarshal(first, &batch) != nil {
			return nil, false
		}
		for _, m := range batch {
			msgs = append(msgs, m)
		}
	} else {
		msgs = [][]byte{body}
	}
	for _, m := range msgs {
		msg, err := jsonrpc.DecodeMessage(m)
		req, isReq := msg.(*jsonrpc.Request)
		if err != nil || !isReq || req.Method != "tools/call" {
			continue
		}
		var params map[string]json.RawMessage
		var name string
		if json.Unmarshal(req.Params, &params) != nil || json.Unmarshal(params["name"], &name) != nil {
			continue // the SDK refuses such params too (-32602)
		}
		c := toolCall{name: name, args: int64(len(params["arguments"]))}
		if batchTool != "" && name == batchTool {
			c.steps = batchSteps(params["arguments"])
		}
		calls = append(calls, c)
	}
	return calls, true
}

// batchSteps returns the action ids the steps of a batch tool's arguments
// call ({"commands": [{"call": id}, ...]}), members matched by their exact
// names as the registry's batch decoder matches them. Arguments it cannot
// read the registry refuses before any step runs.
func batchSteps(args json.RawMessage) []string {
	var a map[string]json.RawMessage
	var commands []map[string]json.RawMessage
	if json.Unmarshal(args, &a) != nil || json.Unmarshal(a["commands"], &commands) != nil {
		return nil
	}
	var ids []string
	for _, c := range commands {
		var id string
		if json.Unmarshal(c["call"], &id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// mergeChallenges returns one RFC 6750 challenge asking for every scope
// the challenges ask for (MCP 2026-07-28, scope challenge handling: all the
// scopes an operation needs, in one challenge): the first challenge, its
// scope attribute the sorted union of all of theirs.
func mergeChallenges(challenges []string) string {
	if len(challenges) <= 1 {
		return strings.Join(challenges, "")
	}
	var scopes []string
	for _, c := range challenges {
		scopes = append(scopes, strings.Fields(scopeAttribute(c))...)
	}
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	first := challenges[0]
	old := ` scope="` + scopeAttribute(first) + `"`
	return strings.Replace(first, old, ` scope="`+strings.Join(scopes, " ")+`"`, 1)
}

// scopeAttribute returns the value of the scope attribute of a challenge
// the gate wrote (scope tokens never hold a quote).
func scopeAttribute(challenge string) string {
	_, rest, ok := strings.Cut(challenge, ` scope="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// batchToolName is the name of the batch tool opts adds, "" for none.
func batchToolName(opts Options) string {
	if opts.Batch == nil {
		return ""
	}
	return opts.Batch.name()
}

// scopeChallenge asks the registry's gate about each call and each batch
// step as caller, and returns the challenge for the scopes the token
// lacks, "" when it lacks none. A call the gate refuses for another
// reason first (an unknown or forbidden tool) adds nothing, so that the
// MCP handler answers it as any call and the 403 tells nothing of a tool
// the caller may not see.
func scopeChallenge(ctx context.Context, reg *actions.Registry, caller *identity.Caller, calls []toolCall) string {
	var challenges []string
	ask := func(id string) {
		var rf *actions.Refusal
		if err := reg.Admit(ctx, id, caller); errors.As(err, &rf) && rf.Code == codes.InsufficientScope && rf.Challenge != "" {
			challenges = append(challenges, rf.Challenge)
		}
	}
	for _, c := range calls {
		if id, err := actions.ActionID(c.name); err == nil {
			ask(id)
		}
		for _, id := range c.steps {
			ask(id)
		}
	}
	return mergeChallenges(challenges)
}
