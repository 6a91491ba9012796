package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// stdEvent is the encoding/json equivalent of Envelope: the struct the
// receiver used to unmarshal into before this package existed.
type stdEvent struct {
	ID         string          `json:"id"`
	Object     json.RawMessage `json:"object"`
	Type       string          `json:"type"`
	Created    int64           `json:"created"`
	APIVersion string          `json:"api_version"`
	Livemode   bool            `json:"livemode"`
	Account    string          `json:"account"`
	Data       struct {
		Object             json.RawMessage `json:"object"`
		PreviousAttributes json.RawMessage `json:"previous_attributes"`
	} `json:"data"`
}

// stdObject is the second, small decode of data.object. A value that is
// not a string leaves a field as it was: encoding/json reports the type
// error after decoding the rest.
type stdObject struct {
	ID     string `json:"id"`
	Object string `json:"object"`
}

// fixtureDir holds the repository's Stripe event fixtures (see its README).
const fixtureDir = "../../testdata/stripe-events"

// rawString returns the string a raw JSON value holds, or "" when the value
// is not a string.
func rawString(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	noErr(t, json.Unmarshal(raw, &s))
	return s
}

// stdDecode decodes in with encoding/json into the equivalent struct and
// converts the result to an Envelope.
func stdDecode(t testing.TB, in []byte) Envelope {
	t.Helper()
	var ev stdEvent
	noErr(t, json.Unmarshal(in, &ev))
	var obj stdObject
	if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
		var typeErr *json.UnmarshalTypeError
		isTrue(t, errors.As(err, &typeErr), "decoding data.object: %v", err)
	}
	prev := []byte(ev.Data.PreviousAttributes)
	if string(prev) == "null" { // RawMessage keeps a literal null; Parse returns nil
		prev = nil
	}
	return Envelope{
		ID:         ev.ID,
		Type:       ev.Type,
		Created:    ev.Created,
		APIVersion: ev.APIVersion,
		Livemode:   ev.Livemode,
		Account:    ev.Account,
		Object:     ev.Data.Object,
		Previous:   prev,
		ObjectID:   obj.ID,
		ObjectKind: obj.Object,
	}
}

func sameEnvelope(t testing.TB, want, got Envelope) {
	t.Helper()
	equal(t, want.ID, got.ID, "ID")
	equal(t, want.Type, got.Type, "Type")
	equal(t, want.Created, got.Created, "Created")
	equal(t, want.APIVersion, got.APIVersion, "APIVersion")
	equal(t, want.Livemode, got.Livemode, "Livemode")
	equal(t, want.Account, got.Account, "Account")
	isTrue(t, bytes.Equal(want.Object, got.Object), "Object")
	equal(t, want.Previous == nil, got.Previous == nil, "Previous nil-ness")
	isTrue(t, bytes.Equal(want.Previous, got.Previous), "Previous")
	equal(t, want.ObjectID, got.ObjectID, "ObjectID")
	equal(t, want.ObjectKind, got.ObjectKind, "ObjectKind")
}

// isSubslice checks that sub is a subslice of b (not a copy).
func isSubslice(t testing.TB, b, sub []byte) {
	t.Helper()
	isTrue(t, len(sub) > 0, "empty subslice")
	off := cap(b) - cap(sub)
	isTrue(t, off >= 0 && off < len(b) && &b[off] == &sub[0], "not a subslice of the input")
}

func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	noErr(t, err)
	isTrue(t, len(paths) > 0, "no fixtures")
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		noErr(t, err)
		out[filepath.Base(p)] = b
	}
	return out
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	noErr(t, err)
	return b
}

func TestFixturesMatchEncodingJSON(t *testing.T) {
	for name, in := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(in)
			noErr(t, err)
			sameEnvelope(t, stdDecode(t, in), got)
			isSubslice(t, in, got.Object)
			if got.Previous != nil {
				isSubslice(t, in, got.Previous)
			}
			isTrue(t, strings.HasPrefix(got.ID, "evt_"))
			// The file is named after its type; a variant adds a suffix
			// (testdata/stripe-events/README.md).
			typ := strings.TrimSuffix(name, ".json")
			for _, variant := range []string{".api_version-clover", ".other_account"} {
				typ = strings.TrimSuffix(typ, variant)
			}
			equal(t, typ, got.Type)
			isTrue(t, got.Created != 0, "Created is zero")
			isTrue(t, got.APIVersion != "", "APIVersion is empty")
			if got.Type != "balance.available" { // a balance has no id
				isTrue(t, got.ObjectID != "", "ObjectID is empty")
			}
			isTrue(t, got.ObjectKind != "", "ObjectKind is empty")
		})
	}
}

func TestInvoicePaid(t *testing.T) {
	got, err := Parse(fixture(t, "invoice.paid.json"))
	noErr(t, err)
	equal(t, "evt_1S2kq5B7WZ01zgkWbX2cNw7Y", got.ID)
	equal(t, "invoice.paid", got.Type)
	equal(t, int64(1756742403), got.Created)
	equal(t, "2025-08-27.basil", got.APIVersion)
	isTrue(t, !got.Livemode)
	equal(t, "", got.Account)
	isTrue(t, got.Previous == nil, "Previous is not nil")
	equal(t, "in_1Pgc6tB7WZ01zgkWu9fdqL6I", got.ObjectID)
	equal(t, "invoice", got.ObjectKind)
	equal(t, byte('{'), got.Object[0])
	equal(t, byte('}'), got.Object[len(got.Object)-1])
}

