package pages

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// The pages, each a template under templates/ with the layout.
var pageNames = []string{"pending", "change", "result", "log", "record", "error"}

func (h *Handler) parse() error {
	funcs := template.FuncMap{
		"time": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2 Jan 2006, 15:04:05 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"ago": h.ago,
		"effect": func(e string) string {
			switch e {
			case "read":
				return "Reads only: changes nothing"
			case "delete":
				return "Deletes data"
			}
			return "Writes data"
		},
		"plural": func(n int, one, many string) string {
			if n == 1 {
				return "1 " + one
			}
			return strconv.Itoa(n) + " " + many
		},
		"pretty": pretty,
	}
	h.tmpl = map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/values.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("pages: %s: %w", name, err)
		}
		h.tmpl[name] = t
	}
	return nil
}

// ago says how far t is from now, in words ("in 6 days", "3 minutes ago").
func (h *Handler) ago(t time.Time) string {
	d := t.Sub(h.o.Now())
	future := d > 0
	if !future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		s = plural(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		s = plural(int(d/time.Hour), "hour")
	default:
		s = plural(int(d/(24*time.Hour)), "day")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

type changeRow struct {
	change
	Link        string
	Destructive bool
}

func (h *Handler) pendingList(w http.ResponseWriter, r *http.Request) {
	changes, err := h.pending(r.Context(), h.who(r))
	if err != nil {
		h.failed(w, r, err)
		return
	}
	rows := make([]changeRow, len(changes))
	for i, c := range changes {
		rows[i] = changeRow{change: c, Link: h.link("changes", c.ID)}
		for _, call := range c.Calls {
			rows[i].Destructive = rows[i].Destructive || call.Destructive
		}
	}
	h.render(w, r, http.StatusOK, "pending", "Pending changes", "pending", rows)
}

type callView struct {
	call
	N      int
	Params *node
	Flags  []flag
}

type changeView struct {
	change
	Calls         []callView
	Destructive   bool
	Flags         int
	Confirm       string // the form's target
	Reject        string
	Edit          string // "" when the change may not be edited (a batch)
	ConfirmToken  string
	RejectToken   string
	EditToken     string
	PendingLink   string
	ConfirmButton string
}

func (h *Handler) changeScreen(w http.ResponseWriter, r *http.Request) {
	who := h.who(r)
	id := r.PathValue("id")
	c, err := h.change(r.Context(), id, who)
	if err != nil {
		h.undecidable(w, r, id, err)
		return
	}
	v := changeView{change: c, PendingLink: h.link()}
	for i, call := range c.Calls {
		t := &tree{}
		cv := callView{call: call, N: i + 1, Params: t.parse(call.Parameters), Flags: t.flags}
		v.Calls = append(v.Calls, cv)
		v.Destructive = v.Destructive || call.Destructive
		v.Flags += len(t.flags)
	}
	v.Confirm = h.link("changes", c.ID, "confirm")
	v.Reject = h.link("changes", c.ID, "reject")
	v.ConfirmToken = h.token(who, v.Confirm)
	v.RejectToken = h.token(who, v.Reject)
	if c.Editable {
		v.Edit = h.link("changes", c.ID, "edit")
		v.EditToken = h.token(who, v.Edit)
	}
	v.ConfirmButton = "Confirm"
	if v.Destructive {
		v.ConfirmButton = "Confirm and " + verb(c.Calls)
	}
	title := "Confirm a change"
	if len(c.Calls) > 0 && c.Calls[0].Title != "" {
		title = c.Calls[0].Title
	}
	h.render(w, r, http.StatusOK, "change", title, "pending", v)
}

// verb is the destructive button's word for what the change does.
func verb(calls []call) string {
	for _, c := range calls {
		if c.Effect == "delete" {
			return "delete"
		}
	}
	return "overwrite"
}

type resultView struct {
	Kind        string // done, refused, rejected, expired, decided
	ID          string
	Decision    decision
	Result      *node
	RecordLink  string
	PendingLink string
}

// undecidable answers a change that cannot be shown or decided.
func (h *Handler) undecidable(w http.ResponseWriter, r *http.Request, id string, err error) {
	v := resultView{ID: id, PendingLink: h.link()}
	switch {
	case errors.Is(err, errExpired):
		v.Kind = "expired"
		h.render(w, r, http.StatusGone, "result", "This change expired", "pending", v)
	case errors.Is(err, errDecided):
		v.Kind = "decided"
		h.render(w, r, http.StatusConflict, "result", "This change was already decided", "pending", v)
	default:
		h.failed(w, r, err)
	}
}

func (h *Handler) decidePost(w http.ResponseWriter, r *http.Request) {
	who := h.who(r)
	id := r.PathValue("id")
	var confirm bool
	var edit *string
	switch r.PathValue("decision") {
	case "confirm":
		confirm = true
	case "edit":
		text := r.PostFormValue("params")
		edit = &text
	case "reject":
	default:
		h.fail(w, r, http.StatusNotFound)
		return
	}
	if !h.checkToken(r, who) {
		h.fail(w, r, http.StatusForbidden)
		return
	}
	d, err := h.decide(r.Context(), id, confirm, edit, who)
	if err != nil {
		h.undecidable(w, r, id, err)
		return
	}
	v := resultView{ID: id, Decision: d, PendingLink: h.link()}
	if d.Record != "" {
		v.RecordLink = h.link("log", d.Record)
	}
	title := "Rejected: nothing ran"
	switch {
	case !d.Confirmed:
		v.Kind = "rejected"
	case d.Held:
		v.Kind = "held"
		title = "Edited: it waits for another person"
	case d.Outcome == string(store.OutcomeDone):
		v.Kind = "done"
		v.Result = (&tree{}).parse(d.Result)
		title = "Done"
	default:
		v.Kind = "refused"
		title = "Confirmed, but the call was refused"
	}
	h.render(w, r, http.StatusOK, "result", title, "pending", v)
}

// The outcomes the run log's filter offers.
var outcomeChoices = []struct{ Value, Label string }{
	{"", "Any outcome"}, {"done", "Done"}, {"refused", "Refused"}, {"held", "Held for confirmation"},
	{"confirmed", "Confirmed"}, {"rejected", "Rejected"},
}

type logView struct {
	Q        query
	Since    string // as the form's datetime-local inputs hold them (UTC)
	Until    string
	Outcomes []struct{ Value, Label string }
	Rows     []recordRow
	Next     string // link to the next page
	First    string // link to the first page, when not on it
	Problem  string
}

type recordRow struct {
	record
	Link    string
	Outcome string
	Tone    string // the badge's colour: ok, bad, held
	Caller  string
}

const formTime = "2006-01-02T15:04"

func (h *Handler) logPage(w http.ResponseWriter, r *http.Request) {
	f := r.URL.Query()
	q := query{Action: strings.TrimSpace(f.Get("action")), Outcome: f.Get("outcome"), Code: strings.TrimSpace(f.Get("code")),
		Caller: strings.TrimSpace(f.Get("caller")), Cursor: f.Get("cursor"), Limit: h.o.PageSize}
	v := logView{Q: q, Since: f.Get("since"), Until: f.Get("until"), Outcomes: outcomeChoices}
	known := false
	for _, o := range outcomeChoices {
		known = known || o.Value == q.Outcome
	}
	var bad []string
	if !known {
		bad = append(bad, "the outcome")
		q.Outcome = ""
	}
	if q.Code != "" && q.Outcome == "" {
		q.Outcome = "refused"
		v.Q.Outcome = "refused"
	}
	for _, t := range []struct {
		text string
		to   *time.Time
		name string
	}{{v.Since, &q.Since, "“from”"}, {v.Until, &q.Until, "“until”"}} {
		if t.text == "" {
			continue
		}
		at, err := time.ParseInLocation(formTime, t.text, time.UTC)
		if err != nil {
			bad = append(bad, t.name)
			continue
		}
		*t.to = at
	}
	if len(bad) > 0 {
		v.Problem = "Not understood, so not applied: " + strings.Join(bad, ", ") + "."
	}
	page, err := h.records(r.Context(), q, h.who(r))
	if err != nil {
		if q.Cursor != "" {
			h.fail(w, r, http.StatusBadRequest)
			return
		}
		h.failed(w, r, err)
		return
	}
	for _, rec := range page.Records {
		v.Rows = append(v.Rows, h.row(rec))
	}
	if page.Next != "" {
		f.Set("cursor", page.Next)
		v.Next = h.link("log") + "?" + f.Encode()
	}
	if q.Cursor != "" {
		f.Del("cursor")
		v.First = h.link("log") + "?" + f.Encode()
	}
	h.render(w, r, http.StatusOK, "log", "Run log", "log", v)
}

func (h *Handler) row(rec record) recordRow {
	row := recordRow{record: rec, Link: h.link("log", rec.ID), Caller: "host"}
	if rec.Audit != nil && rec.Audit.Caller != nil {
		row.Caller = rec.Audit.Caller.Principal
	}
	e := rec.Entry
	switch {
	case e.Error == codes.ConfirmationRequired:
		row.Outcome, row.Tone = "held", "held"
	case e.Error == codes.Rejected:
		row.Outcome, row.Tone = "rejected", ""
	case rec.Audit != nil && rec.Audit.PendingChange != "" && e.Outcome == store.OutcomeDone:
		row.Outcome, row.Tone = "confirmed · done", "ok"
	case rec.Audit != nil && rec.Audit.PendingChange != "":
		row.Outcome, row.Tone = "confirmed · refused: "+string(e.Error), "bad"
	case e.Outcome == store.OutcomeDone:
		row.Outcome, row.Tone = "done", "ok"
	default:
		row.Outcome, row.Tone = "refused: "+string(e.Error), "bad"
	}
	return row
}

type stepView struct {
	N       int
	Command *node
	Result  *node
	Call    *entryView
}

type entryView struct {
	Action string
	Row    recordRow
	Params *node
	Result *node
	Error  string
	Steps  []stepView
}

type recordView struct {
	recordRow
	Main       *entryView
	Cut        bool
	JSONLink   string
	ChangeLink string
	Replay     *replayed
	CanReplay  bool
	ReplayURL  string
	ReplayTok  string
}

func (h *Handler) entry(t *tree, e store.RunEntry, depth int) *entryView {
	v := &entryView{Action: e.Action, Params: t.parse(e.Parameters), Result: t.parse(e.Result), Error: string(e.Error)}
	if depth > 64 {
		return v
	}
	for i, s := range e.Steps {
		sv := stepView{N: i + 1}
		if s.Call != nil {
			sv.Call = h.entry(t, *s.Call, depth+1)
		} else {
			sv.Command = t.parse(string(s.Command))
			sv.Result = t.parse(s.Result)
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

func (h *Handler) recordPage(w http.ResponseWriter, r *http.Request) {
	h.showRecord(w, r, nil)
}

func (h *Handler) showRecord(w http.ResponseWriter, r *http.Request, rp *replayed) {
	who := h.who(r)
	rec, err := h.record(r.Context(), r.PathValue("id"), who)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	t := &tree{cut: h.o.Cut}
	v := recordView{recordRow: h.row(rec), JSONLink: h.link("log", rec.ID, "entry.json"), Replay: rp}
	v.Main = h.entry(t, rec.Entry, 0)
	v.Cut = t.cuts > 0
	v.ReplayURL = h.link("log", rec.ID, "replay")
	v.ReplayTok = h.token(who, v.ReplayURL)
	v.CanReplay = h.o.Replayer != nil
	h.render(w, r, http.StatusOK, "record", "Record "+rec.ID+": "+rec.Entry.Action, "log", v)
}

func (h *Handler) recordJSON(w http.ResponseWriter, r *http.Request) {
	rec, err := h.record(r.Context(), r.PathValue("id"), h.who(r))
	if err != nil {
		h.failed(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", "inline; filename=\"entry-"+url.PathEscape(rec.ID)+".json\"")
	_, _ = w.Write([]byte(rec.Text))
}

func (h *Handler) replayPost(w http.ResponseWriter, r *http.Request) {
	who := h.who(r)
	if h.o.Replayer == nil {
		h.fail(w, r, http.StatusNotFound)
		return
	}
	if !h.checkToken(r, who) {
		h.fail(w, r, http.StatusForbidden)
		return
	}
	rp, err := h.replay(r.Context(), r.PathValue("id"), who)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	h.showRecord(w, r, &rp)
}
