package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Thin events (event destinations, API v2) come in two shapes, both with
// "object": "v2.core.event": the notification an endpoint receives, which
// names the event, and the event itself, which the receiver fetches from
// GET /v2/core/events/{id}. They are small and off the hot path (each costs
// an API call), so they are read with encoding/json, whose case-insensitive
// key matching does no harm here: Stripe sends lower-case keys.

// Notification is what a thin event notification says of the event to fetch.
type Notification struct {
	ID      string // "id" (evt_...)
	Type    string // "type"
	Context string // "context": the account to fetch the event as; "" when null/absent
	// Livemode is "livemode": nil when null/absent.
	Livemode *bool
	// Replaced names the first of id, type and context whose text
	// decoding replaced with U+FFFD, as Envelope.Replaced does.
	Replaced string
}

// ParseThin parses a thin event notification. It fails, wrapping
// ErrMalformed and without quoting the input, when b is not a JSON object
// whose "object" is "v2.core.event" with a string id and type, or whose
// livemode is neither a boolean nor null.
func ParseThin(b []byte) (Notification, error) {
	var v struct {
		ID       json.RawMessage `json:"id"`
		Object   string          `json:"object"`
		Type     json.RawMessage `json:"type"`
		Context  json.RawMessage `json:"context"`
		Livemode *bool           `json:"livemode"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Notification{}, jsonErr(err)
	}
	texts, replaced, err := v2Texts([]string{"id", "type", "context"}, v.ID, v.Type, v.Context)
	if err != nil {
		return Notification{}, err
	}
	id, typ, context := texts[0], texts[1], texts[2]
	if err := checkV2(v.Object, id, typ); err != nil {
		return Notification{}, err
	}
	n := Notification{ID: *id, Type: *typ, Livemode: v.Livemode, Replaced: replaced}
	if context != nil {
		n.Context = *context
	}
	return n, nil
}

// ParseV2Event parses a v2 event as GET /v2/core/events/{id} returns it
// into an Envelope with V2 set: Object is the event's "data" (the event
// type's own fields; "null" when absent), Previous its "changes", ObjectID
// and ObjectKind the id and type of its "related_object", Account its
// "context", Created its RFC 3339 "created" in unix seconds, and APIVersion
// empty: v2 events are unversioned; Replaced as Parse sets it. Like Parse,
// its errors wrap ErrMalformed and never quote the input.
func ParseV2Event(b []byte) (Envelope, error) {
	var v struct {
		ID            json.RawMessage `json:"id"`
		Object        string          `json:"object"`
		Type          json.RawMessage `json:"type"`
		Created       *string         `json:"created"`
		Livemode      bool            `json:"livemode"`
		Context       json.RawMessage `json:"context"`
		RelatedObject *struct {
			ID   json.RawMessage `json:"id"`
			Type string          `json:"type"`
		} `json:"related_object"`
		Data    json.RawMessage `json:"data"`
		Changes json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Envelope{}, jsonErr(err)
	}
	var related json.RawMessage
	if v.RelatedObject != nil {
		related = v.RelatedObject.ID
	}
	texts, replaced, err := v2Texts([]string{"id", "type", "context", "related_object.id"}, v.ID, v.Type, v.Context, related)
	if err != nil {
		return Envelope{}, err
	}
	id, typ, context, objectID := texts[0], texts[1], texts[2], texts[3]
	if err := checkV2(v.Object, id, typ); err != nil {
		return Envelope{}, err
	}
	if v.Created == nil {
		return Envelope{}, fieldErr("created", "is missing")
	}
	created, err := time.Parse(time.RFC3339Nano, *v.Created)
	if err != nil {
		return Envelope{}, fieldErr("created", "is not an RFC 3339 time")
	}
	env := Envelope{
		ID: *id, Type: *typ, Created: created.Unix(), Livemode: v.Livemode,
		Object: v.Data, V2: true, Replaced: replaced,
	}
	if context != nil {
		env.Account = *context
	}
	if v.RelatedObject != nil {
		env.ObjectKind = v.RelatedObject.Type
		if objectID != nil {
			env.ObjectID = *objectID
		}
	}
	if len(env.Object) == 0 {
		env.Object = []byte("null")
	}
	if len(v.Changes) > 0 && string(v.Changes) != "null" {
		env.Previous = v.Changes
	}
	return env, nil
}

// ParseAny parses a snapshot event with Parse, and a v2 event with
// ParseV2Event: what an inbox stores is either.
func ParseAny(b []byte) (Envelope, error) {
	env, err := Parse(b)
	if errors.Is(err, ErrThinEvent) {
		return ParseV2Event(b)
	}
	return env, err
}

// v2Texts decodes toks, the JSON strings of the fields names, as
// encoding/json decodes them: nil for one absent or null, and an error
// naming the first that is not a string. replaced is the first whose
// decoding replaced invalid text (invalid UTF-8, an unpaired surrogate
// escape) with U+FFFD, as Envelope.Replaced names it: distinct texts then
// decode to one.
func v2Texts(names []string, toks ...json.RawMessage) (texts []*string, replaced string, err error) {
	texts = make([]*string, len(toks))
	for i, tok := range toks {
		if len(tok) == 0 || string(tok) == "null" {
			continue
		}
		var s string
		if tok[0] != '"' || json.Unmarshal(tok, &s) != nil {
			return nil, "", fieldErr(names[i], "has the wrong type")
		}
		texts[i] = &s
		if replaced == "" && replacesText(tok[1:len(tok)-1]) {
			replaced = names[i]
		}
	}
	return texts, replaced, nil
}

func checkV2(object string, id, typ *string) error {
	switch {
	case object != thinObject:
		return fieldErr("object", fmt.Sprintf("is not %q", thinObject))
	case id == nil || *id == "":
		return fieldErr("id", "is missing")
	case typ == nil || *typ == "":
		return fieldErr("type", "is missing")
	}
	return nil
}

// jsonErr turns an encoding/json error into ErrMalformed without the bytes
// of the input that its text may quote.
func jsonErr(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return malformedAt(int(syntax.Offset), "invalid JSON")
	case errors.As(err, &typ) && typ.Field != "":
		return fieldErr(typ.Field, "has the wrong type")
	}
	return malformed("not a JSON object")
}
