// Package envelope parses the outer envelope of a Stripe webhook Event
// without decoding the event's data.object.
//
// Parse is meant for the hot path of a webhook receiver, after the HMAC
// signature has been checked: it reads the handful of top-level fields a
// receiver needs to route, deduplicate and store an event, and returns
// data.object as raw JSON bytes (a subslice of the input) so that the caller
// decodes it later, only when it needs to.
//
// Parse makes one pass over the input, without reflection and without
// recursion, and validates the whole input as JSON (RFC 8259, as
// encoding/json.Valid judges it), including the values it skips, and it
// limits nesting to 10000 levels, as encoding/json does. On success it
// allocates once: all string fields share one backing string. (A string
// field that contains escape sequences or invalid UTF-8 is decoded by
// encoding/json instead, which costs a few more allocations; Stripe's ids,
// types and versions are plain ASCII.)
//
// Differences from encoding/json, on purpose:
//
//   - Key matching is exact and case-sensitive. encoding/json matches struct
//     fields case-insensitively ("ID" or "Id" would fill the id field, the
//     last such key winning); Parse refuses, as malformed, an input with such
//     a key at a level it reads (the top level, data and data.object) for
//     one of the fields it reads there, since encoding/json (stripe-go's
//     Event, a decode of data.object) would read another value than Parse.
//     Stripe always sends lower-case keys. Keys are compared after
//     unescaping, so "\u0069d" is "id", as in JSON.
//   - Types are checked strictly: a known field with the wrong type is an
//     error even when a later duplicate of the key has the right type, and
//     null is accepted only where documented (api_version, account,
//     data.previous_attributes).
//
// Like encoding/json, when a key is repeated the last value wins (a null
// api_version or account leaves an earlier string in place, as null does for
// a string field in encoding/json). A repeated "data", or a repeated
// data.previous_attributes, is refused: stripe-go's Event keeps the last
// "data" whole (its previous_attributes gone when that one lacks them),
// where encoding/json merges them key by key, and it merges repeated
// previous_attributes into one map, where the last value wins here; no
// reading of Previous would agree with both.
package envelope

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Envelope is the part of a Stripe event that a receiver needs before it decodes the object.
type Envelope struct {
	ID         string // "id" (evt_...)
	Type       string // "type" (invoice.paid)
	Created    int64  // "created" (unix seconds)
	APIVersion string // "api_version"; "" when null/absent
	Livemode   bool   // "livemode"
	Account    string // "account" (Connect); "" when null/absent
	Object     []byte // raw JSON value of data.object (subslice of the input, not copied)
	Previous   []byte // raw JSON value of data.previous_attributes; nil when absent or null
	ObjectID   string // data.object.id; "" when absent
	ObjectKind string // data.object.object (e.g. "invoice"); "" when absent
	V2         bool   // a v2 event (ParseV2Event): unversioned, Object is its data
	// Replaced names the first of id, type, data.object.id, account and
	// api_version (of a v2 event: id, type, context, related_object.id)
	// whose value had invalid UTF-8 or an unpaired UTF-16
	// surrogate escape ("\ud800"), which decoding replaced with U+FFFD as
	// encoding/json does; "" when none had. Distinct values decode alike
	// so ("evt_\ud800" and "evt_\udc00" are both "evt_\ufffd"): a
	// receiver that keys on them refuses the event.
	Replaced string
}

var (
	// ErrThinEvent reports a Stripe v2 "thin" event notification: its
	// top-level "object" is "v2.core.event". Thin events carry no
	// data.object (the receiver fetches the event from the API) and their
	// fields have other types (for example "created" is an RFC 3339 string),
	// so Parse returns ErrThinEvent for any valid JSON object whose last
	// top-level "object" is the string "v2.core.event", whatever its other
	// fields look like.
	ErrThinEvent = errors.New("envelope: thin event notification (v2.core.event)")

	// ErrMalformed reports input that is not valid JSON or not a Stripe
	// event envelope. The errors Parse returns for such input are
	// ErrMalformed to errors.Is, and their text is the detail alone (a
	// field name or a byte offset), for the caller's words before it
	// ("malformed event: ..."); they never contain bytes of the input.
	ErrMalformed = errors.New("envelope: malformed event")
)

// maxDepth is the deepest nesting of arrays and objects Parse accepts,
// counting the top-level object; encoding/json has the same limit.
const maxDepth = 10000

const thinObject = "v2.core.event"