func TestPreviousAttributes(t *testing.T) {
	got, err := Parse(fixture(t, "customer.subscription.updated.json"))
	noErr(t, err)
	isTrue(t, got.Previous != nil, "Previous is nil")
	isTrue(t, json.Valid(got.Previous))
	equal(t, byte('{'), got.Previous[0])
}

const thinEvent = `{"id":"evt_test_65R9Ijk8fS4XlqDRJn2fJu3jpwV0SQ1GS3w4ghDZrKxxf6","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","livemode":false,"created":"2024-09-17T06:20:52.246Z","related_object":{"id":"mtr_test_61R9IeIIbCzT7fKEq41IeIIbCzT7fI4i","type":"billing.meter","url":"/v1/billing/meters/mtr_test_61R9IeIIbCzT7fKEq41IeIIbCzT7fI4i"}}`

func TestThinEvent(t *testing.T) {
	for name, in := range map[string]string{
		"example":            thinEvent,
		"escaped object":     `{"object":"v2.core.\u0065vent","id":"evt_1"}`,
		"no other fields":    `{"object":"v2.core.event"}`,
		"wrong types":        `{"id":5,"type":null,"data":[],"created":"x","livemode":"no","api_version":1,"object":"v2.core.event"}`,
		"last object wins":   `{"object":"event","object":"v2.core.event"}`,
		"surrounding spaces": " \n\t{ \"object\" : \"v2.core.event\" }\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(in))
			errIs(t, err, ErrThinEvent)
			notErrIs(t, err, ErrMalformed)
		})
	}
	// Not thin: a v1 event, or a later "object" overriding it.
	_, err := Parse([]byte(`{"object":"v2.core.event","object":"event","id":"e","type":"t","data":{"object":{}}}`))
	noErr(t, err)
	// Invalid JSON is malformed even if it says v2.core.event.
	_, err = Parse([]byte(`{"object":"v2.core.event",}`))
	errIs(t, err, ErrMalformed)
	_, err = Parse([]byte(thinEvent[:len(thinEvent)-1]))
	errIs(t, err, ErrMalformed)
}

// minimal is a small valid event used to build test cases.
const minimal = `{"id":"evt_1","type":"invoice.paid","created":1700000000,"data":{"object":{"id":"in_1","object":"invoice"}}}`

func deep(n int, open, close string) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

