package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// TestCodeOfCancelled: an error whose chain holds a context's own error is
// recorded as cancelled, not as a server fault; a code the error carries
// itself still wins.
func TestCodeOfCancelled(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"canceled", context.Canceled, codes.Cancelled},
		{"deadline", context.DeadlineExceeded, codes.Cancelled},
		{"wrapped", fmt.Errorf("waiting for the pump: %w", context.Canceled), codes.Cancelled},
		{"refusal wins", NewRefusal("tank_empty", "empty"), "tank_empty"},
		{"plain", errors.New("disk full"), codes.Internal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, CodeOf(c.err))
		})
	}
	r := NewRefusal(codes.Cancelled, "")
	assert.ErrorIs(t, r, codes.Cancelled)
	assert.Equal(t, codes.Policy{Transport: codes.TransportProtocol, Retry: codes.RetryAfterBackoff}, codes.PolicyOf(codes.Cancelled))
	assert.Contains(t, codes.Policies(), codes.Cancelled)
}

// The one error model (docs/refusals.md): for every
// error the library returns, errors.Is(err, X) holds exactly when
// CodeOf(err) is X.

// libraryError reports whether err's chain holds an error the library
// made (a *Refusal or a *Divergence), rather than only a host's own: a
// body's plain error comes back as it is, the host's to match, and
// CodeOf reads it as internal without codes.Internal matching
// (docs/refusals.md).
func libraryError(err error) bool {
	var d *Divergence
	return asRefusal(err) != nil || errors.As(err, &d)
}

// assertOneErrorModel checks err against the sentinel of every code the
// library raises: errors.Is(err, X) exactly when CodeOf(err) is X (no
// sentinel at all for a host's own error). A refusal's cause that is a
// refusal itself is checked the same way.
func assertOneErrorModel(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	code := CodeOf(err)
	own := libraryError(err)
	for _, c := range registryCodes() {
		is := errors.Is(err, sentinelOf(c))
		if !own {
			assert.False(t, is, "%s: a host's own error (%v) matches the sentinel of %s", what, err, c)
			continue
		}
		assert.Equal(t, code == c, is, "%s: CodeOf is %s, errors.Is(err, sentinel of %s) is %v: %v", what, code, c, is, err)
	}
	if r := asRefusal(err); r != nil && asRefusal(r.Cause()) != nil {
		assertOneErrorModel(t, r.Cause(), what+" (its cause)")
	}
}

// modelCodes are every code the library raises, the empty code (read as
// internal) and a body's domain code, which has no sentinel.
func modelCodes() []codes.Code {
	return append(registryCodes(), "", "tank_empty")
}

// TestOneErrorModelEveryCode: a refusal of each code, bare or wrapped as
// the library and a host wrap it, and with a cause of every other code,
// matches its own code's sentinel and no other.
func TestOneErrorModelEveryCode(t *testing.T) {
	for _, c := range modelCodes() {
		want := c
		if c == "" {
			want = codes.Internal
		}
		t.Run(string(want)+"/"+string(c), func(t *testing.T) {
			shapes := map[string]error{
				"NewRefusal":   NewRefusal(c, "m"),
				"literal":      &Refusal{Code: c},
				"wrapped":      fmt.Errorf("while serving: %w", NewRefusal(c, "m")),
				"step":         &StepError{Index: 2, Action: "a/b", Err: NewRefusal(c, "m")},
				"joined":       errors.Join(NewRefusal(c, "m"), errors.New("the rollback failed too")),
				"cancel cause": &Refusal{Code: c, cause: context.Canceled},
			}
			for _, other := range modelCodes() {
				r := NewRefusal(c, "m")
				r.cause = NewRefusal(other, "the cause")
				shapes["cause "+string(other)] = r
				wrapped := NewRefusal(c, "m")
				wrapped.cause = fmt.Errorf("nested: %w", NewRefusal(other, "the cause"))
				shapes["wrapped cause "+string(other)] = wrapped
			}
			for name, err := range shapes {
				assert.Equal(t, want, CodeOf(err), name)
				assertOneErrorModel(t, err, name)
			}
		})
	}
	// A divergence is diverged, whatever the replayed call gave.
	for _, c := range modelCodes() {
		d := &Divergence{Path: "/error", Code: c, Err: NewRefusal(c, "m")}
		assert.Equal(t, codes.Diverged, CodeOf(d), "a divergence of %s", c)
		assertOneErrorModel(t, d, "divergence of "+string(c))
	}
	// A host's own errors match no sentinel: the body's plain error, one
	// with a Code method, a bare context error.
	for name, err := range map[string]error{
		"plain":    errors.New("disk full"),
		"coded":    codedError("read_only"),
		"canceled": context.Canceled,
	} {
		assertOneErrorModel(t, err, name)
	}
}

