// Package pages serves the screens a person uses beside an action registry:
// the confirmation screen of a pending change, the list of the person's
// pending changes, and the run log with one page per record.
//
// A host mounts the [Handler] under a path of its own, behind its own
// authentication, and tells the pages who the person is for each request
// (Options.Caller). Every page is rendered on the server with html/template
// from embedded files; forms work without JavaScript and the pages run no
// script at all. Every POST carries a CSRF token bound to the person and
// the form's target. Every answer sends a Content-Security-Policy that
// allows no script and no framing, X-Frame-Options DENY and
// Cache-Control: no-store.
//
// The pages stand on the library's call path: an [*actions.Registry]
// decides the changes and a [*sqlstore.Store] holds its run log, which the
// pages read with [sqlstore.Store.Read]. They run no SQL of their own.
package pages

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/sqlstore"
)

//go:embed templates/*.html static/*
var files embed.FS

// Options configures a [Handler]. Every field is optional; the zero value
// serves pages nobody can open (no Caller: every request answers 401).
type Options struct {
	// Caller says who the person of a request is: the host's own
	// sign-in (a session cookie, a header its proxy sets). Nil, or a
	// caller with no principal, is nobody: the pages then answer 401 and
	// show nothing. It is called once per request (not for the
	// stylesheet) and may be called concurrently.
	Caller func(*http.Request) *identity.Caller
	// SeesAll says who may read every record of the run log; the others
	// read their own calls only. Nil: nobody sees all. It may be called
	// concurrently.
	SeesAll func(*identity.Caller) bool
	// Replayer, when set, puts a button on each record's page that
	// replays the record's call on it ([actions.Registry.Replay]) and
	// shows what the replay found. It is a registry of the same actions
	// on a store where replaying does no harm (a copy, a fresh model):
	// never the live registry, whose store would keep a replay that
	// matches. Nil: no replay.
	Replayer *actions.Registry
	// Base is the path the host mounts the handler at, without a
	// trailing slash ("" or "/ui"); the pages link below it.
	Base string
	// Title names the product in each page's header (default "Actions").
	Title string
	// CSRFKey signs the forms' tokens (nil: 32 random bytes, so that
	// forms from before a restart, or from another replica, are refused:
	// share a key between replicas).
	CSRFKey []byte
	// CSRFFor is how long a form's token is accepted (default 12 h).
	CSRFFor time.Duration
	// PageSize is the run log's page size (default 25, at most 200).
	PageSize int
	// Cut is how many members of an array or object the run log's pages
	// show before cutting the value (default 64); a string is cut at
	// eight times as many characters (default 512). The confirmation
	// screen cuts nothing, and each record links to its whole entry.
	Cut int
	// Now is the clock of the forms' tokens and of the "in 6 days" the
	// pages write (nil: time.Now). Whether a change expired is the
	// registry's to say, on its own clock.
	Now func() time.Time
	// Logger receives the errors of the registry and the store, which
	// the person sees only as "something went wrong" (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// Handler serves the pages. It is safe for concurrent use.
type Handler struct {
	reg    *actions.Registry
	store  *sqlstore.Store
	o      Options
	mux    *http.ServeMux
	tmpl   map[string]*template.Template
	static http.Handler
}

// New returns the pages of reg, whose run log and pending changes store
// keeps: reg's Options.Store is store and its gate's pending store is
// store.Pending(). The pages decide changes through reg
// ([actions.Registry.PendingChanges], [actions.Registry.PendingChange],
// [actions.Registry.Decide]) and read the log with [sqlstore.Store.Read];
// they hold no state beyond the CSRF key. opts may be nil (see
// [Options]).
//
// Errors: a nil reg or store; crypto/rand failing to give a CSRF key.
func New(reg *actions.Registry, store *sqlstore.Store, opts *Options) (*Handler, error) {
	if reg == nil || store == nil {
		return nil, errors.New("pages: New needs a registry and its store")
	}
	h := &Handler{reg: reg, store: store}
	if opts != nil {
		h.o = *opts
	}
	h.o.Base = strings.TrimRight(h.o.Base, "/")
	if h.o.Title == "" {
		h.o.Title = "Actions"
	}
	if len(h.o.CSRFKey) == 0 {
		h.o.CSRFKey = make([]byte, 32)
		if _, err := rand.Read(h.o.CSRFKey); err != nil {
			return nil, err
		}
	}
	if h.o.CSRFFor <= 0 {
		h.o.CSRFFor = 12 * time.Hour
	}
	if h.o.PageSize <= 0 {
		h.o.PageSize = 25
	}
	h.o.PageSize = min(h.o.PageSize, maxPage)
	if h.o.Cut <= 0 {
		h.o.Cut = 64
	}
	if h.o.Now == nil {
		h.o.Now = time.Now
	}
	if h.o.Logger == nil {
		h.o.Logger = slog.Default()
	}
	if err := h.parse(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(files, "static")
	h.static = http.StripPrefix(h.o.Base+"/static/", http.FileServerFS(static))
	m := http.NewServeMux()
	p := h.o.Base
	m.HandleFunc("GET "+p+"/{$}", h.pendingList)
	m.HandleFunc("GET "+p+"/changes/{id}", h.changeScreen)
	m.HandleFunc("POST "+p+"/changes/{id}/{decision}", h.decidePost)
	m.HandleFunc("GET "+p+"/log", h.logPage)
	m.HandleFunc("GET "+p+"/log/{id}", h.recordPage)
	m.HandleFunc("GET "+p+"/log/{id}/entry.json", h.recordJSON)
	m.HandleFunc("POST "+p+"/log/{id}/replay", h.replayPost)
	m.Handle("GET "+p+"/static/", h.static)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { h.fail(w, r, http.StatusNotFound) })
	h.mux = m
	return h, nil
}

// csp allows the page's own stylesheet and images, and nothing else: no
// script, no frame, forms posting back here only.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP answers one request. A Handler not made by [New] answers
// 500 to every request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h == nil || h.mux == nil {
		http.Error(w, "pages: the Handler was not made by New", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer") // change ids travel in paths
	if strings.HasPrefix(r.URL.Path, h.o.Base+"/static/") {
		h.mux.ServeHTTP(w, r)
		return
	}
	var c *identity.Caller
	if h.o.Caller != nil {
		c = h.o.Caller(r)
	}
	if c == nil || c.Principal == "" {
		h.fail(w, r, http.StatusUnauthorized)
		return
	}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), personKey{}, c)))
}