var malformedCases = map[string]string{
	"empty":                           ``,
	"whitespace only":                 " \n\t\r",
	"array":                           `[]`,
	"string":                          `"evt_1"`,
	"number":                          `1`,
	"null":                            `null`,
	"empty object":                    `{}`,
	"BOM":                             "\xef\xbb\xbf" + minimal,
	"missing id":                      `{"type":"invoice.paid","data":{"object":{}}}`,
	"numeric id":                      `{"id":1,"type":"invoice.paid","data":{"object":{}}}`,
	"null id":                         `{"id":null,"type":"invoice.paid","data":{"object":{}}}`,
	"empty id":                        `{"id":"","type":"invoice.paid","data":{"object":{}}}`,
	"id then numeric id":              `{"id":"evt_1","id":2,"type":"invoice.paid","data":{"object":{}}}`,
	"upper-case ID only":              `{"ID":"evt_1","type":"invoice.paid","data":{"object":{}}}`,
	"missing type":                    `{"id":"evt_1","data":{"object":{}}}`,
	"empty type":                      `{"id":"evt_1","type":"","data":{"object":{}}}`,
	"array type":                      `{"id":"evt_1","type":["a"],"data":{"object":{}}}`,
	"missing data":                    `{"id":"evt_1","type":"invoice.paid"}`,
	"data not object":                 `{"id":"evt_1","type":"invoice.paid","data":"x"}`,
	"data null":                       `{"id":"evt_1","type":"invoice.paid","data":null}`,
	"data array":                      `{"id":"evt_1","type":"invoice.paid","data":[{"object":{}}]}`,
	"data.object missing":             `{"id":"evt_1","type":"invoice.paid","data":{}}`,
	"data.object string":              `{"id":"evt_1","type":"invoice.paid","data":{"object":"in_1"}}`,
	"data.object null":                `{"id":"evt_1","type":"invoice.paid","data":{"object":null}}`,
	"data.object nested only":         `{"id":"evt_1","type":"invoice.paid","data":{"x":{"object":{}}}}`,
	"previous_attributes string":      `{"id":"evt_1","type":"t","data":{"object":{},"previous_attributes":"x"}}`,
	"previous_attributes array":       `{"id":"evt_1","type":"t","data":{"object":{},"previous_attributes":[]}}`,
	"created string":                  `{"id":"evt_1","type":"t","created":"1700000000","data":{"object":{}}}`,
	"created float":                   `{"id":"evt_1","type":"t","created":1.5,"data":{"object":{}}}`,
	"created exponent":                `{"id":"evt_1","type":"t","created":1e9,"data":{"object":{}}}`,
	"created overflow":                `{"id":"evt_1","type":"t","created":9223372036854775808,"data":{"object":{}}}`,
	"created negative overflow":       `{"id":"evt_1","type":"t","created":-9223372036854775809,"data":{"object":{}}}`,
	"created huge":                    `{"id":"evt_1","type":"t","created":99999999999999999999999,"data":{"object":{}}}`,
	"created null":                    `{"id":"evt_1","type":"t","created":null,"data":{"object":{}}}`,
	"livemode string":                 `{"id":"evt_1","type":"t","livemode":"true","data":{"object":{}}}`,
	"livemode null":                   `{"id":"evt_1","type":"t","livemode":null,"data":{"object":{}}}`,
	"api_version number":              `{"id":"evt_1","type":"t","api_version":2025,"data":{"object":{}}}`,
	"account object":                  `{"id":"evt_1","type":"t","account":{},"data":{"object":{}}}`,
	"trailing garbage":                minimal + `x`,
	"trailing second object":          minimal + ` {}`,
	"trailing comma":                  `{"id":"evt_1","type":"t","data":{"object":{}},}`,
	"leading comma":                   `{,"id":"evt_1","type":"t","data":{"object":{}}}`,
	"missing colon":                   `{"id" "evt_1","type":"t","data":{"object":{}}}`,
	"missing comma":                   `{"id":"evt_1" "type":"t","data":{"object":{}}}`,
	"single quotes":                   `{'id':"evt_1","type":"t","data":{"object":{}}}`,
	"unquoted key":                    `{id:"evt_1","type":"t","data":{"object":{}}}`,
	"bad escape":                      `{"id":"evt_\x","type":"t","data":{"object":{}}}`,
	"bad escape in skipped value":     `{"id":"evt_1","type":"t","x":"\q","data":{"object":{}}}`,
	"bad escape in key":               `{"i\d":"evt_1","type":"t","data":{"object":{}}}`,
	"short unicode escape":            `{"id":"evt_\u12","type":"t","data":{"object":{}}}`,
	"non-hex unicode escape":          `{"id":"evt_1","type":"t","data":{"object":{"x":"\u12G4"}}}`,
	"escape at end":                   `{"id":"evt_1\`,
	"raw newline in string":           "{\"id\":\"evt\n1\",\"type\":\"t\",\"data\":{\"object\":{}}}",
	"raw tab in skipped string":       "{\"id\":\"evt_1\",\"type\":\"t\",\"x\":\"a\tb\",\"data\":{\"object\":{}}}",
	"NUL in key":                      "{\"i\x00d\":\"evt_1\",\"type\":\"t\",\"data\":{\"object\":{}}}",
	"unterminated string":             `{"id":"evt_1`,
	"leading zero":                    `{"id":"evt_1","type":"t","x":01,"data":{"object":{}}}`,
	"plus sign":                       `{"id":"evt_1","type":"t","x":+1,"data":{"object":{}}}`,
	"bare minus":                      `{"id":"evt_1","type":"t","x":-,"data":{"object":{}}}`,
	"trailing dot":                    `{"id":"evt_1","type":"t","x":1.,"data":{"object":{}}}`,
	"leading dot":                     `{"id":"evt_1","type":"t","x":.5,"data":{"object":{}}}`,
	"empty exponent":                  `{"id":"evt_1","type":"t","x":1e,"data":{"object":{}}}`,
	"signed empty exponent":           `{"id":"evt_1","type":"t","x":1e+,"data":{"object":{}}}`,
	"hex number":                      `{"id":"evt_1","type":"t","x":0x10,"data":{"object":{}}}`,
	"NaN":                             `{"id":"evt_1","type":"t","x":NaN,"data":{"object":{}}}`,
	"truncated literal":               `{"id":"evt_1","type":"t","x":tru,"data":{"object":{}}}`,
	"bad literal":                     `{"id":"evt_1","type":"t","x":nul1,"data":{"object":{}}}`,
	"upper-case literal":              `{"id":"evt_1","type":"t","livemode":True,"data":{"object":{}}}`,
	"literal with suffix":             `{"id":"evt_1","type":"t","livemode":truex,"data":{"object":{}}}`,
	"mismatched brackets":             `{"id":"evt_1","type":"t","x":[1,2},"data":{"object":{}}}`,
	"mismatched braces":               `{"id":"evt_1","type":"t","x":{"a":1],"data":{"object":{}}}`,
	"array trailing comma":            `{"id":"evt_1","type":"t","x":[1,],"data":{"object":{}}}`,
	"array missing value":             `{"id":"evt_1","type":"t","x":[,1],"data":{"object":{}}}`,
	"object in skipped missing key":   `{"id":"evt_1","type":"t","x":{1:2},"data":{"object":{}}}`,
	"nested object trailing comma":    `{"id":"evt_1","type":"t","data":{"object":{"a":{"b":1,}}}}`,
	"data.object trailing comma":      `{"id":"evt_1","type":"t","data":{"object":{"id":"x",}}}`,
	"unclosed data.object":            `{"id":"evt_1","type":"t","data":{"object":{"id":"x"}`,
	"control char in data.object":     "{\"id\":\"evt_1\",\"type\":\"t\",\"data\":{\"object\":{\"id\":\"in\x01\"}}}",
	"deep nesting in data.object":     `{"id":"evt_1","type":"t","data":{"object":{"x":` + deep(100000, "[", "]") + `}}}`,
	"deep nesting of objects":         `{"id":"evt_1","type":"t","x":` + strings.Repeat(`{"a":`, 100000) + `1` + strings.Repeat(`}`, 100000) + `,"data":{"object":{}}}`,
	"deep nesting top level":          deep(100000, "[", "]"),
	"deep unclosed nesting":           `{"x":` + strings.Repeat("[", 100000),
	"depth 10001 (encoding/json max)": `{"id":"evt_1","type":"t","data":{"object":{}},"x":` + deep(10000, "[", "]") + `}`,
	"unicode escape cut at end":       `{"id":"evt_\u123`,
	"non-hex last digit of escape":    `{"id":"evt_1","type":"t","data":{"object":{"x":"\u123G"}}}`,
	"other byte for colon":            `{"id"="evt_1","type":"t","data":{"object":{}}}`,
	"skipped key without colon":       `{"id":"evt_1","type":"t","x":{"a";1},"data":{"object":{}}}`,
	"upper-case data.Object only":     `{"id":"evt_1","type":"t","data":{"Object":{}}}`,
	// stripe-go's Event and encoding/json read these two otherwise.
	"repeated data":                `{"id":"evt_1","type":"t","data":{"object":{"id":"x"},"previous_attributes":{"a":1}},"data":{"object":{"id":"y"}}}`,
	"repeated data, not an object": `{"id":"evt_1","type":"t","data":1,"data":{"object":{}}}`,
	"repeated previous_attributes": `{"id":"evt_1","type":"t","data":{"object":{},"previous_attributes":{"a":1},"previous_attributes":null}}`,
	// A key encoding/json would read as a field Parse reads.
	"ID beside id":                   `{"id":"evt_1","ID":"evt_2","type":"t","data":{"object":{}}}`,
	"Type before type":               `{"Type":"u","id":"evt_1","type":"t","data":{"object":{}}}`,
	"Created beside created":         `{"id":"evt_1","type":"t","created":1,"Created":5,"data":{"object":{}}}`,
	"api_verſion (U+017F)":           `{"id":"evt_1","type":"t","api_verſion":"v","data":{"object":{}}}`,
	"Livemode":                       `{"id":"evt_1","type":"t","Livemode":true,"data":{"object":{}}}`,
	"Account":                        `{"id":"evt_1","type":"t","Account":"acct_1","data":{"object":{}}}`,
	"OBJECT at the top":              `{"id":"evt_1","type":"t","OBJECT":"event","data":{"object":{}}}`,
	"Data beside data":               `{"id":"evt_1","type":"t","data":{"object":{}},"Data":{"object":{"id":"x"}}}`,
	"data.Object beside data.object": `{"id":"evt_1","type":"t","data":{"object":{},"Object":{"id":"y"}}}`,
	"data.Previous_Attributes":       `{"id":"evt_1","type":"t","data":{"object":{},"Previous_Attributes":{"a":1}}}`,
	"data.object.ID":                 `{"id":"evt_1","type":"t","data":{"object":{"id":"x","ID":"y"}}}`,
	"data.object.Object":             `{"id":"evt_1","type":"t","data":{"object":{"Object":"charge","object":"invoice"}}}`,
	"data.object.I\u0044 escaped":    `{"id":"evt_1","type":"t","data":{"object":{"I\u0044":"y"}}}`,
}

func TestMalformed(t *testing.T) {
	for name, in := range malformedCases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(in))
			errIs(t, err, ErrMalformed)
			notErrIs(t, err, ErrThinEvent)
		})
	}
}