// codedError is a host's error type with a Code method.
type codedError string

func (e codedError) Error() string { return "coded: " + string(e) }
func (e codedError) Code() string  { return string(e) }

// oneModelRegistry has an action for each way a call can fail.
func oneModelRegistry(t *testing.T, opts *Options) *Registry {
	reg := NewRegistry(opts)
	reg.MustRegister(
		New(Definition{ID: "m/strict", Parameters: `{"type":"object","required":["n"]}`},
			func(context.Context, map[string]any, *Trace) (any, error) { return "ok", nil }),
		New(Definition{ID: "m/admin", Capability: "admin"},
			func(context.Context, map[string]any, *Trace) (any, error) { return "admin", nil }),
		New(Definition{ID: "m/read", Effect: EffectRead},
			func(context.Context, map[string]any, *Trace) (any, error) { return "read", nil }),
		New(Definition{ID: "m/nested_invalid"}, func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			return tr.Call(ctx, "m/strict", nil)
		}),
		New(Definition{ID: "m/nested_forbidden"}, func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			return tr.Call(ctx, "m/admin", nil)
		}),
		New(Definition{ID: "m/wait"}, func(ctx context.Context, _ map[string]any, _ *Trace) (any, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("waiting: %w", ctx.Err())
		}),
		New(Definition{ID: "m/panic"}, func(context.Context, map[string]any, *Trace) (any, error) { panic("boom") }),
		New(Definition{ID: "m/output", OutputSchema: `{"type":"string"}`},
			func(context.Context, map[string]any, *Trace) (any, error) { return 1, nil }),
		New(Definition{ID: "m/domain", Refusals: []DeclaredRefusal{{Code: "tank_empty", Retry: codes.RetryAfterBackoff}}},
			func(context.Context, map[string]any, *Trace) (any, error) {
				return nil, NewRefusal("tank_empty", "the tank is empty")
			}),
		New(Definition{ID: "m/confirm", Effect: EffectDelete, NeedsConfirmation: true},
			func(context.Context, map[string]any, *Trace) (any, error) { return "deleted", nil }),
		New(Definition{ID: "m/body_plain"}, func(context.Context, map[string]any, *Trace) (any, error) {
			return nil, errors.New("disk full")
		}),
	)
	return reg
}

// failingStore runs each unit, then fails to keep it.
type failingStore struct{ err error }

func (s failingStore) Atomic(ctx context.Context, fn func(context.Context) store.Unit) ([]store.Record, error) {
	u := fn(ctx)
	for i := range u.Records {
		u.Records[i].RolledBack = true
	}
	return u.Records, errors.Join(u.Err, s.err)
}

