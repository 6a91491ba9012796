package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

func keepAll([]byte) bool { return true }

func keepOnly(keys ...string) func([]byte) bool {
	return func(k []byte) bool {
		for _, want := range keys {
			if string(k) == want {
				return true
			}
		}
		return false
	}
}

func TestFilterKeepsChosenMembers(t *testing.T) {
	obj := []byte(` { "id" : "in_1", "lines": {"data": [{"id": "il_1", "x": [1, 2, {"y": null}]}]},
		"metadata": {"account_id": "acct_1"}, "\u0069d2": "esc", "skip": "me" } `)
	got, err := Filter(nil, obj, keepOnly("id", "lines", "id2"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"in_1","lines":{"data": [{"id": "il_1", "x": [1, 2, {"y": null}]}]},"\u0069d2":"esc"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got, err := Filter([]byte("prefix"), []byte(`{}`), keepAll); err != nil || string(got) != "prefix{}" {
		t.Fatalf("empty object: %q, %v", got, err)
	}
}

func TestFilterRejectsMalformed(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a" 1}`, `{1:2}`, `{"a":[1,]}`} {
		if _, err := Filter(nil, []byte(in), keepAll); !errors.Is(err, ErrMalformed) {
			t.Errorf("Filter(%q) = %v, want ErrMalformed", in, err)
		}
	}
}

func TestFilterFixtures(t *testing.T) {
	for name, ev := range fixtures(t) {
		env, err := Parse(ev)
		if err != nil {
			t.Fatal(name, err)
		}
		all, err := Filter(nil, env.Object, keepAll)
		if err != nil {
			t.Fatal(name, err)
		}
		requireSameJSON(t, name, env.Object, all)
	}
}

func requireSameJSON(t *testing.T, name string, a, b []byte) {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(name, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: filtered output is not JSON: %v", name, err)
	}
	if !reflect.DeepEqual(va, vb) {
		t.Fatalf("%s: filtered object differs", name)
	}
}

// FuzzFilter: on any input Filter never panics; on a valid object, keeping
// every member gives the same value, and keeping some gives valid JSON with
// exactly those members.
func FuzzFilter(f *testing.F) {
	for _, ev := range fixtures(f) {
		if env, err := Parse(ev); err == nil {
			f.Add(env.Object, "id")
		}
	}
	f.Add([]byte(`{"a":1,"A":2,"\u0061":3}`), "a")
	f.Fuzz(func(t *testing.T, obj []byte, only string) {
		if !utf8.ValidString(only) {
			return // encoding/json, the oracle, turns such a key into U+FFFD
		}
		all, err := Filter(nil, obj, keepAll)
		var m map[string]json.RawMessage
		valid := json.Unmarshal(obj, &m) == nil && bytes.HasPrefix(bytes.TrimLeft(obj, " \t\r\n"), []byte("{"))
		if err != nil {
			if valid {
				t.Fatalf("Filter failed on a valid object: %v", err)
			}
			return
		}
		if !valid {
			t.Fatalf("Filter accepted an invalid object")
		}
		requireSameJSON(t, "all", obj, all)
		some, err := Filter(nil, obj, keepOnly(only))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(some, &got); err != nil {
			t.Fatalf("filtered output is not JSON: %v", err)
		}
		for k := range got {
			if k != only {
				t.Fatalf("kept %q", k)
			}
		}
		if _, ok := m[only]; ok != (len(got) == 1) {
			t.Fatalf("member %q kept: %t, in input: %t", only, len(got) == 1, ok)
		}
	})
}

func BenchmarkFilter(b *testing.B) {
	env, err := Parse(fixtures(b)["invoice.paid.json"])
	if err != nil {
		b.Fatal(err)
	}
	keep := keepOnly("id", "customer", "metadata", "lines")
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(env.Object)))
	for b.Loop() {
		dst, err = Filter(dst[:0], env.Object, keep)
		if err != nil {
			b.Fatal(err)
		}
	}
}
