package actions

import (
	"context"
	"github.com/actionreg/actions/store"
)

// Observer watches every operation a registry runs, so that a host can
// trace it (package otelactions implements one on OpenTelemetry; this
// package imports no tracing library). The registry calls Start when an
// operation begins and the returned End once when it ends; the context
// Start returns is the one the operation runs in, so that what the
// observer puts there (a span) reaches the store's transaction, the body
// and its nested calls, and their observations nest. A nil context
// means the one Start was given.
//
// Start and End may be called concurrently, from many goroutines. An
// observer must not panic. If it does while a unit runs (an OpCall's Start
// or End, a batch's step's included), the unit is undone and refused
// internal, and its calls are recorded, rolled back; one during an
// OpNested runs inside the calling body, whose panics are recovered: that
// body's call then fails internal. A panic in the others (OpBatch,
// OpDecide, OpUnit, OpReplay) is not recovered.
type Observer interface {
	Start(ctx context.Context, op Operation) (context.Context, Observation)
}

// OpKind is the kind of an [Operation].
type OpKind string

// The kinds of operations an [Observer] sees. The nesting, outermost
// first: a batch or a decision holds a unit (when the registry has a
// [store.Store]), which holds calls; a call holds its nested calls. A call made
// on its own is held by its unit; a replay holds its calls.
const (
	// OpCall is one action's call that the gate admits and records: a
	// top-level call, a step of a batch (Operation.Step >= 0), or the
	// call a confirmation runs (Operation.Decision set).
	OpCall OpKind = "call"
	// OpNested is a call a body made through its [Trace].
	OpNested OpKind = "nested"
	// OpBatch is a whole batch (Operation.Call.Batch).
	OpBatch OpKind = "batch"
	// OpDecide is the decision of a pending change
	// (Operation.Decision).
	OpDecide OpKind = "decide"
	// OpReplay is the replay of a record (see [Registry.Replay]).
	OpReplay OpKind = "replay"
	// OpUnit is one unit of work of the registry's [store.Store] (with
	// sqlstore, one database transaction): Store.Atomic from start to
	// settlement, every attempt included.
	OpUnit OpKind = "unit"
)

// Operation is what an [Observer] is told when an operation starts: the
// call path's own values, as the registry was given them, rather than
// copies of their fields.
type Operation struct {
	// Kind is what runs, and so which of the fields below are set.
	Kind OpKind
	// Call is the call run, with only these fields set:
	//   - OpCall: Action (the id or alias called), Params, Caller,
	//     ToolCallID;
	//   - OpNested: Action, Params, Caller (nil for the host, and for a
	//     call made with [Trace.CallAsHost]);
	//   - OpBatch: Batch (len(Batch.Steps) is its number of steps),
	//     Caller, ToolCallID;
	//   - OpReplay: Action and Caller, the record's;
	//   - OpDecide, OpUnit: none.
	//
	// Params and Batch are the caller's own values, not copies: they may
	// be personal data, so an observer records them only where its host
	// opted in, and never changes them.
	Call Call
	// Decision is the decision of an OpDecide, and for an OpCall that a
	// confirmation runs (a batch's step included) the confirmation:
	// Change the pending change, Confirm true, Caller the Call's. Zero
	// otherwise.
	Decision Decision
	// Step is the index in Batch.Steps of an OpCall that is a batch's
	// step; -1 for every other operation.
	Step int
	// AsHost is true for an OpNested made with [Trace.CallAsHost].
	AsHost bool
}

// Observation is what an [Observer] gives back for one operation. The
// zero value observes nothing.
type Observation struct {
	// TraceID and SpanID identify the observation in the observer's own
	// terms (OpenTelemetry: 32 and 16 lowercase hex digits, W3C Trace
	// Context §3.2). For OpCall, OpBatch and OpDecide they are kept in
	// the [store.Audit] of the operation's records, so that a record finds its
	// span and a span its record. Empty: nothing is kept.
	TraceID, SpanID string
	// End is called once, when the operation ended, with what it gave
	// (nil: nothing to do), in the call path's own terms:
	//   - OpBatch, OpDecide: what [Registry.Run] or [Registry.Decide]
	//     returns;
	//   - OpCall: Value the body's result (before any bound), Records
	//     the call's own record, its Audit carrying the observation's
	//     ids, as made before its unit settled (whether it was kept is
	//     the unit's to say);
	//   - OpNested: Value the result, and one record whose Entry is the
	//     nested entry and whose Audit is zero;
	//   - OpUnit: Records the unit's records as the store kept them
	//     (RolledBack set where undone);
	//   - OpReplay: no Result; the error is Replay's.
	//
	// Values may be personal data, as Call.Params. The error is as
	// [Registry.Run] returns it: a refusal's [CodeOf] is what a tracer
	// records as error.type. A unit (OpUnit, and the one an OpBatch or
	// OpDecide holds) kept its changes when its first record is not
	// RolledBack, or, when it has none, when the error is nil.
	End func(Result, error)
}

// obsKey is the context key of the Observation of the operation whose
// records are stamped with its ids (OpCall, OpBatch, OpDecide).
type obsKey struct{}

// observed is one running observation.
type observed struct {
	Observation
}

// end ends the observation with what the operation gave.
func (ob observed) end(res Result, err error) {
	if ob.End != nil {
		ob.End(res, err)
	}
}

// stamp writes the ids of ob, or when ob has none those of the
// observation in ctx, into the audit of each record that has none yet.
func stamp(ctx context.Context, ob observed, recs []store.Record) {
	ids := ob.Observation
	if ids.TraceID == "" {
		ids, _ = ctx.Value(obsKey{}).(Observation)
	}
	if ids.TraceID == "" {
		return
	}
	for i := range recs {
		if recs[i].Audit.TraceID == "" {
			recs[i].Audit.TraceID, recs[i].Audit.SpanID = ids.TraceID, ids.SpanID
		}
	}
}

// endCall stamps rec with the call's ids and ends the call's observation.
func (ob observed) endCall(rec store.Record, value any, err error) store.Record {
	if ob.TraceID != "" && rec.Audit.TraceID == "" {
		rec.Audit.TraceID, rec.Audit.SpanID = ob.TraceID, ob.SpanID
	}
	if ob.End != nil {
		ob.End(Result{Value: value, Records: []store.Record{rec}}, err)
	}
	return rec
}
