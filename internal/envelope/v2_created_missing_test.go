package envelope

import "testing"

// A v2 event without created, or with a null one, is refused for the
// field that is missing, not for a time it does not hold (no test failed
// when a missing created was parsed as an empty time and refused as not
// an RFC 3339 time).
func TestParseV2EventMissingCreatedSaysSo(t *testing.T) {
	for _, in := range []string{
		`{"id":"evt_1","object":"v2.core.event","type":"t"}`,
		`{"id":"evt_1","object":"v2.core.event","type":"t","created":null}`,
	} {
		_, err := ParseV2Event([]byte(in))
		errIs(t, err, ErrMalformed)
		errContains(t, err, `"created" is missing`)
	}
}
