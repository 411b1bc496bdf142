// Cursors: the opaque tokens through which a caller asks for the next
// page, signed by the registry and bound to the call they continue.

package actions

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/ijson"
)

// maxCursorPosition is the longest position, in bytes, a cursor may
// stand for: an offset, or the key of the last item a keyset page gave.
// A body's "next" over it is given to the caller as no cursor at all.
const maxCursorPosition = 256

// cursorMACBytes is how much of the HMAC-SHA256 a cursor carries.
const cursorMACBytes = 16

// cursorKey returns the registry's cursor key: Options.CursorKey, or
// 32 random bytes drawn once.
func (r *Registry) cursorKey() []byte {
	if len(r.opts.CursorKey) > 0 {
		return r.opts.CursorKey
	}
	r.drawKey.Do(func() {
		r.randomKey = make([]byte, 32)
		_, _ = rand.Read(r.randomKey) // never fails (crypto/rand, Go 1.24)
	})
	return r.randomKey
}

// cursorMAC is the MAC of position under the registry's key for a call
// of action by principal whose other parameters are query (their
// canonical JSON without the cursor).
func (r *Registry) cursorMAC(action, principal, query, position string) []byte {
	m := hmac.New(sha256.New, r.cursorKey())
	var n [binary.MaxVarintLen64]byte
	for _, s := range [...]string{"actions cursor 1", action, principal, query, position} {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		m.Write([]byte(s))
	}
	return m.Sum(nil)[:cursorMACBytes]
}

// cursorBinding is what a cursor of a call is bound to besides its
// position.
type cursorBinding struct {
	action, principal, query string
}

// bindingOf returns the binding of a call of action by caller with
// params (in JSON's Go types, the cursor member ignored); ok is false
// when params is not an object with a canonical form.
func bindingOf(action string, caller *identity.Caller, params map[string]any) (cursorBinding, bool) {
	rest := make(map[string]any, len(params))
	for k, v := range params {
		if k != cursorParam {
			rest[k] = v
		}
	}
	query, err := exactText(rest)
	if err != nil {
		return cursorBinding{}, false
	}
	b := cursorBinding{action: action, query: query}
	if caller != nil {
		b.principal = caller.Principal
	}
	return b, true
}

// seal returns the cursor of position for calls bound by b: the
// position and its MAC, each base64url, joined by a dot. "" for an
// empty position or one over maxCursorPosition.
func (r *Registry) seal(b cursorBinding, position string) string {
	if position == "" || len(position) > maxCursorPosition {
		return ""
	}
	mac := r.cursorMAC(b.action, b.principal, b.query, position)
	return base64.RawURLEncoding.EncodeToString([]byte(position)) + "." + base64.RawURLEncoding.EncodeToString(mac)
}

// open returns the position cursor stands for when the registry sealed
// it for calls bound by b; ok is false for anything else: a cursor
// altered, made up, sealed by another key, or for another action,
// principal or query.
func (r *Registry) open(b cursorBinding, cursor string) (position string, ok bool) {
	p64, m64, found := strings.Cut(cursor, ".")
	if !found || len(cursor) > 2*maxCursorPosition {
		return "", false
	}
	pos, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || len(pos) == 0 || len(pos) > maxCursorPosition {
		return "", false
	}
	if !hmac.Equal(mac, r.cursorMAC(b.action, b.principal, b.query, string(pos))) {
		return "", false
	}
	return string(pos), true
}

// badCursor is the refusal of a cursor the registry did not give for
// this call. It does not quote the cursor.
func badCursor() *Refusal {
	r := refusef(codes.InvalidParameters, "the cursor is not one an answer gave for this call",
		Issue{Path: "/" + cursorParam, Keyword: cursorParam, Message: "not a cursor an answer gave for this call"})
	r.NextAction = "Send the cursor exactly as an answer's next or nextCall gave it, with the same other parameters; leave it out for the first page."
	return r
}

// openParams returns the parameters of a call of reg by caller with the
// cursor, when there is one, replaced by the position it stands for;
// params unchanged when reg declares no cursor or params carries none;
// badCursor when the cursor is not one the registry sealed for this
// call. Parameters that are not an object are left for the check to
// refuse.
func (r *Registry) openParams(reg *registered, caller *identity.Caller, params any) (any, error) {
	if !reg.cursor {
		return params, nil
	}
	m := paramsObject(params)
	c, ok := m[cursorParam].(string)
	if !ok || c == "" {
		return params, nil
	}
	b, ok := bindingOf(reg.action.ID, caller, m)
	if !ok {
		return params, nil
	}
	pos, ok := r.open(b, c)
	if !ok {
		return nil, badCursor()
	}
	opened := make(map[string]any, len(m))
	for k, v := range m {
		opened[k] = v
	}
	opened[cursorParam] = pos
	return opened, nil
}

// sealNext returns text, a result of a call bound by b, with its "next"
// member (a [Page]'s) sealed as a cursor; text itself when it has no
// non-empty string "next", and changed reports which.
func (r *Registry) sealNext(b cursorBinding, text string) (sealed string, changed bool) {
	if !strings.Contains(text, `"next"`) {
		return text, false
	}
	v, err := ijson.Decode([]byte(text), canonicalMaxDepth)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return text, false
	}
	next, ok := m["next"].(string)
	if !ok || next == "" {
		return text, false
	}
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	if c := r.seal(b, next); c != "" {
		cp["next"] = c
	} else {
		delete(cp, "next")
	}
	out, err := exactText(cp)
	if err != nil {
		return text, false
	}
	return out, true
}