// strRef is where a string field's value is: a span of the input (fast
// path: no escapes, valid UTF-8) or, when dec is set, its decoded value.
type strRef struct {
	start, end int
	str        string
	dec        bool
	replaced   bool // dec, and decoding replaced invalid text with U+FFFD
}

func (r *strRef) len() int {
	if r.dec {
		return 0
	}
	return r.end - r.start
}

type parser struct {
	b     []byte
	i     int
	depth int
	// kinds holds one bit per nesting depth: 1 for an array, 0 for an object.
	kinds [maxDepth/64 + 1]uint64
	// semErr is the first type error on a known field. Parse keeps scanning
	// after it, because a thin event or a syntax error takes precedence.
	semErr error

	// What has been read so far.
	id, typ, apiVer, account strRef
	objID, objKind           strRef
	haveID, haveType         bool
	haveData, haveObject     bool
	dataSeen, previousSeen   bool // a "data", a data.previous_attributes key read
	thin, livemode           bool
	created                  int64
	object, previous         []byte
}

// malformedError is ErrMalformed with its detail: errors.Is finds
// ErrMalformed, and its text is the detail alone.
type malformedError struct{ detail string }

func (e *malformedError) Error() string { return e.detail }

func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// malformed returns an error of ErrMalformed whose text is the detail
// that format and args make.
func malformed(format string, args ...any) error {
	return &malformedError{detail: fmt.Sprintf(format, args...)}
}

func malformedAt(i int, what string) error {
	return malformed("%s at offset %d", what, i)
}

func fieldErr(field, what string) error {
	return malformed("%q %s", field, what)
}

func (p *parser) setSem(field, what string) {
	if p.semErr == nil {
		p.semErr = fieldErr(field, what)
	}
}

// Parse parses the envelope of a Stripe event in b. On success the
// Envelope's Object and Previous alias b.
//
// Parse fails with an error wrapping ErrMalformed when b is not valid JSON,
// when its top-level value is not an object, or when:
//   - "id" or "type" is missing, empty, or not a string (null included);
//   - "data" is missing or not an object, or no "data" has an "object"
//     member, or a data.object is not an object;
//   - "created" is not an integer number that fits in an int64 (it may be
//     absent: Created is 0 then);
//   - "livemode" is not true or false (it may be absent);
//   - "api_version" or "account" is neither a string nor null;
//   - data.previous_attributes is neither an object nor null;
//   - "data" or data.previous_attributes is sent twice;
//   - a key at the top level, in data or in data.object equals one of the
//     fields Parse reads there but for letter case ("ID", "Type").
//
// It returns ErrThinEvent when b is valid JSON and its top-level "object" is
// "v2.core.event", whatever the other fields hold.
//
// ObjectID and ObjectKind are the last string values of data.object's "id"
// and "object", as encoding/json leaves them in a string field: a value
// that is not a string, null included, changes neither; "" when there is
// no string. Unknown keys are skipped at every level (but validated).
func Parse(b []byte) (Envelope, error) {
	p := parser{b: b}
	if err := p.top(); err != nil {
		return Envelope{}, err
	}
	p.ws()
	if p.i != len(b) {
		return Envelope{}, malformedAt(p.i, "data after the top-level object")
	}

	if p.thin {
		return Envelope{}, ErrThinEvent
	}
	if p.semErr != nil {
		return Envelope{}, p.semErr
	}
	switch {
	case !p.haveID:
		return Envelope{}, fieldErr("id", "is missing")
	case !p.haveType:
		return Envelope{}, fieldErr("type", "is missing")
	case !p.haveData:
		return Envelope{}, fieldErr("data", "is missing")
	case !p.haveObject:
		return Envelope{}, fieldErr("data.object", "is missing")
	}

	// The string fields that are plain spans of the input share one
	// allocation.
	refs := [...]*strRef{&p.id, &p.typ, &p.apiVer, &p.account, &p.objID, &p.objKind}
	total := 0
	for _, r := range refs {
		total += r.len()
	}
	var all string
	if total > 0 {
		var sb strings.Builder
		sb.Grow(total)
		for _, r := range refs {
			if !r.dec {
				sb.Write(b[r.start:r.end])
			}
		}
		all = sb.String()
	}
	var out [len(refs)]string
	off := 0
	for k, r := range refs {
		if r.dec {
			out[k] = r.str
			continue
		}
		n := r.len()
		out[k] = all[off : off+n]
		off += n
	}
	if out[0] == "" {
		return Envelope{}, fieldErr("id", "is empty")
	}
	if out[1] == "" {
		return Envelope{}, fieldErr("type", "is empty")
	}
	replaced := ""
	switch {
	case p.id.replaced:
		replaced = "id"
	case p.typ.replaced:
		replaced = "type"
	case p.objID.replaced:
		replaced = "data.object.id"
	case p.account.replaced:
		replaced = "account"
	case p.apiVer.replaced:
		replaced = "api_version"
	}
	return Envelope{
		ID:         out[0],
		Type:       out[1],
		Created:    p.created,
		APIVersion: out[2],
		Livemode:   p.livemode,
		Account:    out[3],
		Object:     p.object,
		Previous:   p.previous,
		ObjectID:   out[4],
		ObjectKind: out[5],
		Replaced:   replaced,
	}, nil
}

