package envelope

import (
	"encoding/json"
	"strings"
	"testing"
)

// Parse decodes invalid text in a string field to U+FFFD, as encoding/json
// does, and names the first field it did that to in Replaced, so that a
// receiver can refuse ids that distinct inputs decode alike.
func TestReplacedNamesInvalidText(t *testing.T) {
	ev := func(id, typ, objID, account, version string) string {
		return `{"id":"` + id + `","type":"` + typ + `","api_version":"` + version + `","account":"` + account +
			`","data":{"object":{"id":"` + objID + `"}}}`
	}
	for _, c := range []struct {
		in, want string
	}{
		{ev("evt_1", "t", "o", "a", "v"), ""},
		{ev("evt_\uFFFD", "t", "o", "a", "v"), ""},       // U+FFFD as sent
		{ev(`evt_\ufffd`, "t", "o", "a", "v"), ""},       // escaped
		{ev(`evt_\uD83D\uDE00`, "t", "o", "a", "v"), ""}, // a surrogate pair
		{ev(`evt_\\ud800`, "t", "o", "a", "v"), ""},      // an escaped backslash, then text
		{ev(`evt_\n\u00e9\"`, "t", "o", "a", "v"), ""},
		{ev("evt_\xff", "t", "o", "a", "v"), "id"},
		{ev("evt_\xed\xa0\x80", "t", "o", "a", "v"), "id"}, // a surrogate in UTF-8
		{ev(`evt_\ud800`, "t", "o", "a", "v"), "id"},
		{ev(`evt_\udc00\ud800`, "t", "o", "a", "v"), "id"},
		{ev(`evt_\ud800\ud800`, "t", "o", "a", "v"), "id"},
		{ev(`evt_\ud800x`, "t", "o", "a", "v"), "id"},
		{ev(`evt_\uDBFF`, "t", "o", "a", "v"), "id"},
		{ev("evt_1", `t\ud800`, "o", "a", "v"), "type"},
		{ev("evt_1", "t", "o\xc3", "a", "v"), "data.object.id"},
		{ev("evt_1", "t", "o", `a\udfff`, "v\xff"), "account"},
		{ev("evt_1", "t", "o", "a", "v\xff"), "api_version"},
		{ev("evt_\xff", "t", "o\xff", "a", "v"), "id"},
		// The last of a repeated key counts, as its value is the one kept.
		{`{"id":"evt_\ud800","id":"evt_1","type":"t","data":{"object":{"id":"o"}}}`, ""},
		{`{"id":"evt_1","id":"evt_\ud800","type":"t","data":{"object":{"id":"o"}}}`, "id"},
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"o\ud800"},"object":{"id":"o"}}}`, ""},
		{`{"id":"evt_1","type":"t","account":"\ud800","account":null,"data":{"object":{"id":"o"}}}`, "account"},
		// Fields no receiver keys on are not named.
		{`{"id":"evt_1","type":"t","data":{"object":{"id":"o","object":"\ud800","x":"\ud800"}},"y":"` + "\xff" + `"}`, ""},
	} {
		got, err := Parse([]byte(c.in))
		noErr(t, err, c.in)
		equal(t, c.want, got.Replaced, c.in)
		// The values are encoding/json's all the same.
		var std struct{ ID string }
		noErr(t, json.Unmarshal([]byte(c.in), &std))
		if !strings.Contains(c.in, `"id":"evt_1","id"`) && !strings.Contains(c.in, `"id":"evt_\ud800","id"`) {
			equal(t, std.ID, got.ID, c.in)
		}
	}
}