// TestOneErrorModelCalls: the errors real calls return, one case per way
// a call fails, each checked against every sentinel, and the record (the
// host's view) where the caller's code differs from the host's.
func TestOneErrorModelCalls(t *testing.T) {
	ctx := context.Background()
	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
	type outcome struct {
		err  error
		recs []store.Record
	}
	run := func(reg *Registry, ctx context.Context, c Call) outcome {
		res, err := reg.Run(ctx, c)
		return outcome{err, res.Records}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	errDisk := errors.New("the disk is gone")
	cases := []struct {
		name string
		do   func(t *testing.T) outcome
		want codes.Code
		// host is the code the last record says, when it is not want;
		// hostDone, that the record says done (the unit was undone).
		host     codes.Code
		hostDone bool
		check    func(t *testing.T, o outcome)
	}{
		{name: "invalid parameters", want: codes.InvalidParameters, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/strict"})
		}},
		{name: "unknown action", want: codes.UnknownAction, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/none"})
		}},
		{name: "a body returns a nested call's refusal", want: codes.Internal, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/nested_invalid"})
		}, check: func(t *testing.T, o outcome) {
			r := asRefusal(o.err)
			assert.NotErrorIs(t, o.err, codes.InvalidParameters, "the caller's error is internal only")
			assert.Equal(t, codes.InvalidParameters, CodeOf(r.Cause()), "the host finds the nested refusal in Cause")
			assert.ErrorIs(t, r.Cause(), codes.InvalidParameters)
		}},
		{name: "a concealed forbidden call", want: codes.UnknownAction, host: codes.ForbiddenCapability, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/admin", Caller: ann})
		}, check: func(t *testing.T, o outcome) {
			assert.NotErrorIs(t, o.err, codes.ForbiddenCapability, "the caller learns nothing of the action")
			assert.Equal(t, codes.ForbiddenCapability, CodeOf(asRefusal(o.err).Cause()), "the host's code is the cause's")
			rec := o.recs[len(o.recs)-1]
			assert.Equal(t, codes.ForbiddenCapability, rec.Audit.Code)
		}},
		{name: "a concealed forbidden surface", want: codes.UnknownAction, host: codes.ForbiddenSurface, do: func(t *testing.T) outcome {
			reg := oneModelRegistry(t, nil)
			reg.MustRegister(New(Definition{ID: "m/ui_only", Surfaces: []identity.Surface{identity.SurfaceUI}},
				func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
			return run(reg, ctx, Call{Action: "m/ui_only", Caller: ann})
		}},
		{name: "a body returns a concealed nested refusal", want: codes.Internal, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/nested_forbidden", Caller: ann})
		}, check: func(t *testing.T, o outcome) {
			assert.NotErrorIs(t, o.err, codes.UnknownAction)
			assert.NotErrorIs(t, o.err, codes.ForbiddenCapability)
			step := o.recs[0].Entry.Steps[0].Call
			assert.Equal(t, codes.ForbiddenCapability, step.Error, "the nested entry has the host's code")
		}},
		{name: "cancelled before the call", want: codes.Cancelled, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), cancelled, Call{Action: "m/read"})
		}, check: func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, context.Canceled)
		}},
		{name: "cancelled in the body", want: codes.Cancelled, do: func(t *testing.T) outcome {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/wait"})
		}, check: func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, context.DeadlineExceeded)
			assert.NotErrorIs(t, o.err, codes.Internal)
		}},
		{name: "a panic", want: codes.Internal, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/panic"})
		}},
		{name: "an output breaking its schema", want: codes.OutputInvalid, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/output"})
		}, check: func(t *testing.T, o outcome) {
			var r *Refusal
			require.ErrorAs(t, o.err, &r)
			assert.NotEmpty(t, r.Issues, "the issues point into the result")
			assert.Nil(t, r.Cause())
		}},
		{name: "a domain refusal", want: "tank_empty", do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/domain"})
		}},
		{name: "a held call", want: codes.ConfirmationRequired, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/confirm", Caller: ann})
		}},
		{name: "an anonymous call needing confirmation", want: codes.ConfirmationRequired, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/confirm", Caller: &identity.Caller{Surface: identity.SurfaceUI}})
		}},
		{name: "insufficient scope", want: codes.InsufficientScope, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Action: "m/read", Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP, Token: true}})
		}},
		{name: "not serving", want: codes.NotServing, do: func(t *testing.T) outcome {
			s := &Serving{}
			s.StopAll()
			return run(oneModelRegistry(t, &Options{Gate: &GateOptions{Serving: s}}), ctx, Call{Action: "m/read", Caller: ann})
		}},
		{name: "read only", want: codes.ReadOnly, do: func(t *testing.T) outcome {
			s := &Serving{}
			s.SetReadOnly(true)
			return run(oneModelRegistry(t, &Options{Gate: &GateOptions{Serving: s}}), ctx, Call{Action: "m/strict", Caller: ann})
		}},
		{name: "rate limited", want: codes.RateLimited, do: func(t *testing.T) outcome {
			reg := oneModelRegistry(t, &Options{Gate: &GateOptions{Rate: 0.001, Burst: 1}})
			_, err := reg.Run(ctx, Call{Action: "m/read", Caller: ann})
			require.NoError(t, err)
			return run(reg, ctx, Call{Action: "m/read", Caller: ann})
		}},
		{name: "an unknown change", want: codes.UnknownChange, do: func(t *testing.T) outcome {
			res, err := oneModelRegistry(t, nil).Decide(ctx, Decision{Change: "0123", Confirm: true, Caller: ann})
			return outcome{err, res.Records}
		}},
		{name: "a confirmation refused by today's gate", want: codes.UnknownAction, host: codes.ForbiddenSurface, do: func(t *testing.T) outcome {
			// The approval lets the surface decide; the action is not
			// offered there.
			reg := oneModelRegistry(t, &Options{Gate: &GateOptions{DecideFrom: []identity.Surface{"elsewhere"}}})
			_, err := reg.Run(ctx, Call{Action: "m/confirm", Caller: ann})
			id := asRefusal(err).Pending.ID
			other := *ann
			other.Surface = "elsewhere"
			res, err := reg.Decide(ctx, Decision{Change: id, Confirm: true, Caller: &other})
			return outcome{err, res.Records}
		}},
		{name: "a batch step refused", want: codes.InvalidParameters, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Batch: &Batch{Steps: []Step{{Call: "m/read"}, {Call: "m/strict"}}}})
		}, check: func(t *testing.T, o outcome) {
			var se *StepError
			require.ErrorAs(t, o.err, &se)
			assert.Equal(t, 1, se.Index)
		}},
		{name: "a batch step concealed", want: codes.UnknownAction, host: codes.ForbiddenCapability, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Batch: &Batch{Steps: []Step{{Call: "m/read"}, {Call: "m/admin"}}}, Caller: ann})
		}, check: func(t *testing.T, o outcome) {
			var se *StepError
			require.ErrorAs(t, o.err, &se)
			assert.NotErrorIs(t, o.err, codes.ForbiddenCapability)
		}},
		{name: "a batch step returning a nested refusal", want: codes.Internal, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Batch: &Batch{Steps: []Step{{Call: "m/nested_invalid"}}}})
		}, check: func(t *testing.T, o outcome) {
			var se *StepError
			require.ErrorAs(t, o.err, &se)
			assert.NotErrorIs(t, o.err, codes.InvalidParameters)
		}},
		{name: "a batch step cancelled", want: codes.Cancelled, do: func(t *testing.T) outcome {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			return run(oneModelRegistry(t, nil), ctx, Call{Batch: &Batch{Steps: []Step{{Call: "m/wait"}}}})
		}, check: func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, context.DeadlineExceeded)
		}},
		{name: "a batch holding a step for confirmation", want: codes.ConfirmationRequired, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, nil), ctx, Call{Batch: &Batch{Steps: []Step{{Call: "m/read"}, {Call: "m/confirm"}}}, Caller: ann})
		}},
		{name: "a batch that cannot run", want: codes.InvalidScriptStep, do: func(t *testing.T) outcome {
			_, err := oneModelRegistry(t, nil).DecodeBatch([]byte(`{"commands":[{"call":"m/read","when":1}]}`))
			return outcome{err: err}
		}},
		{name: "a batch naming no earlier result", want: codes.UnknownReference, do: func(t *testing.T) outcome {
			_, err := oneModelRegistry(t, nil).DecodeBatch([]byte(`{"commands":[{"call":"m/read","with":{"x":"${q}"}}]}`))
			return outcome{err: err}
		}},
		{name: "a duplicate name", want: codes.DuplicateName, do: func(t *testing.T) outcome {
			err := oneModelRegistry(t, nil).Register(New(Definition{ID: "m/read"}, noTraceBody))
			return outcome{err: err}
		}},
		{name: "a definition refused", want: codes.ConstraintViolation, do: func(t *testing.T) outcome {
			err := oneModelRegistry(t, nil).Register(New(Definition{ID: "no_slash"}, noTraceBody))
			return outcome{err: err}
		}},
		{name: "the store fails", want: codes.Internal, hostDone: true, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, &Options{Store: failingStore{errDisk}}), ctx, Call{Action: "m/read"})
		}, check: func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, errDisk, "the store's error reaches the host")
			assert.True(t, o.recs[0].RolledBack)
		}},
		{name: "the store fails under a refusal", want: codes.InvalidParameters, do: func(t *testing.T) outcome {
			return run(oneModelRegistry(t, &Options{Store: failingStore{errDisk}}), ctx, Call{Action: "m/strict"})
		}},
		{name: "a replay that departs", want: codes.Diverged, do: func(t *testing.T) outcome {
			reg := oneModelRegistry(t, nil)
			res, err := reg.Run(ctx, Call{Action: "m/read"})
			require.NoError(t, err)
			rec := res.Records[0]
			rec.Entry.Result = `"something else"`
			_, err = reg.Replay(ctx, rec)
			return outcome{err: err}
		}, check: func(t *testing.T, o outcome) {
			var d *Divergence
			require.ErrorAs(t, o.err, &d)
			assert.Equal(t, "/result", d.Path)
		}},
		{name: "a replay refused by today's policy", want: codes.Diverged, do: func(t *testing.T) outcome {
			reg := oneModelRegistry(t, nil)
			admin := &identity.Caller{Principal: "root", Surface: identity.SurfaceMCP, Capabilities: []string{"admin"}}
			res, err := reg.Run(ctx, Call{Action: "m/admin", Caller: admin})
			require.NoError(t, err)
			rec := res.Records[0]
			rec.Audit.Caller = ann // today's caller lacks the capability
			_, err = reg.Replay(ctx, rec)
			return outcome{err: err}
		}, check: func(t *testing.T, o outcome) {
			var d *Divergence
			require.ErrorAs(t, o.err, &d)
			assert.Equal(t, codes.ForbiddenCapability, d.Code)
			assert.NotErrorIs(t, o.err, codes.UnknownAction, "a divergence is diverged only, whatever the replayed call gave")
			assert.NotErrorIs(t, o.err, codes.ForbiddenCapability)
		}},
		{name: "a replay cancelled", want: codes.Cancelled, do: func(t *testing.T) outcome {
			_, err := oneModelRegistry(t, nil).Replay(cancelled, store.Record{Entry: store.RunEntry{Action: "m/read", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone, Result: `"read"`}})
			return outcome{err: err}
		}, check: func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, context.Canceled)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.do(t)
			require.Error(t, o.err)
			assert.Equal(t, c.want, CodeOf(o.err), "%v", o.err)
			assertOneErrorModel(t, o.err, c.name)
			if len(o.recs) > 0 {
				host := c.want
				if c.host != "" {
					host = c.host
				}
				if c.hostDone {
					host = ""
				}
				last := o.recs[len(o.recs)-1]
				assert.Equal(t, host, last.Entry.Error, "the record's entry has the host's code")
			}
			if c.check != nil {
				c.check(t, o)
			}
		})
	}

	// A body's own plain error comes back as it is: the host's to match,
	// recorded as internal, matching no sentinel.
	res, err := oneModelRegistry(t, nil).Run(ctx, Call{Action: "m/body_plain"})
	assert.EqualError(t, err, "disk full")
	assert.Equal(t, codes.Internal, res.Entry().Error)
	assertOneErrorModel(t, err, "a body's plain error")
}

