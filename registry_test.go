package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// The format of testdata/runs/*.json is described in testdata/runs/README.md.

type runScenario struct {
	Description string        `json:"description"`
	Limits      *Limits       `json:"limits"`
	Actions     []runAction   `json:"actions"`
	Host        *runHost      `json:"host"`
	NoHost      bool          `json:"no_host"`
	Call        runCall       `json:"call"`
	Expect      runExpect     `json:"expect"`
	Then        []runFollowUp `json:"then"`
}

type runFollowUp struct {
	Call   runCall   `json:"call"`
	Expect runExpect `json:"expect"`
}

type runAction struct {
	Definition Definition    `json:"definition"`
	Script     []runScriptOp `json:"script"`
}

type runHost struct {
	Instances map[string][]refFixture `json:"instances"`
	// KeysResolve makes the resolver give an instance's key back for
	// itself, as RefMatches.ID.
	KeysResolve bool `json:"keys_resolve"`
}

// resolver is the fixture host's ref resolver.
func (h *runHost) resolver() RefResolver {
	byIDOrName := fixtureResolver(h.Instances)
	if !h.KeysResolve {
		return byIDOrName
	}
	return func(ctx context.Context, schema, value string) (RefMatches, error) {
		for _, in := range h.Instances[schema] {
			if in.Key == value {
				k := in.Key
				return RefMatches{ID: &k}, nil
			}
		}
		return byIDOrName(ctx, schema, value)
	}
}

type runCall struct {
	ID           string          `json:"id"`
	Params       json.RawMessage `json:"params"`
	ParamsText   *string         `json:"params_text"`
	CancelBefore bool            `json:"cancel_before"`
	CancelDuring bool            `json:"cancel_during"`
}

type runExpect struct {
	Entry          json.RawMessage `json:"entry"`
	Result         json.RawMessage `json:"result"`
	ErrorCode      string          `json:"error_code"`
	ErrorText      string          `json:"error_text"` // err.Error(), whole
	ErrorIsPlain   bool            `json:"error_is_plain"`
	ErrorIsContext bool            `json:"error_is_context"`
	Retry          codes.Retry     `json:"retry"`
	Transport      codes.Transport `json:"transport"`
	Issues         []runIssue      `json:"issues"`
	CauseContains  string          `json:"cause_contains"`
	// The refusal a nested call gave the body, which the body returned:
	// the host finds it whole in errors.Unwrap of the caller's refusal.
	NestedErrorCode string           `json:"nested_error_code"`
	NestedRetry     codes.Retry      `json:"nested_retry"`
	NestedTransport codes.Transport  `json:"nested_transport"`
	NestedIssues    []runIssue       `json:"nested_issues"`
	OnEntryCalls    *int             `json:"on_entry_calls"`
	BodyRuns        map[string]int64 `json:"body_runs"`
}

type runIssue struct {
	Path    string `json:"path"`
	Keyword string `json:"keyword"`
}

// runScriptOp is one step of a fixture body; exactly one verb is set.
type runScriptOp struct {
	Command         json.RawMessage `json:"command"`
	Result          json.RawMessage `json:"result"`
	Call            string          `json:"call"`
	With            json.RawMessage `json:"with"`
	WithText        *string         `json:"with_text"`
	As              string          `json:"as"`
	ContinueOnError bool            `json:"continue_on_error"`
	Return          json.RawMessage `json:"return"`
	Fail            *struct {
		Code       codes.Code  `json:"code"`
		Message    string      `json:"message"`
		Retry      codes.Retry `json:"retry"`
		NextAction string      `json:"next_action"`
	} `json:"fail"`
	Error         *string `json:"error"`
	Panic         *string `json:"panic"`
	WaitForCancel bool    `json:"wait_for_cancel"`
}

func (op runScriptOp) verbs() int {
	n := 0
	for _, set := range []bool{op.Command != nil, op.Call != "", op.Return != nil, op.Fail != nil,
		op.Error != nil, op.Panic != nil, op.WaitForCancel} {
		if set {
			n++
		}
	}
	return n
}

// runStrictDecode decodes a fixture file refusing unknown fields, so that a
// misspelt key fails the test instead of being ignored.
func runStrictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// runExact decodes fixture JSON keeping numbers as their exact text.
func runExact(t testing.TB, raw []byte) any {
	t.Helper()
	v, err := ijson.Decode(raw, 0)
	require.NoError(t, err, "fixture value %s", raw)
	return v
}

// runCanonical is the RFC 8785 text of fixture JSON.
func runCanonical(t testing.TB, raw []byte) string {
	t.Helper()
	// The entry's form: a number a double does not hold keeps its digits.
	text, err := exactText(runExact(t, raw))
	require.NoError(t, err)
	return text
}

