package bound

// Bounded is the form a result over its bound reaches its caller in
// ([github.com/actionreg/actions.Result].Value, and each step's in
// [github.com/actionreg/actions.Result].StepResults): never the whole result,
// never a value cut in the middle. Its JSON form is
//
//	{"value": <the part that fits>, "bounded": {"limit": 32768, "bytes": 120345,
//	 "path": "/items", "total": 500, "kept": 40, "left": 460,
//	 "nextCall": {"action": "supply/list_actors", "params": {"cursor": "YTAx.GE3gpKYfd7aE1R-2_v83vA"}}}}
//
// What is cut (see docs/pagination.md):
//   - a list: a root array, or in a root object its "items" member when
//     it is an array, otherwise its one member that is an array. It is
//     cut to the first items that fit, the object's other members kept;
//     Total, Kept and Left count items. When the action declares a
//     cursor parameter (named "cursor"), NextCall is the same action with
//     the caller's parameters and the cursor of the first item left out
//     (for a keyset action, [github.com/actionreg/actions.Definition].PageKey: of the last item
//     kept), and the "next" member beside a Page's items (or any string "next"
//     member) is set to that cursor;
//   - a root string: cut at a character (code point) boundary; Total,
//     Kept and Left count characters. When the action declares a cursor,
//     NextCall is the same action with the cursor of the first character
//     left out (an action returning long text pages it with
//     [github.com/actionreg/actions.PaginateText]);
//     A first item that alone is over the bound is skipped (Skipped),
//     the items after it kept as they fit: following NextCall gets past
//     it;
//   - anything else over its bound is refused with result_too_large.
//     In a batch a step is never refused for its size: its result is
//     Omitted instead.
//
// The envelope itself, JSON text and all, fits the bound.
type Bounded struct {
	// Value is the part of the result that fits: the list with its first
	// Kept items (and its object's other members), the string's first
	// Kept characters; nil when Omitted.
	Value any `json:"value"`
	// Bound says what was cut.
	Bound Bound `json:"bounded"`
}

// Bound describes how a result was bounded; see [Bounded].
type Bound struct {
	// Limit is the bound in force, in bytes of canonical JSON.
	Limit int `json:"limit"`
	// Bytes is the size of the whole result's canonical JSON.
	Bytes int `json:"bytes"`
	// Path is the RFC 6901 pointer of the list or string cut: "" for the
	// root, "/items" for a member.
	Path string `json:"path"`
	// Total, Kept and Left count the items (a list) or characters (a
	// string) of the whole value, those given and those left out.
	Total int `json:"total"`
	Kept  int `json:"kept"`
	Left  int `json:"left"`
	// Skipped, for a list, counts the items left out at its head because
	// alone each is over the bound (at most one per answer): Value's list
	// starts after it, and NextCall's cursor is past it. Left out when 0.
	Skipped int `json:"skipped,omitempty"`
	// Omitted is true for a batch step's result that did not fit what
	// was left of the batch's bound, or could not be cut: only its size
	// is given, and for a step whose action only reads or is idempotent,
	// NextCall: the step's call as it was made, to get the result on its
	// own. A write's result omitted is not given again (running the
	// write again is not a way to read it).
	Omitted bool `json:"omitted,omitempty"`
	// NextCall, for a list of an action that declares a cursor, is the
	// call that fetches the items left out.
	NextCall *NextCall `json:"nextCall,omitempty"`
}

// NextCall is a call that fetches the rest of a bounded list: Action (an
// action id; MCP answers give the tool name) with Params, the caller's
// parameters as given with its "cursor" set.
type NextCall struct {
	Action string         `json:"action"`
	Params map[string]any `json:"params"`
}