func noTraceBody(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }

// TestOneErrorModelRunFixtures runs every call of testdata/runs and
// checks each error it gives against every sentinel.
func TestOneErrorModelRunFixtures(t *testing.T) {
	fixtures := loadRunScenarios(t)
	require.NotEmpty(t, fixtures)
	names := make([]string, 0, len(fixtures))
	for n := range fixtures {
		names = append(names, n)
	}
	sort.Strings(names)
	errorsSeen := 0
	for _, name := range names {
		f := fixtures[name]
		t.Run(name, func(t *testing.T) {
			opts := &Options{}
			if f.Limits != nil {
				opts.Limits = *f.Limits
			}
			if f.Host != nil && f.Host.Instances != nil {
				opts.Resolve = f.Host.resolver()
			}
			reg := NewRegistry(opts)
			s := &runScripts{runs: map[string]*atomic.Int64{}, waiting: make(chan struct{}, 1)}
			for _, a := range f.Actions {
				require.NoError(t, reg.Register(Action{Definition: a.Definition, Run: s.body(t, a.Definition.ID, a.Script)}))
			}
			for i, c := range append([]runFollowUp{{f.Call, f.Expect}}, f.Then...) {
				var params any
				switch {
				case c.Call.ParamsText != nil:
					params = []byte(*c.Call.ParamsText)
				case c.Call.Params != nil:
					params = runExact(t, c.Call.Params)
				}
				ctx, cancel := context.WithCancel(context.Background())
				if c.Call.CancelBefore {
					cancel()
				}
				if c.Call.CancelDuring {
					go func() {
						select {
						case <-s.waiting:
						case <-time.After(5 * time.Second):
						}
						cancel()
					}()
				}
				res, err := reg.Run(ctx, Call{Action: c.Call.ID, Params: params})
				cancel()
				what := fmt.Sprintf("call %d (%s)", i, c.Call.ID)
				if err == nil {
					assert.Empty(t, c.Expect.ErrorCode, what)
					continue
				}
				errorsSeen++
				assertOneErrorModel(t, err, what)
				assert.Equal(t, CodeOf(err), res.Entry().Error, "%s: the entry records the code the caller sees", what)
				if c.Expect.ErrorIsContext {
					assert.ErrorIs(t, err, context.Canceled, what)
					assert.Equal(t, codes.Cancelled, CodeOf(err), what)
				}
				if c.Expect.NestedErrorCode != "" && codes.Code(c.Expect.NestedErrorCode) != codes.Internal {
					assert.Equal(t, codes.Internal, CodeOf(err), what)
					assert.NotErrorIs(t, err, sentinelOf(codes.Code(c.Expect.NestedErrorCode)), "%s: internal only", what)
				}
			}
		})
	}
	assert.Greater(t, errorsSeen, 20, "the fixtures' errors")
}

