package envelope

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// v2Event is a v2 event as GET /v2/core/events/{id} returns it (Stripe's
// API reference example), with a context and changes added.
const v2Event = `{
  "id": "evt_test_65RCjj4EqW1sabcjs2Z16RCMoNQdSQkOWvfL6L5uU2K40u",
  "object": "v2.core.event",
  "context": "acct_1Nv0FGQ9RKHgCVdK",
  "created": "2024-09-26T17:46:22.134Z",
  "data": {
    "developer_message_summary": "There is 1 invalid event",
    "reason": {"error_count": 1, "error_types": [{"code": "meter_event_no_customer_defined", "error_count": 1}]},
    "validation_end": "2024-09-26T17:46:20.000Z",
    "validation_start": "2024-09-26T17:46:10.000Z"
  },
  "changes": {"before": {"status": "active"}, "after": {"status": "inactive"}},
  "livemode": true,
  "reason": null,
  "related_object": {"id": "mtr_test_61RCjiqdTDC91zgip41IqPCzPnxqqSVc", "type": "billing.meter", "url": "/v1/billing/meters/mtr_test_61RCjiqdTDC91zgip41IqPCzPnxqqSVc"},
  "type": "v1.billing.meter.error_report_triggered"
}`

func TestParseV2Event(t *testing.T) {
	env, err := ParseV2Event([]byte(v2Event))
	if err != nil {
		t.Fatal(err)
	}
	want := Envelope{
		ID: "evt_test_65RCjj4EqW1sabcjs2Z16RCMoNQdSQkOWvfL6L5uU2K40u", Type: "v1.billing.meter.error_report_triggered",
		Created: 1727372782, Livemode: true, Account: "acct_1Nv0FGQ9RKHgCVdK",
		ObjectID: "mtr_test_61RCjiqdTDC91zgip41IqPCzPnxqqSVc", ObjectKind: "billing.meter", V2: true,
	}
	got := env
	got.Object, got.Previous = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("envelope\n got %+v\nwant %+v", got, want)
	}
	if !strings.HasPrefix(string(env.Object), `{`) || !strings.Contains(string(env.Object), `"developer_message_summary"`) {
		t.Fatalf("Object is not data: %s", env.Object)
	}
	if !strings.Contains(string(env.Previous), `"before"`) {
		t.Fatalf("Previous is not changes: %s", env.Previous)
	}
	if parsed, err := ParseAny([]byte(v2Event)); err != nil || parsed.ID != env.ID || !parsed.V2 {
		t.Fatalf("ParseAny: %+v, %v", parsed, err)
	}

	// A v2 event without data, context, related object or changes.
	bare := `{"id":"evt_1","object":"v2.core.event","type":"v2.core.event_destination.ping","created":"2024-09-26T17:46:22Z","data":null,"changes":null,"context":null}`
	env, err = ParseV2Event([]byte(bare))
	if err != nil {
		t.Fatal(err)
	}
	if string(env.Object) != "null" || env.Previous != nil || env.Account != "" || env.ObjectID != "" {
		t.Fatalf("bare: %+v", env)
	}
	// Without the data key at all, Object is "null" too.
	env, err = ParseV2Event([]byte(`{"id":"evt_1","object":"v2.core.event","type":"t","created":"2024-09-26T17:46:22Z"}`))
	if err != nil || string(env.Object) != "null" {
		t.Fatalf("no data: %q, %v", env.Object, err)
	}
}

// TestParseV2Replaced: Replaced names the first of a v2 event's id, type,
// context and related_object.id (a notification's id, type and context)
// whose text decoding replaced with U+FFFD.
func TestParseV2Replaced(t *testing.T) {
	ev := func(id, typ, context, related string) string {
		return `{"id":"` + id + `","object":"v2.core.event","type":"` + typ + `","context":"` + context +
			`","created":"2024-09-26T17:46:22Z","related_object":{"id":"` + related + `","type":"billing.meter"}}`
	}
	for _, c := range []struct{ in, want, wantThin string }{
		{ev("evt_1", "t", "acct_1", "mtr_1"), "", ""},
		{ev(`evt_\ud83d\ude00`, "t", "acct_1", "mtr_1"), "", ""},
		{ev(`evt_\ud800`, "t", "acct_1", "mtr_1"), "id", "id"},
		{ev("evt_1", "t\xff", "acct_1", "mtr_1"), "type", "type"},
		{ev("evt_1", "t", `acct_\udc00`, `mtr_\udc00`), "context", "context"},
		{ev("evt_1", "t", "acct_1", `mtr_\udc00`), "related_object.id", ""},
		{ev("evt_1", "t\xff", `acct_\udc00`, `mtr_\udc00`), "type", "type"},
	} {
		env, err := ParseV2Event([]byte(c.in))
		if err != nil || env.Replaced != c.want {
			t.Errorf("ParseV2Event(%s): Replaced %q, %v; want %q", c.in, env.Replaced, err, c.want)
		}
		n, err := ParseThin([]byte(c.in))
		if err != nil || n.Replaced != c.wantThin {
			t.Errorf("ParseThin(%s): Replaced %q, %v; want %q", c.in, n.Replaced, err, c.wantThin)
		}
	}
}

