package decode

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

//lint:file-ignore SA5008 the tests give encoding/json the odd tags it tolerates, to decode as it does

type slimTest struct {
	ID       string            `json:"id"`
	Customer string            `json:"customer"`
	Metadata map[string]string `json:"metadata"`
	Amount   int64             `json:"amount_due"`
	Untagged string
	Skipped  string `json:"-"`
	Dash     string `json:"-,"`
	Lines    struct {
		Data []struct {
			Period struct{ End int64 } `json:"period"`
		} `json:"data"`
	} `json:"lines"`
	//lint:ignore U1000 shows unexported fields are ignored
	unexported string
}

type embeddedTest struct {
	slimTest
	Extra string `json:"extra"`
}

// requireSameDecode decodes raw with both of For's funcs, with the bypass
// on and off, and with json.Unmarshal, and requires the same value and the
// same success.
func requireSameDecode[T any](t *testing.T, raw []byte) {
	t.Helper()
	var want T
	wantErr := json.Unmarshal(raw, &want)
	for _, bypass := range bypassModes {
		fast, plain := forBypass[T](bypass)
		for _, path := range []struct {
			name string
			dec  func([]byte, *T) error
		}{{"fast", fast}, {"plain", plain}} {
			var got T
			gotErr := path.dec(raw, &got)
			require.Equal(t, wantErr == nil, gotErr == nil, "%s, bypass %v: errors: %v / %v", path.name, bypass, gotErr, wantErr)
			require.True(t, reflect.DeepEqual(want, got), "%s, bypass %v: decoded\n%+v\nwant\n%+v", path.name, bypass, got, want)
		}
	}
}

func TestDecoderDecodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	inputs := []string{
		`{"id":"in_1","ID":"upper wins as the later","customer":"cus_1","amount_due":2000,"other":{"deep":[1,2,3]}}`,
		`{"Id":"in_2","CUSTOMER":"cus_2","untagged":"u","Untagged":"U","-":"dash","Skipped":"no"}`,
		`{"\u0069d":"escaped key","metadata":{"account_id":"acct_1"},"metadata":null}`,
		`{"ıd":"dotless i is not id","ſkipped":"long s","K":"kelvin sign"}`,
		`{"amount_due":"not a number"}`,
		`{"lines":{"data":[{"period":{"end":1759334400}}]},"lines":{"data":[]}}`,
		`{}`,
	}
	for _, raw := range fixtureObjects(t) {
		inputs = append(inputs, string(raw))
	}
	for _, in := range inputs {
		requireSameDecode[slimTest](t, []byte(in))
		requireSameDecode[*slimTest](t, []byte(in))
		requireSameDecode[embeddedTest](t, []byte(in))
	}
}