// top reads the top-level object.
func (p *parser) top() error {
	p.ws()
	if p.i >= len(p.b) {
		return malformedAt(p.i, "empty input")
	}
	if p.b[p.i] != '{' {
		return malformedAt(p.i, "top-level value is not an object")
	}
	p.i++
	if err := p.push(false); err != nil {
		return err
	}
	more, err := p.firstMember()
	for ; err == nil && more; more, err = p.nextMember() {
		var key []byte
		if key, err = p.key(); err != nil {
			return err
		}
		var (
			ref   strRef
			isStr bool
		)
		switch string(key) {
		case "id":
			if ref, isStr, err = p.stringField(); isStr {
				p.id, p.haveID = ref, true
			} else if err == nil {
				p.setSem("id", "is not a string")
			}
		case "type":
			if ref, isStr, err = p.stringField(); isStr {
				p.typ, p.haveType = ref, true
			} else if err == nil {
				p.setSem("type", "is not a string")
			}
		case "object":
			ref, isStr, err = p.stringField()
			p.thin = isStr && p.refEquals(&ref, thinObject)
		case "api_version":
			p.apiVer, err = p.nullableString("api_version", p.apiVer)
		case "account":
			p.account, err = p.nullableString("account", p.account)
		case "created":
			p.created, err = p.readCreated(p.created)
		case "livemode":
			p.livemode, err = p.readLivemode(p.livemode)
		case "data":
			if p.dataSeen {
				p.setSem("data", "is sent twice")
			}
			p.dataSeen = true
			err = p.data()
		default:
			p.checkFolded("", key, topKeys)
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
	}
	return err
}

// data reads the value of a top-level "data" key.
func (p *parser) data() error {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		p.setSem("data", "is not an object")
		return p.skipValue()
	}
	p.haveData = true
	p.i++
	if err := p.push(false); err != nil {
		return err
	}
	more, err := p.firstMember()
	for ; err == nil && more; more, err = p.nextMember() {
		var key []byte
		if key, err = p.key(); err != nil {
			return err
		}
		switch string(key) {
		case "object":
			err = p.dataObject()
		case "previous_attributes":
			if p.previousSeen {
				p.setSem("data.previous_attributes", "is sent twice")
			}
			p.previousSeen = true
			switch start := p.i; {
			case p.i < len(p.b) && p.b[p.i] == '{':
				if err = p.skipValue(); err == nil {
					p.previous = p.b[start:p.i]
				}
			case p.i < len(p.b) && p.b[p.i] == 'n':
				if err = p.literal("null"); err == nil {
					p.previous = nil
				}
			default:
				p.setSem("data.previous_attributes", "is neither an object nor null")
				err = p.skipValue()
			}
		default:
			p.checkFolded("data.", key, dataKeys)
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
	}
	return err
}

// dataObject reads the value of data.object: only its top level, for "id"
// and "object".
func (p *parser) dataObject() error {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		p.setSem("data.object", "is not an object")
		return p.skipValue()
	}
	start := p.i
	p.objID, p.objKind = strRef{}, strRef{}
	p.i++
	if err := p.push(false); err != nil {
		return err
	}
	more, err := p.firstMember()
	for ; err == nil && more; more, err = p.nextMember() {
		var key []byte
		if key, err = p.key(); err != nil {
			return err
		}
		switch string(key) {
		case "id":
			// A value that is not a string (null included) leaves an
			// earlier id in place, as encoding/json leaves a string
			// field, and so the id of the resource a handler is given.
			p.objID, err = p.objectString(p.objID)
		case "object":
			p.objKind, err = p.objectString(p.objKind)
		default:
			p.checkFolded("data.object.", key, dataObjectKeys)
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	p.object = p.b[start:p.i]
	p.haveObject = true
	return nil
}

// The keys Parse reads at each level, for checkFolded.
var (
	topKeys        = newFoldKeys("id", "type", "object", "api_version", "account", "created", "livemode", "data")
	dataKeys       = newFoldKeys("object", "previous_attributes")
	dataObjectKeys = newFoldKeys("id", "object")
)

// foldKeys is a set of lower-case ASCII keys, and the first bytes of
// the keys that equal one of them but for letter case.
type foldKeys struct {
	keys  [][]byte
	first [256]bool
}

// newFoldKeys marks, for each key, the first byte of every rune that
// bytes.EqualFold matches with its first letter (its simple-fold orbit:
// 's' also 'S' and U+017F, 'k' also 'K' and U+212A), so that
// checkFolded passes over most keys with one look-up.
func newFoldKeys(keys ...string) *foldKeys {
	f := &foldKeys{}
	for _, k := range keys {
		f.keys = append(f.keys, []byte(k))
		r0 := rune(k[0])
		for r := r0; ; {
			var buf [utf8.UTFMax]byte
			utf8.EncodeRune(buf[:], r)
			f.first[buf[0]] = true
			if r = unicode.SimpleFold(r); r == r0 {
				break
			}
		}
	}
	return f
}

// checkFolded refuses key, one Parse does not read at its level (prefix),
// when it equals one it reads but for letter case ("ID", "Type",
// "api_verſion" with U+017F): encoding/json matches keys so
// (bytes.EqualFold), and the last one wins, so that stripe-go's Event
// and a decode of data.object would read another value than Parse.
// The error names the field, never the key.
func (p *parser) checkFolded(prefix string, key []byte, known *foldKeys) {
	if len(key) == 0 || !known.first[key[0]] {
		return
	}
	for _, k := range known.keys {
		if bytes.EqualFold(key, k) {
			p.setSem(prefix+string(k), "is also sent under a key that differs from it only in letter case")
			return
		}
	}
}

// objectString reads data.object's "id" or "object": a string replaces
// cur; any other value leaves it.
func (p *parser) objectString(cur strRef) (strRef, error) {
	ref, isStr, err := p.stringField()
	if err != nil || !isStr {
		return cur, err
	}
	return ref, nil
}

// refEquals reports whether the string at r equals s.
func (p *parser) refEquals(r *strRef, s string) bool {
	if r.dec {
		return r.str == s
	}
	return string(p.b[r.start:r.end]) == s
}

// ws skips JSON whitespace.
func (p *parser) ws() {
	b := p.b
	i := p.i
	for i < len(b) {
		switch b[i] {
		case ' ', '\n', '\r', '\t':
			i++
			// Indented JSON has runs of spaces: skip them 8 at a time,
			// the last partial run by counting its trailing zero bits.
			for i+8 <= len(b) {
				if x := binary.LittleEndian.Uint64(b[i:]) ^ spaces8; x != 0 {
					i += bits.TrailingZeros64(x) >> 3
					break
				}
				i += 8
			}
			continue
		}
		break
	}
	p.i = i
}

func (p *parser) push(array bool) error {
	p.depth++
	if p.depth > maxDepth {
		return malformedAt(p.i, "nesting too deep")
	}
	w, bit := p.depth>>6, uint64(1)<<(p.depth&63)
	if array {
		p.kinds[w] |= bit
	} else {
		p.kinds[w] &^= bit
	}
	return nil
}

func (p *parser) inArray() bool {
	return p.kinds[p.depth>>6]&(uint64(1)<<(p.depth&63)) != 0
}

// firstMember is called just after an object's '{': it reports whether the
// object has a member (the cursor is then at its key), or consumes the '}'.
func (p *parser) firstMember() (bool, error) {
	p.ws()
	if p.i >= len(p.b) {
		return false, malformedAt(p.i, "unexpected end of input")
	}
	if p.b[p.i] == '}' {
		p.i++
		p.depth--
		return false, nil
	}
	return true, nil
}

// nextMember is called after a member's value: it consumes ',' and reports
// true, or consumes '}' and reports false.
func (p *parser) nextMember() (bool, error) {
	p.ws()
	if p.i >= len(p.b) {
		return false, malformedAt(p.i, "unexpected end of input")
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		p.ws()
		return true, nil
	case '}':
		p.i++
		p.depth--
		return false, nil
	}
	return false, malformedAt(p.i, "expected ',' or '}'")
}

// key reads an object key and the ':' after it, and leaves the cursor at the
// value. The returned key is unescaped (escaped keys are rare: they take a
// slow path).
func (p *parser) key() ([]byte, error) {
	if p.i >= len(p.b) {
		return nil, malformedAt(p.i, "unexpected end of input")
	}
	if p.b[p.i] != '"' {
		return nil, malformedAt(p.i, "expected a string key")
	}
	start := p.i + 1
	esc, err := p.scanString()
	if err != nil {
		return nil, err
	}
	var k []byte
	if esc {
		s, err := unquote(p.b[start-1 : p.i])
		if err != nil {
			return nil, err
		}
		k = []byte(s)
	} else {
		k = p.b[start : p.i-1]
	}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return nil, malformedAt(p.i, "expected ':'")
	}
	p.i++
	p.ws()
	return k, nil
}

// stringField reads the value at the cursor. If it is a string it returns
// where it is and true; otherwise it skips the value and returns false.
func (p *parser) stringField() (strRef, bool, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return strRef{}, false, p.skipValue()
	}
	start := p.i + 1
	esc, err := p.scanString()
	if err != nil {
		return strRef{}, false, err
	}
	end := p.i - 1
	if esc || !utf8.Valid(p.b[start:end]) {
		// Decode exactly as encoding/json does (escapes, and U+FFFD for
		// invalid UTF-8).
		s, err := unquote(p.b[start-1 : p.i])
		if err != nil {
			return strRef{}, false, err
		}
		return strRef{str: s, dec: true, replaced: replacesText(p.b[start:end])}, true, nil
	}
	return strRef{start: start, end: end}, true, nil
}