func TestParseThin(t *testing.T) {
	n, err := ParseThin([]byte(`{"id":"evt_1","object":"v2.core.event","type":"v1.billing.meter.no_meter_found","created":"2024-09-17T06:20:52.246Z","context":"acct_1","related_object":{"id":"mtr_1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if n != (Notification{ID: "evt_1", Type: "v1.billing.meter.no_meter_found", Context: "acct_1"}) {
		t.Fatalf("%+v", n)
	}
	if n, err := ParseThin([]byte(`{"id":"evt_1","object":"v2.core.event","type":"t","context":null}`)); err != nil || n.Context != "" {
		t.Fatalf("%+v, %v", n, err)
	}
}

// TestParseThinLivemode: a notification's livemode is read when it is a
// boolean, nil when absent or null, and one of another type is malformed,
// named, as Parse refuses a snapshot event's.
func TestParseThinLivemode(t *testing.T) {
	for in, want := range map[string]*bool{`,"livemode":true`: new(true), `,"livemode":false`: new(false), ``: nil, `,"livemode":null`: nil} {
		n, err := ParseThin([]byte(`{"id":"evt_1","object":"v2.core.event","type":"t"` + in + `}`))
		if err != nil || (n.Livemode == nil) != (want == nil) || want != nil && *n.Livemode != *want {
			t.Errorf("ParseThin with %s: %v, %v", in, n.Livemode, err)
		}
	}
	_, err := ParseThin([]byte(`{"id":"evt_1","object":"v2.core.event","type":"t","livemode":"true"}`))
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `"livemode" has the wrong type`) {
		t.Errorf("a string livemode: %v", err)
	}
}

// TestParseV2Malformed: what is not a v2 event fails with ErrMalformed, and
// the error never quotes the input.
func TestParseV2Malformed(t *testing.T) {
	const secret = "SECRET_PAYLOAD"
	cases := map[string]string{
		"not JSON":        `{"id":"SECRET_PAYLOAD"`,
		"array":           `["SECRET_PAYLOAD"]`,
		"snapshot object": `{"id":"SECRET_PAYLOAD","object":"event","type":"t","created":"2024-09-17T06:20:52Z"}`,
		"no id":           `{"object":"v2.core.event","type":"SECRET_PAYLOAD","created":"2024-09-17T06:20:52Z"}`,
		"null id":         `{"id":null,"object":"v2.core.event","type":"SECRET_PAYLOAD","created":"2024-09-17T06:20:52Z"}`,
		"no type":         `{"id":"SECRET_PAYLOAD","object":"v2.core.event","created":"2024-09-17T06:20:52Z"}`,
		"numeric id":      `{"id":1,"object":"v2.core.event","type":"SECRET_PAYLOAD","created":"2024-09-17T06:20:52Z"}`,
		"no created":      `{"id":"SECRET_PAYLOAD","object":"v2.core.event","type":"t"}`,
		"unix created":    `{"id":"SECRET_PAYLOAD","object":"v2.core.event","type":"t","created":1727372782}`,
		"bad created":     `{"id":"evt","object":"v2.core.event","type":"t","created":"SECRET_PAYLOAD"}`,
		"context object":  `{"id":"evt","object":"v2.core.event","type":"t","created":"2024-09-17T06:20:52Z","context":{"x":"SECRET_PAYLOAD"}}`,
		"empty id":        `{"id":"","object":"v2.core.event","type":"SECRET_PAYLOAD","created":"2024-09-17T06:20:52Z"}`,
		"empty type":      `{"id":"SECRET_PAYLOAD","object":"v2.core.event","type":"","created":"2024-09-17T06:20:52Z"}`,
	}
	for name, in := range cases {
		_, err := ParseV2Event([]byte(in))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the input: %v", name, err)
		}
		if name == "unix created" && !strings.Contains(err.Error(), `"created" has the wrong type`) {
			t.Errorf("%s: the error does not name the field: %v", name, err)
		}
		if name == "no created" || name == "unix created" || name == "bad created" {
			continue // a notification needs no created
		}
		if _, err := ParseThin([]byte(in)); !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), secret) {
			t.Errorf("ParseThin %s: %v", name, err)
		}
	}
}