// runScripts interprets the scripts of one fixture and keeps what the
// test asserts on: how often each body ran and the plain errors bodies
// returned.
type runScripts struct {
	runs    map[string]*atomic.Int64
	waiting chan struct{} // signalled once by the first wait_for_cancel

	mu    sync.Mutex
	plain []error
}

var runNameRef = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// runSubstitute replaces, at any depth, each string "$params" by the body's
// parameters and "$name" by the result a call stored under that name.
func runSubstitute(v any, params map[string]any, vars map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		if !runNameRef.MatchString(v) {
			return v, nil
		}
		if v == "$params" {
			return params, nil
		}
		r, ok := vars[v[1:]]
		if !ok {
			return nil, fmt.Errorf("fixture: %s names no earlier call", v)
		}
		return r, nil
	case map[string]any:
		for k, e := range v {
			s, err := runSubstitute(e, params, vars)
			if err != nil {
				return nil, err
			}
			v[k] = s
		}
	case []any:
		for i, e := range v {
			s, err := runSubstitute(e, params, vars)
			if err != nil {
				return nil, err
			}
			v[i] = s
		}
	}
	return v, nil
}

func (s *runScripts) body(t *testing.T, id string, script []runScriptOp) Body {
	count := &atomic.Int64{}
	s.runs[id] = count
	value := func(raw json.RawMessage, params map[string]any, vars map[string]any) (any, error) {
		if raw == nil {
			return nil, nil
		}
		return runSubstitute(runExact(t, raw), params, vars)
	}
	return func(ctx context.Context, params map[string]any, tr *Trace) (any, error) {
		count.Add(1)
		if tr == nil || tr.Action() != id {
			return nil, fmt.Errorf("fixture: the body of %s got the wrong trace", id)
		}
		vars := map[string]any{}
		for _, op := range script {
			switch {
			case op.Command != nil:
				cmd, err := value(op.Command, params, vars)
				if err != nil {
					return nil, err
				}
				res, err := value(op.Result, params, vars)
				if err != nil {
					return nil, err
				}
				if err := tr.Command(cmd, res); err != nil {
					return nil, err
				}
			case op.Call != "":
				var with any
				if op.WithText != nil {
					with = []byte(*op.WithText)
				} else if op.With != nil {
					w, err := value(op.With, params, vars)
					if err != nil {
						return nil, err
					}
					with = w
				}
				res, err := tr.Call(ctx, op.Call, with)
				if err != nil && !op.ContinueOnError {
					return nil, err
				}
				if op.As != "" {
					vars[op.As] = res
				}
			case op.Return != nil:
				return value(op.Return, params, vars)
			case op.Fail != nil:
				r := NewRefusal(op.Fail.Code, op.Fail.Message)
				if op.Fail.Retry != "" {
					r.Retry = op.Fail.Retry
				}
				if op.Fail.NextAction != "" {
					r.NextAction = op.Fail.NextAction
				}
				return nil, r
			case op.Error != nil:
				err := errors.New(*op.Error)
				s.mu.Lock()
				s.plain = append(s.plain, err)
				s.mu.Unlock()
				return nil, err
			case op.Panic != nil:
				panic(*op.Panic)
			case op.WaitForCancel:
				select {
				case s.waiting <- struct{}{}:
				default:
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(10 * time.Second):
					return nil, errors.New("fixture: the context was never cancelled")
				}
			}
		}
		return nil, nil
	}
}

func loadRunScenarios(t *testing.T) map[string]runScenario {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "runs", "*.json"))
	require.NoError(t, err)
	out := map[string]runScenario{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		var f runScenario
		require.NoError(t, runStrictDecode(b, &f), n)
		out[strings.TrimSuffix(filepath.Base(n), ".json")] = f
	}
	return out
}

