package idempotency

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
)

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
	unexported string //nolint:unused // shows unexported fields are ignored
}

type embeddedTest struct {
	slimTest
	Extra string `json:"extra"`
}

// requireSameDecode decodes raw with the registry's decoder and with
// json.Unmarshal and requires the same value and the same success.
func requireSameDecode[T any](t *testing.T, raw []byte) {
	t.Helper()
	var got, want T
	gotErr := decoderFor[T]()(raw, &got)
	wantErr := json.Unmarshal(raw, &want)
	require.Equal(t, wantErr == nil, gotErr == nil, "errors: %v / %v", gotErr, wantErr)
	require.True(t, reflect.DeepEqual(want, got), "decoded\n%+v\nwant\n%+v", got, want)
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
	dec := decoderFor[aliasTest]()
	var a, b aliasTest
	require.NoError(t, dec([]byte(`{"raw": {"x":"first"},"bytes":"Zmlyc3Q=","any":{"s":"first"},"num":1}`), &a))
	require.NoError(t, dec([]byte(`{"raw": {"x":"SECOND"},"bytes":"U0VDT05E","any":{"s":"SECOND"},"num":2}`), &b))
	require.Equal(t, `{"x":"first"}`, string(a.Raw))
	require.Equal(t, "first", string(a.Bytes))
	require.Equal(t, "first", a.Any.(map[string]any)["s"])
	require.Equal(t, json.Number("1"), a.Num)

	// A type that keeps its input against json.Unmarshaler's contract gets
	// a buffer of its own; json.RawMessage keeps the bytes as sent.
	kd := decoderFor[*keeper]()
	var first, second *keeper
	require.NoError(t, kd([]byte(`{"id": "in_first"}`), &first))
	require.NoError(t, kd([]byte(`{"id": "in_SECOND"}`), &second))
	require.Equal(t, `{"id":"in_first"}`, string(first.b))
	requireSameDecode[json.RawMessage](t, []byte("{ \"a\" : 1 }"))
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
// into a *stripe.Invoice with json.Unmarshal and with the registry's
// decoder.
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
		dec := decoderFor[*stripe.Invoice]()
		b.ReportAllocs()
		for b.Loop() {
			var inv *stripe.Invoice
			if err := dec(raw, &inv); err != nil {
				b.Fatal(err)
			}
		}
	})
}