func TestMaxDepthAccepted(t *testing.T) {
	// The top-level object plus 9999 nested arrays is 10000 levels: valid
	// for encoding/json, and for Parse.
	in := []byte(`{"id":"evt_1","type":"t","data":{"object":{}},"x":` + deep(9999, "[", "]") + `}`)
	isTrue(t, json.Valid(in))
	_, err := Parse(in)
	noErr(t, err)

	in = []byte(`{"id":"evt_1","type":"t","data":{"object":{"x":` + deep(9997, "[", "]") + `}}}`)
	isTrue(t, json.Valid(in))
	_, err = Parse(in)
	noErr(t, err)
	in = []byte(`{"id":"evt_1","type":"t","data":{"object":{"x":` + deep(9998, "[", "]") + `}}}`)
	isTrue(t, !json.Valid(in))
	_, err = Parse(in)
	errIs(t, err, ErrMalformed)
}

func TestTruncated(t *testing.T) {
	for _, name := range []string{"invoice.paid.json", "customer.subscription.updated.json"} {
		in := fixture(t, name)
		end := bytes.LastIndexByte(in, '}')
		for i := 0; i <= end; i++ {
			_, err := Parse(in[:i:i])
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s truncated to %d bytes: got %v, want ErrMalformed", name, i, err)
			}
		}
		_, err := Parse(in[: end+1 : end+1])
		noErr(t, err)
	}
}