// nullableString reads a string-or-null field. null leaves cur unchanged, as
// encoding/json does for a string field.
func (p *parser) nullableString(field string, cur strRef) (strRef, error) {
	if p.i < len(p.b) && p.b[p.i] == 'n' {
		return cur, p.literal("null")
	}
	ref, isStr, err := p.stringField()
	if err != nil {
		return cur, err
	}
	if !isStr {
		p.setSem(field, "is neither a string nor null")
		return cur, nil
	}
	return ref, nil
}

func (p *parser) readLivemode(cur bool) (bool, error) {
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case 't':
			return true, p.literal("true")
		case 'f':
			return false, p.literal("false")
		}
	}
	p.setSem("livemode", "is not a boolean")
	return cur, p.skipValue()
}

// readCreated reads an integer that fits in an int64.
func (p *parser) readCreated(cur int64) (int64, error) {
	b := p.b
	start := p.i
	if start >= len(b) || (b[start] != '-' && (b[start] < '0' || b[start] > '9')) {
		p.setSem("created", "is not a number")
		return cur, p.skipValue()
	}
	if err := p.number(); err != nil {
		return cur, err
	}
	num := b[start:p.i]
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	limit := uint64(1)<<63 - 1
	if neg {
		limit++
	}
	var u uint64
	for _, c := range num {
		if c < '0' || c > '9' {
			p.setSem("created", "is not an integer")
			return cur, nil
		}
		d := uint64(c - '0')
		if u > (limit-d)/10 {
			p.setSem("created", "is out of range")
			return cur, nil
		}
		u = u*10 + d
	}
	if neg {
		return int64(-u), nil // two's complement; u <= 1<<63
	}
	return int64(u), nil
}

