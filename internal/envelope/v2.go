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
	// Replaced names the first of id, type and context whose text
	// decoding replaced with U+FFFD, as Envelope.Replaced does.
	Replaced string
}

// ParseThin parses a thin event notification. It fails, wrapping
// ErrMalformed and without quoting the input, when b is not a JSON object
// whose "object" is "v2.core.event" with a string id and type.
func ParseThin(b []byte) (Notification, error) {
	var v struct {
		ID      *string `json:"id"`
		Object  string  `json:"object"`
		Type    *string `json:"type"`
		Context *string `json:"context"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Notification{}, jsonErr(err)
	}
	if err := checkV2(v.Object, v.ID, v.Type); err != nil {
		return Notification{}, err
	}
	n := Notification{ID: *v.ID, Type: *v.Type}
	if v.Context != nil {
		n.Context = *v.Context
	}
	var raw struct {
		ID      json.RawMessage `json:"id"`
		Type    json.RawMessage `json:"type"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Notification{}, jsonErr(err)
	}
	n.Replaced = firstReplaced([]string{"id", "type", "context"}, raw.ID, raw.Type, raw.Context)
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
		ID            *string `json:"id"`
		Object        string  `json:"object"`
		Type          *string `json:"type"`
		Created       *string `json:"created"`
		Livemode      bool    `json:"livemode"`
		Context       *string `json:"context"`
		RelatedObject *struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"related_object"`
		Data    json.RawMessage `json:"data"`
		Changes json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Envelope{}, jsonErr(err)
	}
	if err := checkV2(v.Object, v.ID, v.Type); err != nil {
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
		ID: *v.ID, Type: *v.Type, Created: created.Unix(), Livemode: v.Livemode,
		Object: v.Data, V2: true,
	}
	if v.Context != nil {
		env.Account = *v.Context
	}
	if v.RelatedObject != nil {
		env.ObjectID, env.ObjectKind = v.RelatedObject.ID, v.RelatedObject.Type
	}
	if len(env.Object) == 0 {
		env.Object = []byte("null")
	}
	if len(v.Changes) > 0 && string(v.Changes) != "null" {
		env.Previous = v.Changes
	}
	var raw struct {
		ID            json.RawMessage `json:"id"`
		Type          json.RawMessage `json:"type"`
		Context       json.RawMessage `json:"context"`
		RelatedObject *struct {
			ID json.RawMessage `json:"id"`
		} `json:"related_object"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Envelope{}, jsonErr(err)
	}
	var related json.RawMessage
	if raw.RelatedObject != nil {
		related = raw.RelatedObject.ID
	}
	env.Replaced = firstReplaced([]string{"id", "type", "context", "related_object.id"}, raw.ID, raw.Type, raw.Context, related)
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

// firstReplaced returns the first of names whose string token, in toks,
// decodes with a replacement (invalid UTF-8, an unpaired surrogate
// escape): encoding/json decodes it to U+FFFD, and distinct texts to one.
func firstReplaced(names []string, toks ...json.RawMessage) string {
	for i, tok := range toks {
		if len(tok) >= 2 && tok[0] == '"' && replacesText(tok[1:len(tok)-1]) {
			return names[i]
		}
	}
	return ""
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
	return fmt.Errorf("%w: not a JSON object", ErrMalformed)
}