// TestErrorsDoNotLeakPayload checks that error messages never quote input.
func TestErrorsDoNotLeakPayload(t *testing.T) {
	const secret = "sk_live_SECRET"
	for _, in := range []string{
		`{"id":"` + secret + `","type":"t","data":{"object":"` + secret + `"}}`,
		`{"id":"` + secret + `","type":"t","data":{"object":{"id":"` + secret + `\q"}}}`,
		`{"` + secret + `":1,"id":"` + secret + `","type":"t","data":{"object":{}},"x":` + secret + `}`,
		`{"id":"` + secret + `","type":"t","created":"` + secret + `","data":{"object":{}}}`,
		`{"id":"` + secret + `","type":"t","created":9` + strings.Repeat("9", 30) + `,"data":{"object":{}}}`,
		`{"id":"` + secret + `"` + secret,
		`{"` + secret + `"=1}`,
	} {
		_, err := Parse([]byte(in))
		errIs(t, err, ErrMalformed)
		isTrue(t, !strings.Contains(err.Error(), "SECRET"))
		isTrue(t, !strings.Contains(err.Error(), "999"))
	}
	_, err := Parse([]byte(`{"id":"evt_1","type":"t","data":{}}`))
	errContains(t, err, "data.object")
	_, err = Parse([]byte(`{"id":1,"type":"t","data":{"object":{}}}`))
	errContains(t, err, `"id"`)
	_, err = Parse([]byte(`{"type":"t","data":{"object":{}}}`))
	errContains(t, err, `"id" is missing`)
	// The offset is the offending byte's: here the '}' where a key belongs.
	_, err = Parse([]byte(`{"id":"evt_1",}`))
	errContains(t, err, "expected a string key at offset 14")
}