// unquote decodes one JSON string token (with its quotes) as encoding/json
// does. It is the slow path, for strings with escapes or invalid UTF-8.
func unquote(tok []byte) (string, error) {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", malformed("invalid string")
	}
	return s, nil
}

// replacesText reports whether decoding the contents of a valid JSON
// string token (without its quotes) replaces anything with U+FFFD, as
// encoding/json does for invalid UTF-8 and for a \u escape of a UTF-16
// surrogate that is not a high one followed at once by an escaped low one.
func replacesText(s []byte) bool {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\' && s[i+1] == 'u':
			r := hex4(s[i+2 : i+6])
			i += 6
			if !utf16.IsSurrogate(r) {
				continue
			}
			if r >= 0xdc00 || i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
				return true
			}
			if lo := hex4(s[i+2 : i+6]); lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return true
			}
			i += n
		}
	}
	return false
}

// hex4 is the value of four hex digits.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// strClass marks the bytes that end the fast string scan: '"', '\\' and
// control characters (invalid in strings).
var strClass = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

const (
	ones8   = 0x0101010101010101
	highs8  = 0x8080808080808080
	spaces8 = 0x20 * ones8
	quotes8 = '"' * ones8
	bslash8 = '\\' * ones8
)

// plainEnd returns the index of the first byte at or after i that is '"',
// '\\' or a control character, or len(b). It looks at 8 bytes at a time:
// for a word x, (x - n*ones8) &^ x & highs8 flags the bytes below n, and the
// lowest flagged byte is always a true match (borrows only run upwards).
func plainEnd(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ quotes8
		s := x ^ bslash8
		m := ((x - spaces8) &^ x) | ((q - ones8) &^ q) | ((s - ones8) &^ s)
		if m &= highs8; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(b) && !strClass[b[i]] {
		i++
	}
	return i
}

