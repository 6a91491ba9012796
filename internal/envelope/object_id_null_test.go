package envelope

import (
	"encoding/json"
	"testing"
)

// A repeated data.object.id whose last value is null (or anything but a
// string) leaves the earlier id, as encoding/json leaves a string field
// (and stripe-go the id of the resource a handler is given): ObjectID is
// that id, not "", so the inbox's per-object order, early guards and
// OnCurrent's fetch use the id the handler sees.
func TestObjectIDNullKeepsEarlierID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1","id":null}}}`, "in_1"},
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1","object":"invoice","id":null,"x":1}}}`, "in_1"},
		{`{"id":"evt_1","type":"t","data":{"object":{"id":null,"id":"in_2"}}}`, "in_2"},
		{`{"id":"evt_1","type":"t","data":{"object":{"id":null}}}`, ""},
		// A later data.object is a new object: its null id is "".
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1"},"object":{"id":null}}}`, ""},
		// Nor does any other value that is not a string.
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1","id":5}}}`, "in_1"},
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"in_1","id":{"id":"in_2"},"id":null}}}`, "in_1"},
		{`{"id":"evt_1","type":"t","data":{"object":{"id":[],"id":true}}}`, ""},
	} {
		env, err := Parse([]byte(c.in))
		noErr(t, err, c.in)
		equal(t, c.want, env.ObjectID, c.in)
	}
	// What a handler's type decodes: the earlier id.
	var obj struct {
		ID string `json:"id"`
	}
	noErr(t, json.Unmarshal([]byte(`{"id":"in_1","id":null}`), &obj))
	equal(t, "in_1", obj.ID)
}