func FuzzDecoderSlim(f *testing.F) {
	f.Add([]byte(`{"id":"in_1","Customer":"c","amount_due":1,"x":[{"id":2}]}`))
	f.Add([]byte(`{"\u0069D":"x","metadata":{"a":"b"},"lines":{"data":[{"period":{"end":1}}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // data.object has passed the envelope parser's validation
		}
		requireSameDecode[slimTest](t, raw)
	})
}

// aliasTest has the field types encoding/json fills by copying; the
// decoder must copy them too.
type aliasTest struct {
	Raw   json.RawMessage `json:"raw"`
	Bytes []byte          `json:"bytes"`
	Any   any             `json:"any"`
	Num   json.Number     `json:"num"`
}

func TestDecoderDoesNotAliasItsBuffers(t *testing.T) {
	t.Parallel()
	dec, _ := For[aliasTest]()
	var a, b aliasTest
	require.NoError(t, dec([]byte(`{"raw": {"x":"first"},"bytes":"Zmlyc3Q=","any":{"s":"first"},"num":1}`), &a))
	require.NoError(t, dec([]byte(`{"raw": {"x":"SECOND"},"bytes":"U0VDT05E","any":{"s":"SECOND"},"num":2}`), &b))
	require.Equal(t, `{"x":"first"}`, string(a.Raw))
	require.Equal(t, "first", string(a.Bytes))
	require.Equal(t, "first", a.Any.(map[string]any)["s"])
	require.Equal(t, json.Number("1"), a.Num)

	// A type that keeps its input against json.Unmarshaler's contract gets
	// a buffer of its own; json.RawMessage keeps the bytes as sent.
	kd, _ := For[*keeper]()
	var first, second *keeper
	require.NoError(t, kd([]byte(`{"id": "in_first"}`), &first))
	require.NoError(t, kd([]byte(`{"id": "in_SECOND"}`), &second))
	require.Equal(t, `{"id":"in_first"}`, string(first.b))
	requireSameDecode[json.RawMessage](t, []byte("{ \"a\" : 1 }"))
}

// A null data.object (a v2 event without data) decodes into a pointer T
// whose type decodes itself as json.Unmarshal decodes it: a nil pointer.
// The plain decoder used to allocate one and call UnmarshalJSON("null").
func TestDecoderNullIntoPointerUnmarshaler(t *testing.T) {
	t.Parallel()
	requireSameDecode[*stripe.Customer](t, []byte("null"))
	requireSameDecode[*keeper](t, []byte("null"))
	requireSameDecode[keeper](t, []byte("null"))
	requireSameDecode[*slimTest](t, []byte("null"))
}

type keeper struct{ b []byte }

func (k *keeper) UnmarshalJSON(b []byte) error { k.b = b; return nil }

// invalidTagTest: encoding/json ignores a tag name it deems invalid (an
// apostrophe here) and matches the Go field name instead.
type invalidTagTest struct {
	Status string `json:"status'"`
}

func TestDecoderInvalidTagName(t *testing.T) {
	t.Parallel()
	requireSameDecode[invalidTagTest](t, []byte(`{"status":"paid","other":1}`))
}

// BenchmarkDecodeInvoice decodes the invoice.paid fixture's data.object
// into a *stripe.Invoice with json.Unmarshal and with For's fast func, as
// this build decides the bypass (on: stripe-go as go.mod pins it) and with
// the bypass off, as a binary linking another stripe-go decodes.
func BenchmarkDecodeInvoice(b *testing.B) {
	raw := fixtureObjects(b)["invoice.paid.json"]
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var inv *stripe.Invoice
			if err := json.Unmarshal(raw, &inv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		dec, _ := For[*stripe.Invoice]()
		b.ReportAllocs()
		for b.Loop() {
			var inv *stripe.Invoice
			if err := dec(raw, &inv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder-bypass-off", func(b *testing.B) {
		dec, _ := forBypass[*stripe.Invoice](false)
		b.ReportAllocs()
		for b.Loop() {
			var inv *stripe.Invoice
			if err := dec(raw, &inv); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// tally counts the calls of its UnmarshalJSON, as a type that decodes
// into what it holds would.
type tally int

func (n *tally) UnmarshalJSON([]byte) error { *n++; return nil }

// TestDecoderFallbackStartsFresh: when the compiled path gives up partway
// (at a repeated key here), what it wrote is dropped before encoding/json
// decodes, which calls UnmarshalJSON once per occurrence.
func TestDecoderFallbackStartsFresh(t *testing.T) {
	t.Parallel()
	type counted struct {
		T  tally  `json:"t"`
		ID string `json:"id"`
	}
	raw := []byte(`{"t":0,"id":"a","id":"b"}`)
	requireSameDecode[counted](t, raw)
	fast, _ := For[counted]()
	var v counted
	require.NoError(t, fast(raw, &v))
	require.Equal(t, counted{T: 1, ID: "b"}, v)
}

// TestDecoderBypassDecidesPath: with the bypass on, For's fast func
// decodes a stripe-go expandable resource on the compiled path; with it
// off, stripe-go's UnmarshalJSON does. Both give json.Unmarshal's value.
// Not parallel: TestFastDecodeStripeFixtures decodes a payout event's
// Payout too, and in parallel its decode fell between the two counts.
func TestDecoderBypassDecidesPath(t *testing.T) {
	count := CountFast[*stripe.Payout]()
	raw := []byte(`{"id":"po_1","object":"payout","amount":1000,"currency":"usd","destination":"ba_1"}`)
	before := count()
	off, _ := forBypass[*stripe.Payout](false)
	var p *stripe.Payout
	require.NoError(t, off(raw, &p))
	require.Equal(t, before, count(), "bypass off: stripe-go's UnmarshalJSON decodes")
	on, _ := forBypass[*stripe.Payout](true)
	require.NoError(t, on(raw, &p))
	require.Equal(t, before+1, count(), "bypass on: the compiled path decodes")
	require.Equal(t, int64(1000), p.Amount)
	require.Equal(t, "ba_1", p.Destination.ID)
	requireSameDecode[*stripe.Payout](t, raw)
}

// TestDecoderCompiledPerBypass: the cache keeps a type's Decoders with the
// bypass on and off apart. With it off, a stripe-go resource in a user's
// type decodes through its UnmarshalJSON, which takes a repeated key the
// field by field decoding gives up on.
func TestDecoderCompiledPerBypass(t *testing.T) {
	t.Parallel()
	type refs struct {
		Customer *stripe.Customer `json:"customer"`
	}
	raw := []byte(`{"customer":{"id":"cus_1","id":"cus_2"}}`)
	rt := reflect.TypeFor[refs]()
	var on, off refs
	require.False(t, compiled(rt, true).Decode(raw, reflect.ValueOf(&on).Elem()), "bypass on: a repeated key gives up")
	require.True(t, compiled(rt, false).Decode(raw, reflect.ValueOf(&off).Elem()), "bypass off: stripe-go's UnmarshalJSON decodes")
	require.Equal(t, "cus_2", off.Customer.ID)
}

// TestCountFast: the count is of decodes the compiled path completed, not
// of those handed to encoding/json.
func TestCountFast(t *testing.T) {
	t.Parallel()
	type counted struct {
		ID string `json:"id"`
	}
	count := CountFast[counted]()
	before := count() // the count is the type's, and outlives a run of the test (-count=N)
	fast, plain := For[counted]()
	var v counted
	require.NoError(t, fast([]byte(`{"id":"a"}`), &v))
	require.EqualValues(t, before+1, count())
	require.NoError(t, plain([]byte(`{"id":"b"}`), &v))
	require.NoError(t, fast([]byte(`{"id":"c","id":"repeated: the fast path gives up"}`), &v))
	require.Equal(t, "repeated: the fast path gives up", v.ID)
	require.EqualValues(t, before+1, count())
}