// registryCodes are the codes the registry raises itself, sorted: the
// keys of codes.Policies but the domain's.
func registryCodes() []codes.Code {
	var out []codes.Code
	for c := range codes.Policies() {
		if c != codes.Domain {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// TestRegistryCodeEveryCode: CodeOf reads a bare code the registry
// raises as internal (only the registry refuses with those), and any
// other bare code as itself, domain's key included.
func TestRegistryCodeEveryCode(t *testing.T) {
	require.Len(t, registryCodes(), len(codes.Policies())-1)
	for _, c := range registryCodes() {
		assert.True(t, registryCode(c), c)
		if c != codes.Diverged { // a bare diverged reads as a *Divergence does
			assert.Equal(t, codes.Internal, CodeOf(c), "a bare %s", c)
		}
	}
	for _, c := range []codes.Code{codes.Domain, "tank_empty"} {
		assert.False(t, registryCode(c), c)
		assert.Equal(t, c, CodeOf(c), "a bare %s", c)
	}
}

// TestBareCodeOneModel: a body that returns its own Code as its error
// (not a *Refusal) is read as that code by CodeOf, by errors.Is, in the
// run entry and in the audit, wrapped or not. A code the registry raises
// itself, returned bare, is the body's fault: internal.
func TestBareCodeOneModel(t *testing.T) {
	for name, err := range map[string]error{
		"bare":    codes.Code("tank_empty"),
		"wrapped": fmt.Errorf("filling: %w", codes.Code("tank_empty")),
		"gate":    codes.ReadOnly,
	} {
		t.Run(name, func(t *testing.T) {
			want := codes.Code("tank_empty")
			if name == "gate" {
				want = codes.Internal
			}
			assert.Equal(t, want, CodeOf(err))
			if name != "gate" {
				assert.ErrorIs(t, err, want)
			}
			var reg Registry
			reg.MustRegister(New(Definition{ID: "tank/fill"}, func(context.Context, map[string]any, *Trace) (any, error) {
				return nil, err
			}))
			res, got := reg.Run(context.Background(), Call{Action: "tank/fill"})
			require.Error(t, got)
			assert.Equal(t, want, CodeOf(got))
			assert.Equal(t, want, res.Entry().Error)
			assert.Equal(t, want, res.Records[0].Audit.Code)
		})
	}
	assert.Equal(t, codes.Internal, CodeOf(codes.Code("")), "the empty code is internal")
}

// TestResultTextOfNoResult: a call done with no result gives a nil Value
// and an empty Text, as Result.Text says; a result gives its canonical
// JSON.
func TestResultTextOfNoResult(t *testing.T) {
	var reg Registry
	reg.MustRegister(
		New(Definition{ID: "a/none"}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }),
		New(Definition{ID: "a/some"}, func(context.Context, map[string]any, *Trace) (any, error) {
			return map[string]any{"b": 1, "a": "x"}, nil
		}),
	)
	res, err := reg.Run(context.Background(), Call{Action: "a/none"})
	require.NoError(t, err)
	assert.Nil(t, res.Value)
	assert.Empty(t, res.Text)
	res, err = reg.Run(context.Background(), Call{Action: "a/some"})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"x","b":1}`, res.Text)
}