// personKey keys the person of a request in its context: Options.Caller
// is asked once per request.
type personKey struct{}

// who is the person of r, as ServeHTTP found it: nil for nobody, never
// a caller without a principal.
func (h *Handler) who(r *http.Request) *identity.Caller {
	c, _ := r.Context().Value(personKey{}).(*identity.Caller)
	return c
}

// token is the CSRF token of a form posting to target for who: the time
// it was made and an HMAC-SHA256 over principal, target and that time.
func (h *Handler) token(who *identity.Caller, target string) string {
	ts := strconv.FormatInt(h.o.Now().Unix(), 10)
	return ts + "." + h.mac(who.Principal, target, ts)
}

func (h *Handler) mac(principal, target, ts string) string {
	m := hmac.New(sha256.New, h.o.CSRFKey)
	m.Write([]byte(principal + "\x00" + target + "\x00" + ts))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkToken accepts a POST whose form carries a fresh token for this
// person and this target, and that a browser does not say came from
// another site.
func (h *Handler) checkToken(r *http.Request, who *identity.Caller) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return false
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 16<<10)
	tok := r.PostFormValue("csrf")
	ts, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	age := h.o.Now().Sub(time.Unix(n, 0))
	if age < -time.Minute || age > h.o.CSRFFor {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(h.mac(who.Principal, r.URL.Path, ts)))
}

// page is what every template receives.
type page struct {
	Title   string // the page's own title
	Product string
	Base    string
	Nav     string // which tab is current: pending, log
	Who     string
	Status  int
	Data    any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	p := page{Title: title, Product: h.o.Title, Base: h.o.Base, Nav: nav, Status: status, Data: data}
	if c := h.who(r); c != nil {
		p.Who = c.Principal
	}
	var b strings.Builder
	if err := h.tmpl[name].ExecuteTemplate(&b, "layout", p); err != nil {
		h.o.Logger.Error("pages: template", "page", name, "error", err)
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail answers a page with no detail: 401, 403, 404 or 500.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int) {
	h.render(w, r, status, "error", http.StatusText(status), "", status)
}

// failed answers what the registry or the store refused or failed: 404
// for what the person may not see, 500 (logged) for the rest.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNotFound) {
		h.fail(w, r, http.StatusNotFound)
		return
	}
	h.o.Logger.Error("pages: registry or store", "path", r.URL.Path, "error", err)
	h.fail(w, r, http.StatusInternalServerError)
}

func (h *Handler) link(parts ...string) string {
	var b strings.Builder
	b.WriteString(h.o.Base)
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}
