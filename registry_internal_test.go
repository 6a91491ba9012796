package idempotency

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
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

func TestDecoderFilterDecodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	require.NotNil(t, fieldFilter(reflect.TypeFor[slimTest]()))
	require.NotNil(t, fieldFilter(reflect.TypeFor[*slimTest]()))
	require.Nil(t, fieldFilter(reflect.TypeFor[embeddedTest]()), "embedded structs are not filtered")
	require.Nil(t, fieldFilter(reflect.TypeFor[map[string]any]()))

	inputs := []string{
		`{"id":"in_1","ID":"upper wins as the later","customer":"cus_1","amount_due":2000,"other":{"deep":[1,2,3]}}`,
		`{"Id":"in_2","CUSTOMER":"cus_2","untagged":"u","Untagged":"U","-":"dash","Skipped":"no"}`,
		`{"\u0069d":"escaped key","metadata":{"account_id":"acct_1"},"metadata":null}`,
		`{"ıd":"dotless i is not id","ſkipped":"long s","K":"kelvin sign"}`,
		`{"amount_due":"not a number"}`,
		`{"lines":{"data":[{"period":{"end":1759334400}}]},"lines":{"data":[]}}`,
		`{}`,
	}
	paths, err := filepath.Glob("testdata/stripe-events/*.json")
	require.NoError(t, err)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var ev struct {
			Data struct {
				Object json.RawMessage `json:"object"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(b, &ev))
		inputs = append(inputs, string(ev.Data.Object))
	}
	for _, in := range inputs {
		requireSameDecode[slimTest](t, []byte(in))
		requireSameDecode[*slimTest](t, []byte(in))
		requireSameDecode[embeddedTest](t, []byte(in))
	}
}

func FuzzDecoderFilter(f *testing.F) {
	f.Add([]byte(`{"id":"in_1","Customer":"c","amount_due":1,"x":[{"id":2}]}`))
	f.Add([]byte(`{"\u0069D":"x","metadata":{"a":"b"},"lines":{"data":[{"period":{"end":1}}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // data.object has passed the envelope parser's validation
		}
		requireSameDecode[slimTest](t, raw)
	})
}
