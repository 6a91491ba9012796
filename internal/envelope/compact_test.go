package envelope

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestCompactMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		`{ "a" : [ 1 , 2.5e3 , true , false , null ] , "b" : " spaced \" string \\ " }`,
		"{\n\t\"x\":\r\n {\"\\u0041 \": \"tab\\tin\"}}",
		`"just a string with  two spaces"`, `  7  `, `[]`, `{}`,
	}
	for _, ev := range fixtures(t) {
		inputs = append(inputs, string(ev))
	}
	for _, in := range inputs {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if got := Compact([]byte("keep"), []byte(in)); string(got) != "keep"+want.String() {
			t.Fatalf("Compact(%.60q) =\n%.200s\nwant\n%.200s", in, got, want.String())
		}
	}
}

func FuzzCompact(f *testing.F) {
	for _, ev := range fixtures(f) {
		f.Add(ev)
	}
	f.Add([]byte(`{"a":"\u00e9 \\" , "b" : [ ]}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got := Compact(nil, v) // never panics, valid or not
		if !json.Valid(v) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, v); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("Compact differs from json.Compact:\n%q\n%q", got, want.Bytes())
		}
	})
}

func BenchmarkCompact(b *testing.B) {
	env, err := Parse(fixtures(b)["invoice.paid.json"])
	if err != nil {
		b.Fatal(err)
	}
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(env.Object)))
	for b.Loop() {
		dst = Compact(dst[:0], env.Object)
	}
}