func TestSemantics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Envelope
	}{
		{
			name: "minimal",
			in:   minimal,
			want: Envelope{ID: "evt_1", Type: "invoice.paid", Created: 1700000000, Object: []byte(`{"id":"in_1","object":"invoice"}`), ObjectID: "in_1", ObjectKind: "invoice"},
		},
		{
			name: "whitespace everywhere",
			in:   " \r\n\t{ \"id\" :\t\"evt_1\" ,\n\"type\"\r: \"t\" , \"livemode\" : true , \"data\" : { \"object\" : { \"id\" : \"x\" , \"object\" : \"charge\" } , \"previous_attributes\" : { \"a\" : [ 1 , 2 ] } } } \n",
			want: Envelope{ID: "evt_1", Type: "t", Livemode: true, Object: []byte(`{ "id" : "x" , "object" : "charge" }`), Previous: []byte(`{ "a" : [ 1 , 2 ] }`), ObjectID: "x", ObjectKind: "charge"},
		},
		{
			name: "nulls and account",
			in:   `{"id":"evt_1","type":"t","api_version":null,"account":"acct_1","livemode":false,"data":{"object":{"id":null,"object":5},"previous_attributes":null}}`,
			want: Envelope{ID: "evt_1", Type: "t", Account: "acct_1", Object: []byte(`{"id":null,"object":5}`)},
		},
		{
			name: "escapes decoded like encoding/json",
			in:   `{"id":"evt_\u00e9\n\"\\\/\b\f\r\t","type":"a\ud83d\ude00b","account":"\ud800","api_version":"\u0032","data":{"object":{"id":"in_\u0031","object":"in\u0076oice"}}}`,
			want: Envelope{ID: "evt_é\n\"\\/\b\f\r\t", Type: "a😀b", Account: "\ufffd", APIVersion: "2", Object: []byte(`{"id":"in_\u0031","object":"in\u0076oice"}`), ObjectID: "in_1", ObjectKind: "invoice", Replaced: "account"},
		},
		{
			name: "invalid UTF-8 replaced",
			in:   "{\"id\":\"evt_\xff1\",\"type\":\"t\xc3\",\"api_version\":\"\xed\xa0\x80\",\"data\":{\"object\":{\"id\":\"in_\xe2\x82\"}}}",
			want: Envelope{ID: "evt_\ufffd1", Type: "t\ufffd", APIVersion: "\ufffd\ufffd\ufffd", Object: []byte("{\"id\":\"in_\xe2\x82\"}"), ObjectID: "in_\ufffd\ufffd", Replaced: "id"},
		},
		{
			name: "valid UTF-8 kept",
			in:   `{"id":"evt_ü","type":"日本","data":{"object":{"id":"€"}}}`,
			want: Envelope{ID: "evt_ü", Type: "日本", Object: []byte(`{"id":"€"}`), ObjectID: "€"},
		},
		{
			name: "escaped keys",
			in:   `{"\u0069d":"evt_1","typ\u0065":"t","d\u0061ta":{"\u006fbject":{"\u0069d":"x"}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Object: []byte(`{"\u0069d":"x"}`), ObjectID: "x"},
		},
		{
			name: "keys of no field in another case skipped",
			in:   `{"id":"evt_1","Request":{"ID":"req_1"},"type":"t","data":{"Previous":1,"object":{"Customer":"cus_1","Ident":"x"}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Object: []byte(`{"Customer":"cus_1","Ident":"x"}`)},
		},
		{
			name: "duplicate keys: last wins",
			in:   `{"id":"evt_1","id":"evt_2","type":"a","type":"b","created":1,"created":2,"livemode":true,"livemode":false,"api_version":"v1","api_version":"v2","data":{"object":{"id":"x","id":7,"object":"o1","object":"o2"},"object":{"id":"y","id":"z"}}}`,
			want: Envelope{ID: "evt_2", Type: "b", Created: 2, APIVersion: "v2", Object: []byte(`{"id":"y","id":"z"}`), ObjectID: "z"},
		},
		{
			name: "null keeps earlier string, like encoding/json",
			in:   `{"id":"evt_1","type":"t","api_version":"v1","api_version":null,"account":"a","account":null,"data":{"object":{}}}`,
			want: Envelope{ID: "evt_1", Type: "t", APIVersion: "v1", Account: "a", Object: []byte(`{}`)},
		},
		{
			name: "nested id and object skipped",
			in:   `{"id":"evt_1","type":"t","x":{"id":"no","data":{"object":{}}},"data":{"x":{"object":{}},"object":{"a":{"id":"no","object":"no"},"b":[{"id":"no"}]}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Object: []byte(`{"a":{"id":"no","object":"no"},"b":[{"id":"no"}]}`)},
		},
		{
			name: "non-string top-level object",
			in:   `{"id":"evt_1","type":"t","object":{"v2.core.event":1},"data":{"object":{}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Object: []byte(`{}`)},
		},
		{
			name: "created limits",
			in:   `{"id":"evt_1","type":"t","created":-9223372036854775808,"data":{"object":{}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Created: -9223372036854775808, Object: []byte(`{}`)},
		},
		{
			name: "created max",
			in:   `{"id":"evt_1","type":"t","created":9223372036854775807,"data":{"object":{}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Created: 9223372036854775807, Object: []byte(`{}`)},
		},
		{
			name: "created negative zero",
			in:   `{"id":"evt_1","type":"t","created":-0,"data":{"object":{}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Object: []byte(`{}`)},
		},
		{
			name: "skipped values of every kind",
			in:   `{"a":[],"b":{},"c":[[],[{}],{"x":[1,-2.5e+10,0.0,1E-3,true,false,null,"s\u00e9\"",{"y":{}}]}],"id":"evt_1","type":"t","data":{"object":{"k":[{"a":[]}],"id":"x"}}}`,
			want: Envelope{ID: "evt_1", Type: "t", Object: []byte(`{"k":[{"a":[]}],"id":"x"}`), ObjectID: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			isTrue(t, json.Valid(in))
			got, err := Parse(in)
			noErr(t, err)
			sameEnvelope(t, tt.want, got)
			equal(t, tt.want.Replaced, got.Replaced, "Replaced")
			if !strings.Contains(tt.name, "escaped keys") {
				// encoding/json agrees.
				sameEnvelope(t, stdDecode(t, in), got)
			}
		})
	}
}

func TestParseAllocs(t *testing.T) {
	in := fixture(t, "invoice.paid.json")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(in); err != nil {
			t.Fatal(err)
		}
	})
	isTrue(t, allocs <= 1, "Parse allocates %v times per call, want <= 1", allocs)
}

func naivePlainEnd(b []byte, i int) int {
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	return i
}

// TestPlainEnd checks the word-at-a-time string scan against a byte loop,
// for every byte value at every position of a word, after every kind of
// filler (borrows in the SWAR arithmetic depend on neighbouring bytes).
func TestPlainEnd(t *testing.T) {
	for _, fill := range []byte{'a', 0x20, 0x21, 0x7f, 0x80, 0xff, '"' + 1, '\\' + 1, '\\' - 1} {
		for pos := 0; pos < 20; pos++ {
			for c := 0; c < 256; c++ {
				b := bytes.Repeat([]byte{fill}, 20)
				b[pos] = byte(c)
				for start := 0; start < 3; start++ {
					if got, want := plainEnd(b, start), naivePlainEnd(b, start); got != want {
						t.Fatalf("fill %#x, byte %#x at %d, start %d: got %d, want %d", fill, c, pos, start, got, want)
					}
				}
			}
		}
	}
}

// TestWhitespace checks ws on runs of every length and every terminator.
func TestWhitespace(t *testing.T) {
	for n := 0; n < 40; n++ {
		for _, lead := range []string{"", "\n", "\r\n", "\t"} {
			for _, end := range []string{"", "x", "\t", "\x00", "\xa0", "!"} {
				in := lead + strings.Repeat(" ", n) + end
				want := len(strings.TrimLeft(in, " \t\r\n"))
				p := parser{b: []byte(in)}
				p.ws()
				if got := len(in) - p.i; got != want {
					t.Fatalf("%q: %d bytes left, want %d", in, got, want)
				}
			}
		}
	}
}

// --- Fuzzing ---------------------------------------------------------------

// member is one key/value of a JSON object, in input order.
type member struct {
	key string
	raw json.RawMessage
}

// members lists the members of the JSON object raw (which must be valid
// JSON), keys decoded, duplicates kept. ok is false when raw is not an object.
func members(t testing.TB, raw []byte) (ms []member, ok bool) {
	t.Helper()
	// Check the kind first: Token would decode a number as a float64, which
	// fails on valid JSON such as 1E700.
	if !isKind(bytes.TrimLeft(raw, " \t\r\n"), '{') {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	noErr(t, err)
	if tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		noErr(t, err)
		var v json.RawMessage
		noErr(t, dec.Decode(&v))
		ms = append(ms, member{key: tok.(string), raw: v})
	}
	return ms, true
}

func isKind(raw []byte, c byte) bool { return len(raw) > 0 && raw[0] == c }

// refParse is a slow, obviously-correct model of Parse built on
// encoding/json, for valid JSON input only. It returns the same error class
// (nil, ErrThinEvent or ErrMalformed) and envelope that Parse should.
func refParse(t testing.TB, in []byte) (Envelope, error) {
	t.Helper()
	top, ok := members(t, in)
	if !ok {
		return Envelope{}, ErrMalformed
	}
	var (
		env                                            Envelope
		bad, thin, haveID, haveType, haveData, haveObj bool
	)
	str := func(raw json.RawMessage) string { return rawString(t, raw) }
	replaced := map[string]bool{}
	for _, m := range top {
		switch m.key {
		case "id", "type":
			if !isKind(m.raw, '"') {
				bad = true
				continue
			}
			if m.key == "id" {
				env.ID, haveID = str(m.raw), true
				replaced["id"] = modelReplaced(t, m.raw)
			} else {
				env.Type, haveType = str(m.raw), true
				replaced["type"] = modelReplaced(t, m.raw)
			}
		case "object":
			thin = isKind(m.raw, '"') && str(m.raw) == thinObject
		case "api_version", "account":
			switch {
			case string(m.raw) == "null":
			case !isKind(m.raw, '"'):
				bad = true
			case m.key == "api_version":
				env.APIVersion = str(m.raw)
				replaced["api_version"] = modelReplaced(t, m.raw)
			default:
				env.Account = str(m.raw)
				replaced["account"] = modelReplaced(t, m.raw)
			}
		case "created":
			n, err := strconv.ParseInt(string(m.raw), 10, 64)
			if err != nil {
				bad = true
				continue
			}
			env.Created = n
		case "livemode":
			switch string(m.raw) {
			case "true", "false":
				env.Livemode = string(m.raw) == "true"
			default:
				bad = true
			}
		case "data":
			data, ok := members(t, m.raw)
			if !ok {
				bad = true
				continue
			}
			haveData = true
			for _, d := range data {
				switch d.key {
				case "object":
					obj, ok := members(t, d.raw)
					if !ok {
						bad = true
						continue
					}
					haveObj = true
					env.Object, env.ObjectID, env.ObjectKind = d.raw, "", ""
					replaced["data.object.id"] = false
					for _, o := range obj {
						switch o.key {
						case "id":
							if isKind(o.raw, '"') { // anything else leaves an earlier id
								env.ObjectID = str(o.raw)
								replaced["data.object.id"] = modelReplaced(t, o.raw)
							}
						case "object":
							if isKind(o.raw, '"') {
								env.ObjectKind = str(o.raw)
							}
						}
					}
				case "previous_attributes":
					switch {
					case string(d.raw) == "null":
						env.Previous = nil
					case isKind(d.raw, '{'):
						env.Previous = d.raw
					default:
						bad = true
					}
				}
			}
		}
	}
	// A key encoding/json would read as one of the fields is refused, and
	// so is a repeated "data" or data.previous_attributes.
	bad = bad || hasFoldedKeys(t, in)
	datas, previous := 0, 0
	for _, m := range top {
		if m.key != "data" {
			continue
		}
		datas++
		data, _ := members(t, m.raw)
		for _, d := range data {
			if d.key == "previous_attributes" {
				previous++
			}
		}
	}
	bad = bad || datas > 1 || previous > 1
	switch {
	case thin:
		return Envelope{}, ErrThinEvent
	case bad || !haveID || !haveType || !haveData || !haveObj || env.ID == "" || env.Type == "":
		return Envelope{}, ErrMalformed
	}
	for _, f := range []string{"id", "type", "data.object.id", "account", "api_version"} {
		if replaced[f] {
			env.Replaced = f
			break
		}
	}
	return env, nil
}

// modelReplaced reports whether encoding/json replaces anything with U+FFFD
// when it decodes the string token raw: whether raw, read as UTF-8 bytes
// and UTF-16 code units from its \u escapes, is not a valid sequence of
// Unicode scalar values.
func modelReplaced(t testing.TB, raw json.RawMessage) bool {
	t.Helper()
	var units []uint16
	for i := 1; i < len(raw)-1; {
		if raw[i] == '\\' {
			if raw[i+1] == 'u' {
				n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
				noErr(t, err)
				units = append(units, uint16(n))
				i += 6
			} else {
				units = append(units, '?')
				i += 2
			}
			continue
		}
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			return true
		}
		units = utf16.AppendRune(units, r)
		i += n
	}
	for i := 0; i < len(units); i++ {
		switch u := rune(units[i]); {
		case u >= 0xdc00 && u <= 0xdfff:
			return true
		case u >= 0xd800 && u <= 0xdbff:
			if i+1 == len(units) || units[i+1] < 0xdc00 || units[i+1] > 0xdfff {
				return true
			}
			i++
		}
	}
	return false
}

// stdFieldNames are the field names encoding/json matches, per object level
// of stdEvent / stdObject.
var stdFieldNames = map[string][]string{
	"top":         {"id", "object", "type", "created", "api_version", "livemode", "account", "data"},
	"data":        {"object", "previous_attributes"},
	"data.object": {"id", "object"},
}

func foldedVariant(key string, names []string) bool {
	for _, n := range names {
		if key != n && strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// hasFoldedKeys reports whether encoding/json could route a key that Parse
// ignores into the stdEvent struct: a key that differs from a field name but
// equals it under encoding/json's case folding, which is exactly
// strings.EqualFold ("ID", "Type", or "api_verſion" with U+017F long s). It
// looks at every occurrence of each level, duplicates included, so it is
// sound where a decode into map[string]any (which keeps only the last
// duplicate) would not be.
func hasFoldedKeys(t testing.TB, in []byte) bool {
	t.Helper()
	top, ok := members(t, in)
	if !ok {
		return false
	}
	for _, m := range top {
		if foldedVariant(m.key, stdFieldNames["top"]) {
			return true
		}
		if m.key != "data" {
			continue
		}
		data, _ := members(t, m.raw)
		for _, d := range data {
			if foldedVariant(d.key, stdFieldNames["data"]) {
				return true
			}
			if d.key != "object" {
				continue
			}
			obj, _ := members(t, d.raw)
			for _, o := range obj {
				if foldedVariant(o.key, stdFieldNames["data.object"]) {
					return true
				}
			}
		}
	}
	return false
}

func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrThinEvent):
		return "thin"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	}
	return "other: " + err.Error()
}

// FuzzParse checks, for any input:
//   - Parse never panics and only returns ErrMalformed or ErrThinEvent;
//   - if encoding/json.Valid rejects the input, Parse fails with ErrMalformed;
//     if Parse succeeds (or reports a thin event) the input is valid JSON;
//   - on valid JSON, Parse agrees exactly (error class and fields) with
//     refParse, a slow model of the documented semantics built on
//     encoding/json's tokenizer;
//   - when Parse succeeds, its fields equal encoding/json's decode of the
//     input into the equivalent struct (an input with keys that
//     encoding/json would match case-insensitively, see hasFoldedKeys, is
//     refused, as the model says). Where Parse is stricter than encoding/json (a null id, a wrong-typed
//     value later overridden by a duplicate key), Parse fails and there is
//     nothing to compare; refParse covers those cases.
func FuzzParse(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
	}
	f.Add([]byte(thinEvent))
	f.Add([]byte(minimal))
	for _, in := range malformedCases {
		if len(in) < 4096 {
			f.Add([]byte(in))
		}
	}
	f.Add([]byte(`{"id":"evt_\u00e9","ID":"x","type":"a\ud83d","data":{"object":{"id":"\u0069","object":"o"},"previous_attributes":null},"created":-0,"livemode":true,"account":null}`))
	f.Add([]byte(`{"id":"evt_1","type":"t","api_verſion":"v","Livemode":true,"data":{"object":{"ID":"x","object":"o"}}}`))
	f.Add([]byte(`{"id":"evt_\ud800\udc00\udbff","type":"t\\ud800","account":"\ud800","account":null,"data":{"object":{"id":"\udc00\ud800"}}}`))
	f.Add([]byte("{\"id\":\"evt_\xed\xa0\x80\",\"type\":\"t\",\"api_version\":\"v\xff\",\"data\":{\"object\":{\"id\":\"o\xc3\"}}}"))
	// Replaced at the edges of the surrogate ranges and of ASCII: two low
	// surrogates, the last low surrogate closing a pair, a lone 0x80 byte.
	f.Add([]byte(`{"id":"evt_\udc00\udc00","type":"t","data":{"object":{}}}`))
	f.Add([]byte(`{"id":"evt_\ud800\udfff","type":"t","data":{"object":{}}}`))
	f.Add([]byte("{\"id\":\"evt_\x80\",\"type\":\"t\",\"data\":{\"object\":{}}}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := plainEnd(in, 0), naivePlainEnd(in, 0); got != want {
			t.Fatalf("plainEnd = %d, want %d", got, want)
		}
		got, err := Parse(in)
		class := errClass(err)
		isTrue(t, !strings.Contains(class, "other"), "unexpected error type")
		if !json.Valid(in) {
			equal(t, "malformed", class, "invalid JSON accepted")
			return
		}
		want, wantErr := refParse(t, in)
		equal(t, errClass(wantErr), class, "error class differs from the model: %v", err)
		if err != nil {
			return
		}
		sameEnvelope(t, want, got)
		equal(t, want.Replaced, got.Replaced, "Replaced")
		isSubslice(t, in, got.Object)
		sameEnvelope(t, stdDecode(t, in), got)
	})
}

// --- Benchmarks ------------------------------------------------------------

func BenchmarkParse(b *testing.B) {
	in := fixture(b, "invoice.paid.json")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		env, err := Parse(in)
		if err != nil || env.ObjectID == "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibUnmarshal is what Parse replaces: json.Unmarshal into a
// struct with json.RawMessage fields, then a small decode of data.object for
// its id and object.
func BenchmarkStdlibUnmarshal(b *testing.B) {
	in := fixture(b, "invoice.paid.json")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	type object struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	for b.Loop() {
		var ev stdEvent
		if err := json.Unmarshal(in, &ev); err != nil {
			b.Fatal(err)
		}
		var obj object
		if err := json.Unmarshal(ev.Data.Object, &obj); err != nil || obj.ID == "" {
			b.Fatal(err)
		}
	}
}

// --- Helpers (the module's go.sum lacks the entries that testify/require
// needs, so these stand in for it) -----------------------------------------

func msg(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return ""
	}
	if f, ok := msgAndArgs[0].(string); ok {
		return ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
	}
	return ": " + fmt.Sprint(msgAndArgs...)
}

func noErr(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error %v%s", err, msg(msgAndArgs))
	}
}

func errIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

func notErrIs(t testing.TB, err, target error) {
	t.Helper()
	if errors.Is(err, target) {
		t.Fatalf("got error %v, want one that is not %v", err, target)
	}
}

func errContains(t testing.TB, err error, sub string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("got error %v, want one containing %q", err, sub)
	}
}

func equal[T comparable](t testing.TB, want, got T, msgAndArgs ...any) {
	t.Helper()
	if want != got {
		t.Fatalf("got %#v, want %#v%s", got, want, msg(msgAndArgs))
	}
}

func isTrue(t testing.TB, cond bool, msgAndArgs ...any) {
	t.Helper()
	if !cond {
		t.Fatalf("condition failed%s", msg(msgAndArgs))
	}
}