func TestRunFixtures(t *testing.T) {
	fixtures := loadRunScenarios(t)
	require.GreaterOrEqual(t, len(fixtures), 28, "fixtures in testdata/runs")
	names := make([]string, 0, len(fixtures))
	for n := range fixtures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := fixtures[name]
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, f.Description, "a fixture says what it shows")
			opts := &Options{}
			if f.Limits != nil {
				opts.Limits = *f.Limits
			}
			var entries []store.RunEntry
			var entriesMu sync.Mutex
			if !f.NoHost {
				opts.OnRecord = func(rec store.Record) {
					entriesMu.Lock()
					entries = append(entries, rec.Entry)
					entriesMu.Unlock()
				}
				if f.Host != nil && f.Host.Instances != nil {
					opts.Resolve = f.Host.resolver()
				}
			} else {
				require.Nil(t, f.Host, "no_host excludes host")
			}
			reg := NewRegistry(opts)
			s := &runScripts{runs: map[string]*atomic.Int64{}, waiting: make(chan struct{}, 1)}
			for _, a := range f.Actions {
				for i, op := range a.Script {
					require.Equal(t, 1, op.verbs(), "%s: script op %d needs exactly one verb", a.Definition.ID, i)
				}
				require.NoError(t, reg.Register(Action{Definition: a.Definition, Run: s.body(t, a.Definition.ID, a.Script)}))
			}
			observed := !f.NoHost
			calls := append([]runFollowUp{{f.Call, f.Expect}}, f.Then...)
			for i, c := range calls {
				t.Run(fmt.Sprintf("call%d_%s", i, c.Call.ID), func(t *testing.T) {
					entriesMu.Lock()
					entries = nil
					entriesMu.Unlock()
					for _, n := range s.runs {
						n.Store(0)
					}
					s.mu.Lock()
					s.plain = nil
					s.mu.Unlock()
					checkRunCall(t, reg, observed, s, c.Call, c.Expect, func() []store.RunEntry {
						entriesMu.Lock()
						defer entriesMu.Unlock()
						return append([]store.RunEntry(nil), entries...)
					})
				})
			}
		})
	}
}

func checkRunCall(t *testing.T, reg *Registry, observed bool, s *runScripts,
	c runCall, want runExpect, seen func() []store.RunEntry) {
	var params any
	var before string
	switch {
	case c.ParamsText != nil:
		require.Nil(t, c.Params, "params and params_text exclude each other")
		params = []byte(*c.ParamsText)
		before = *c.ParamsText
	case c.Params != nil:
		params = runExact(t, c.Params)
		before = runCanonical(t, c.Params)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.CancelBefore {
		cancel()
	}
	if c.CancelDuring {
		go func() {
			select {
			case <-s.waiting:
			case <-time.After(5 * time.Second):
			}
			cancel()
		}()
	}

	res, err := reg.Run(ctx, Call{Action: c.ID, Params: params})
	result, entry := res.Value, res.Entry()
	require.Len(t, res.Records, 1, "one record per call")

	// The caller's parameters are never changed.
	switch p := params.(type) {
	case []byte:
		assert.Equal(t, before, string(p), "the caller's JSON text changed")
	case map[string]any:
		after, cerr := CanonicalJSON(p)
		require.NoError(t, cerr)
		assert.Equal(t, before, string(after), "the caller's parameters changed")
	}

	// The entry, byte for byte in canonical form.
	require.NotNil(t, want.Entry, "every fixture call expects an entry")
	got, cerr := CanonicalJSON(entry)
	require.NoError(t, cerr)
	assert.Equal(t, runCanonical(t, want.Entry), string(got), "entry")
	checkRunEntryShape(t, entry)

	// OnRecord, once per top-level call, with the same entry.
	calls := seen()
	wantCalls := 1
	if !observed {
		wantCalls = 0
	}
	if want.OnEntryCalls != nil {
		wantCalls = *want.OnEntryCalls
	}
	require.Len(t, calls, wantCalls, "OnRecord calls")
	for _, e := range calls {
		text, cerr := CanonicalJSON(e)
		require.NoError(t, cerr)
		assert.Equal(t, string(got), string(text), "OnRecord received another entry")
	}

	// The result, as the exact Go value the body returned.
	if want.Result != nil {
		assert.Equal(t, runExact(t, want.Result), result, "result")
	}

	// The error.
	switch {
	case want.ErrorIsPlain:
		require.Error(t, err)
		var r *Refusal
		assert.False(t, errors.As(err, &r), "a plain error must not become a refusal: %v", err)
		s.mu.Lock()
		plain := append([]error(nil), s.plain...)
		s.mu.Unlock()
		require.NotEmpty(t, plain, "no body returned a plain error")
		assert.Same(t, plain[len(plain)-1], err, "the plain error must come back as it is")
	case want.ErrorIsContext:
		// A cancelled call is the cancelled refusal, its cause the
		// context's error: both errors.Is hold, and CodeOf agrees.
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, codes.Cancelled)
		assert.Equal(t, codes.Cancelled, CodeOf(err))
	case want.ErrorCode != "":
		require.Error(t, err)
		var r *Refusal
		require.True(t, errors.As(err, &r), "want a *Refusal, got %T: %v", err, err)
		assert.Equal(t, codes.Code(want.ErrorCode), r.Code, "code of %v", err)
		if want.ErrorText != "" {
			assert.Equal(t, want.ErrorText, err.Error())
		}
		if sentinel := sentinelOf(r.Code); sentinel != nil {
			assert.ErrorIs(t, err, sentinel)
		}
		if want.Retry != "" {
			assert.Equal(t, want.Retry, r.Retry, "retry")
		}
		if want.Transport != "" {
			assert.Equal(t, want.Transport, r.Transport, "transport")
		}
		if want.Issues != nil {
			var gotIssues []runIssue
			for _, is := range r.Issues {
				gotIssues = append(gotIssues, runIssue{is.Path, is.Keyword})
			}
			assert.Equal(t, want.Issues, gotIssues, "issues")
		}
		if want.NestedErrorCode != "" {
			var nr *Refusal
			require.True(t, errors.As(r.Cause(), &nr), "the nested refusal is the cause: %v", err)
			if nr.Code != r.Code {
				assert.NotErrorIs(t, err, sentinelOf(nr.Code), "errors.Is sees the caller's code only")
			}
			assert.Equal(t, codes.Code(want.NestedErrorCode), nr.Code)
			if want.NestedRetry != "" {
				assert.Equal(t, want.NestedRetry, nr.Retry, "nested retry")
			}
			if want.NestedTransport != "" {
				assert.Equal(t, want.NestedTransport, nr.Transport, "nested transport")
			}
			if want.NestedIssues != nil {
				var gotIssues []runIssue
				for _, is := range nr.Issues {
					gotIssues = append(gotIssues, runIssue{is.Path, is.Keyword})
				}
				assert.Equal(t, want.NestedIssues, gotIssues, "nested issues")
			}
		}
		if want.CauseContains != "" {
			require.Error(t, r.Cause(), "the refusal keeps its cause for the host")
			var chain strings.Builder
			next := func(e error) error {
				if r, ok := e.(*Refusal); ok {
					return r.Cause()
				}
				return errors.Unwrap(e)
			}
			for c := r.Cause(); c != nil; c = next(c) {
				chain.WriteString(c.Error())
			}
			assert.Contains(t, chain.String(), want.CauseContains)
			assert.NotContains(t, r.Message, want.CauseContains, "the cause leaked into the message")
			assert.NotContains(t, r.NextAction, want.CauseContains, "the cause leaked into the next action")
		}
	default:
		require.NoError(t, err)
	}

	for id, n := range want.BodyRuns {
		counter, ok := s.runs[id]
		require.True(t, ok, "body_runs names %s, which the fixture does not register", id)
		assert.Equal(t, n, counter.Load(), "runs of the body of %s", id)
	}
}

