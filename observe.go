package actions

import (
	"context"
)

// Observer watches every operation a registry runs, so that a host can
// trace it (package otelactions implements one on OpenTelemetry; this
// package imports no tracing library). The registry calls Start when an
// operation begins and the returned End once when it ends; the context
// Start returns is the one the operation runs in, so that what the
// observer puts there (a span) reaches the store's transaction, the body
// and its nested calls, and their observations nest.
//
// Start and End may be called concurrently, from many goroutines. A panic
// in either is not recovered: an observer must not panic.
type Observer interface {
	Start(ctx context.Context, op Operation) (context.Context, Observation)
}

// OpKind is the kind of an [Operation].
type OpKind string

// The kinds of operations an [Observer] sees. The nesting, outermost
// first: a batch or a decision holds a unit (when the registry has a
// [Store]), which holds calls; a call holds its nested calls. A call made
// on its own is held by its unit; a replay holds its calls.
const (
	// OpCall is one action's call that the gate admits and records: a
	// top-level call, a step of a batch (Operation.Step >= 0), or the
	// call a confirmation runs (Operation.Change set).
	OpCall OpKind = "call"
	// OpNested is a call a body made through its [Trace].
	OpNested OpKind = "nested"
	// OpBatch is a whole batch (Operation.Steps steps).
	OpBatch OpKind = "batch"
	// OpDecide is the decision of a pending change (Operation.Change,
	// Operation.Confirm).
	OpDecide OpKind = "decide"
	// OpReplay is the replay of a record (see [Registry.Replay]).
	OpReplay OpKind = "replay"
	// OpUnit is one unit of work of the registry's [Store] (with
	// sqlstore, one database transaction): Store.Atomic from start to
	// settlement, every attempt included.
	OpUnit OpKind = "unit"
)

// Operation is what an [Observer] is told when an operation starts.
type Operation struct {
	Kind OpKind
	// Action is the id (or alias) called: set for OpCall, OpNested and
	// OpReplay; "" for the others.
	Action string
	// ToolCallID is the id the client gave the call ([Call].ToolCallID),
	// for OpCall and OpBatch; "" when none.
	ToolCallID string
	// Caller is who calls; nil for the host.
	Caller *Caller
	// Params are the parameters as given (OpCall, OpNested), in the forms
	// [Call].Params takes. They may be personal data: an observer records
	// them only where its host opted in, and never changes them.
	Params any
	// Step is the index of a batch's step in Batch.Steps, or -1 when the
	// call is no step.
	Step int
	// Steps is the number of steps of an OpBatch.
	Steps int
	// Change is the pending change an OpDecide decides, or an OpCall
	// confirms.
	Change string
	// Confirm is true for an OpDecide that confirms, false for one that
	// rejects.
	Confirm bool
	// AsHost is true for an OpNested made with [Trace.CallAsHost].
	AsHost bool
}

// Observation is what an [Observer] gives back for one operation. The
// zero value observes nothing.
type Observation struct {
	// TraceID and SpanID identify the observation in the observer's own
	// terms (OpenTelemetry: 32 and 16 lowercase hex digits, W3C Trace
	// Context §3.2). For OpCall, OpBatch and OpDecide they are kept in
	// the [Audit] of the operation's records, so that a record finds its
	// span and a span its record. Empty: nothing is kept.
	TraceID, SpanID string
	// End is called once, when the operation ended, with what it gave;
	// nil for nothing to do.
	End func(Done)
}

// Done is what an operation gave, as an [Observation]'s End receives it.
type Done struct {
	// Records are the operation's records: OpCall's own one (its Audit
	// carries the observation's ids); for OpNested one whose Entry is
	// the nested entry and whose Audit is zero; the unit's for OpBatch,
	// OpDecide and OpUnit (RolledBack set for OpUnit); none for OpReplay.
	Records []Record
	// Value is the operation's result (nil on error). It may be personal
	// data, as Operation.Params.
	Value any
	// Err is the operation's error, as [Registry.Run] returns it: a
	// refusal's [CodeOf] is what a tracer records as error.type.
	Err error
	// Commit is true when the unit kept its changes (OpUnit, and every
	// operation that holds a unit).
	Commit bool
}

// obsKey is the context key of the Observation of the operation whose
// records are stamped with its ids (OpCall, OpBatch, OpDecide).
type obsKey struct{}

// observed is one running observation.
type observed struct {
	Observation
}

// end ends the observation with d.
func (ob observed) end(d Done) {
	if ob.End != nil {
		ob.End(d)
	}
}

// stamp writes the ids of ob, or when ob has none those of the
// observation in ctx, into the audit of each record that has none yet.
func stamp(ctx context.Context, ob observed, recs []Record) {
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
func (ob observed) endCall(rec Record, value any, commit bool, err error) Record {
	if ob.TraceID != "" && rec.Audit.TraceID == "" {
		rec.Audit.TraceID, rec.Audit.SpanID = ob.TraceID, ob.SpanID
	}
	if ob.End != nil {
		ob.End(Done{Records: []Record{rec}, Value: value, Err: err, Commit: commit})
	}
	return rec
}

// committed reports whether a unit that gave recs and err kept its
// changes.
func committed(recs []Record, err error) bool {
	if len(recs) > 0 {
		return !recs[0].RolledBack
	}
	return err == nil
}