// scanString validates the string starting at the cursor ('"') and moves
// the cursor past its closing quote. It reports whether the string has
// escape sequences.
func (p *parser) scanString() (esc bool, err error) {
	b := p.b
	i := p.i + 1
	for {
		i = plainEnd(b, i)
		if i >= len(b) {
			return false, malformedAt(i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			p.i = i + 1
			return esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return false, malformedAt(i, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return false, malformedAt(i, "unterminated string")
				}
				if !hexDigit[b[i+2]] || !hexDigit[b[i+3]] || !hexDigit[b[i+4]] || !hexDigit[b[i+5]] {
					return false, malformedAt(i, "invalid \\u escape")
				}
				i += 6
			default:
				return false, malformedAt(i, "invalid escape")
			}
		default:
			return false, malformedAt(i, "control character in string")
		}
	}
}

// literal consumes the literal lit (true, false or null) at the cursor.
func (p *parser) literal(lit string) error {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return malformedAt(p.i, "invalid literal")
	}
	p.i += len(lit)
	return nil
}

// number consumes a number at the cursor, per the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() error {
	b := p.b
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return malformedAt(i, "invalid number")
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return malformedAt(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return malformedAt(i, "invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return malformedAt(i, "invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	p.i = i
	return nil
}

// skipValue validates and skips the value at the cursor, iteratively.
func (p *parser) skipValue() error {
	b := p.b
	base := p.depth
	for {
		// The cursor is at a value.
		if p.i >= len(b) {
			return malformedAt(p.i, "unexpected end of input")
		}
		switch c := b[p.i]; c {
		case '"':
			if _, err := p.scanString(); err != nil {
				return err
			}
		case '{':
			p.i++
			if err := p.push(false); err != nil {
				return err
			}
			p.ws()
			if p.i < len(b) && b[p.i] == '}' {
				p.i++
				p.depth--
				break
			}
			if err := p.skipKey(); err != nil {
				return err
			}
			continue
		case '[':
			p.i++
			if err := p.push(true); err != nil {
				return err
			}
			p.ws()
			if p.i < len(b) && b[p.i] == ']' {
				p.i++
				p.depth--
				break
			}
			continue
		case 't':
			if err := p.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := p.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := p.literal("null"); err != nil {
				return err
			}
		default:
			if c == '-' || (c >= '0' && c <= '9') {
				if err := p.number(); err != nil {
					return err
				}
				break
			}
			return malformedAt(p.i, "unexpected byte")
		}
		// After a value: close containers until the next value or the end.
		for {
			if p.depth == base {
				return nil
			}
			p.ws()
			if p.i >= len(b) {
				return malformedAt(p.i, "unexpected end of input")
			}
			c := b[p.i]
			arr := p.inArray()
			if c == ',' {
				p.i++
				p.ws()
				if !arr {
					if err := p.skipKey(); err != nil {
						return err
					}
				}
				break
			}
			if (arr && c == ']') || (!arr && c == '}') {
				p.i++
				p.depth--
				continue
			}
			return malformedAt(p.i, "expected ',' or end of container")
		}
	}
}

// skipKey validates and skips a key and its ':' inside a skipped object,
// leaving the cursor at the value.
func (p *parser) skipKey() error {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return malformedAt(p.i, "expected a string key")
	}
	if _, err := p.scanString(); err != nil {
		return err
	}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return malformedAt(p.i, "expected ':'")
	}
	p.i++
	p.ws()
	return nil
}