// checkRunEntryShape asserts what every entry holds, at every depth: an
// action, canonical parameters, non-nil steps of one kind each, an outcome
// with an error code exactly when refused, and a canonical result only
// when done.
func checkRunEntryShape(t testing.TB, e store.RunEntry) {
	t.Helper()
	assert.NotEmpty(t, e.Action)
	assertRunCanonical(t, e.Parameters, "parameters of %s", e.Action)
	assert.NotNil(t, e.Steps, "steps of %s", e.Action)
	switch e.Outcome {
	case store.OutcomeDone:
		assert.Empty(t, e.Error, "a done call has no error code")
	case store.OutcomeRefused:
		assert.NotEmpty(t, e.Error, "a refused call has an error code")
		assert.Empty(t, e.Result, "a refused call has no result")
	default:
		t.Errorf("outcome %q of %s", e.Outcome, e.Action)
	}
	if e.Result != "" {
		assertRunCanonical(t, e.Result, "result of %s", e.Action)
	}
	for _, s := range e.Steps {
		if s.Call != nil {
			assert.Nil(t, s.Command, "a step is a command or a call")
			assert.Empty(t, s.Result, "a call step keeps its result in its entry")
			checkRunEntryShape(t, *s.Call)
			continue
		}
		require.NotEmpty(t, s.Command, "a step is a command or a call")
		assertRunCanonical(t, string(s.Command), "command of %s", e.Action)
		if s.Result != "" {
			assertRunCanonical(t, s.Result, "command result of %s", e.Action)
		}
	}
}

func assertRunCanonical(t testing.TB, text string, msg string, args ...any) {
	t.Helper()
	// The entry's form: RFC 8785, but a number a double does not hold
	// keeps its digits (docs/runlog.md).
	again, err := exactText(json.RawMessage(text))
	if assert.NoError(t, err, msg, args) {
		assert.Equal(t, text, again, msg, args)
	}
}
