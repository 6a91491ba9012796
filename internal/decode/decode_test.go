package decode

import (
	"encoding/json"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

//lint:file-ignore SA5008 the tests give encoding/json the odd tags it tolerates, to decode as it does

type Status string

type Inner struct {
	N    int64  `json:"n"`
	Name string `json:"name"`
}

type Embedded struct {
	Promoted string `json:"promoted"`
	Shadow   string
}

type unexportedEmbedded struct {
	Hidden string `json:"hidden"`
}

type kinds struct {
	Embedded
	unexportedEmbedded
	S        string             `json:"s"`
	Status   Status             `json:"status"`
	B        bool               `json:"b"`
	I        int                `json:"i"`
	I8       int8               `json:"i8"`
	U        uint32             `json:"u"`
	F        float64            `json:"f"`
	F32      float32            `json:"f32"`
	P        *Inner             `json:"p"`
	PP       **int              `json:"pp"`
	Inner    Inner              `json:"inner"`
	List     []*Inner           `json:"list"`
	Strs     []string           `json:"strs"`
	Ints     []int              `json:"ints"`
	Meta     map[string]string  `json:"meta"`
	Objs     map[string]Inner   `json:"objs"`
	Statuses map[Status]float64 `json:"statuses"`
	IntKeys  map[int]string     `json:"int_keys"`
	Any      any                `json:"any"`
	Raw      json.RawMessage    `json:"raw"`
	Bytes    []byte             `json:"bytes"`
	Arr      [2]int             `json:"arr"`
	Addr     netip.Addr         `json:"addr"` // encoding.TextUnmarshaler
	Num      json.Number        `json:"num"`
	Untagged string
	Skipped  string           `json:"-"`
	Dash     string           `json:"-,"`
	Self     *kinds           `json:"self"`
	Quoted   withStringOption `json:"quoted"`
	Cnt      Cnt              `json:"cnt"`
	PCnt     PCnt             `json:"pcnt"`
	Wrapped  struct{ Cnt }    `json:"wrapped"`
	Opts     []Opt            `json:"opts"`
	//lint:ignore U1000 encoding/json ignores it
	private string
}

type withStringOption struct {
	N   int64    `json:"n,string"`
	F   float64  `json:"f,string"`
	PF  *float64 `json:"pf,string"`
	B   bool     `json:"b,string"`
	S   string   `json:"s,string"`
	U   uint8    `json:"u,omitempty,string"`
	Obj Inner    `json:"obj,string"` // encoding/json ignores the option here
}

type embeddedPointer struct {
	*Inner
	X int `json:"x"`
}

type conflict struct {
	Embedded
	Promoted string `json:"promoted"`
}

// twins embeds two structs with the name "Shadow" at the same depth:
// encoding/json decodes neither.
type twins struct {
	Embedded
	twin
}

type twin struct {
	Shadow string
}

// foldTwins has two names that fold together: encoding/json decodes a key
// that equals neither into the first.
type foldTwins struct {
	First  string `json:"id"`
	Second string `json:"ID"`
}

// upperKey decodes itself as a map key, upper-cased.
type upperKey string

func (k *upperKey) UnmarshalText(b []byte) error {
	*k = upperKey(strings.ToUpper(string(b)))
	return nil
}

// same decodes in with the Decoder and with json.Unmarshal and requires
// equal values whenever the Decoder succeeds; it reports whether it did.
func same[T any](t *testing.T, in string) bool {
	t.Helper()
	var got, want T
	ok := New(reflect.TypeFor[T](), nil).Decode([]byte(in), reflect.ValueOf(&got).Elem())
	wantErr := json.Unmarshal([]byte(in), &want)
	if !ok {
		return false
	}
	require.NoError(t, wantErr, "the Decoder succeeded where encoding/json fails: %s", in)
	require.True(t, reflect.DeepEqual(want, got), "input %s\ndecoded %+v\nwant    %+v", in, got, want)
	return true
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	fast := []string{
		`{}`,
		`null`,
		` {"s":"plain","status":"paid","b":true,"i":-42,"i8":127,"u":7,"f":1.5e3,"f32":0.25} `,
		`{"s":"caf\u00e9 \"quoted\" \\ \/ \n","status":null,"b":false,"i":null}`,
		`{"s":"naïve ☃ 😀"}`,
		`{"p":{"n":1,"name":"x"},"pp":5,"inner":{"n":2},"self":{"s":"nested","self":null}}`,
		`{"p":null,"pp":null,"list":null,"strs":null,"meta":null,"objs":null}`,
		`{"list":[],"strs":[],"ints":[],"meta":{},"objs":{}}`,
		`{"list":[{"n":1},null,{"n":3},{},{},{}],"strs":["a",null,"c"],"ints":[1,2,3,4,5,6,7,8,9]}`,
		`{"meta":{"account_id":"acct_1","k":"v"},"objs":{"a":{"n":1},"b":{"n":2}},"statuses":{"paid":1,"open":0.5}}`,
		`{"int_keys":{"1":"one"},"any":{"x":[1,"two",null,true]},"raw":  {"kept" : "as sent"} ,"bytes":"aGk=","arr":[1,2]}`,
		`{"addr":"192.0.2.1","num":12.50,"Untagged":"u","Skipped":"ignored","-":"dash","BadTag":"by name"}`,
		`{"promoted":"from the embedded struct","Shadow":"s","hidden":"from an unexported embedded struct"}`,
		`{"unknown":{"deep":[{"x":"y\"}]"}],"n":null},"also":[1,2,{"a":[]}],"tt":true,"ff":false,"zz":null,"nn":-0.5e-3}`,
		`{"i":9223372036854775807,"u":4294967295,"f":1e308}`,
		`{"i":-9223372036854775808}`,
		`{"S":"case-insensitive match","UNTAGGED":"u","I8":2,"Self":{"ſ":"long s folds to s"}}`,
		`{"s":"invalid utf-8 ` + "\xff" + `, replaced as encoding/json does"}`,
		`{"s":"a lone continuation byte ` + "\x80" + `, the lowest not ASCII"}`,
		`{"f32":1.0000000596046447753906250000000001}`, // rounds up as a float32, to even via a float64
		`{"f":2.5E-3,"f32":1E2}`,
		`{"objs":{"a":{"n":1},"b":{"name":"b has no n"}}}`,
	}
	for _, in := range fast {
		require.True(t, same[kinds](t, in), "fast path expected for %s", in)
		require.True(t, same[*kinds](t, in), "fast path expected for *kinds, %s", in)
	}
	// The Decoder gives up where encoding/json's rules go beyond the plain
	// case or where encoding/json reports an error.
	slow := []string{
		`{"s":"exact","S":"folded onto the same field"}`,
		`{"s":"a","s":"repeated key"}`,
		`{"\u0073":"escaped key"}`,
		`{"s":1}`, `{"b":"true"}`, `{"i":"1"}`, `{"i":1.5}`, `{"i":1e2}`,
		`{"i8":128}`, `{"u":-1}`, `{"u":4294967296}`, `{"f32":1e39}`,
		`{"i":9223372036854775808}`,
		`{"inner":[]}`, `{"list":{}}`, `{"meta":[]}`, `{"meta":{"k":1}}`,
		`{"p":"string"}`, `{"bytes":"not base64!"}`, `{"addr":"not an ip"}`,
		`[]`, `"s"`, `1`,
		`{"meta":{"bad utf-8 key ` + "\xff" + `":"v"}}`,
	}
	for _, in := range slow {
		require.False(t, same[kinds](t, in), "the fast path should give up on %s", in)
	}
	require.True(t, same[map[string]any](t, `{"a":1}`))
	require.True(t, same[[]kinds](t, `[{"s":"a"},{"i":1}]`))
	for _, in := range []string{
		`{"n":"12","f":"1.5e2","pf":"0.25","b":"true","s":"\"quoted\"","u":"255","obj":{"n":1}}`,
		`{"n":null,"f":null,"pf":null,"b":null,"s":null,"u":null}`,
		`{"n":"null","pf":"null"}`,
		`{"s":"\"esc\\\"aped\""}`,
	} {
		require.True(t, same[withStringOption](t, in), "fast path expected for %s", in)
	}
	// A quoted null is null to the original encoding/json, whatever the
	// kind; v2 rejects it for a string, and the Decoder gives up then.
	require.Equal(t, !jsonV2, same[withStringOption](t, `{"s":"null"}`))
	for _, in := range []string{
		`{"n":12}`, `{"n":"12 "}`, `{"n":" 12"}`, `{"n":"1.5"}`, `{"u":"256"}`, `{"b":"yes"}`, `{"s":"unquoted"}`, `{"f":"x"}`,
		`{"s":"\"a\tb\""}`, // a raw tab once unquoted
	} {
		require.False(t, same[withStringOption](t, in), "the fast path should give up on %s", in)
	}
	// A tag name the original encoding/json deems invalid, which it
	// replaces with the field name; v2 takes it as written.
	for _, in := range []string{`{"BadTag":"by name"}`, `{"bad'":"as written"}`, `{"bad":"up to the quote"}`, `{"quoted":"unquoted"}`} {
		require.True(t, same[struct {
			BadTag string `json:"bad'"`
			Quoted string `json:"'quoted'"`
		}](t, in))
	}
	require.True(t, same[embeddedPointer](t, `{"n":1,"x":2}`), "an embedded pointer is handed to encoding/json")
	require.True(t, same[conflict](t, `{"promoted":"outer"}`), "a shadowed name is handed to encoding/json")
	require.True(t, same[twins](t, `{"Shadow":"neither"}`), "a name two embedded structs share is handed to encoding/json")
	require.True(t, same[foldTwins](t, `{"Id":"the first"}`), "a key that folds onto two names goes to the first")
	require.True(t, same[map[upperKey]int](t, `{"a":1}`), "a key type with UnmarshalText is handed to encoding/json")
	require.True(t, same[float64](t, `1e-320`))
	require.False(t, same[float64](t, `1e400`))
	var f float64
	require.False(t, New(reflect.TypeFor[float64](), nil).Decode([]byte(`1 2`), reflect.ValueOf(&f).Elem()), "trailing data")
	require.True(t, same[float64](t, `-0`))
	require.Equal(t, math.Copysign(0, -1), func() float64 {
		var v float64
		New(reflect.TypeFor[float64](), nil).Decode([]byte(`-0`), reflect.ValueOf(&v).Elem())
		return v
	}())
}

// upper decodes itself: a string upper-cased, an object through the plain
// struct. plain() says the latter is what its objects decode to.
type upper struct {
	ID    string `json:"id"`
	Calls int    `json:"-"`
}

func (u *upper) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		u.ID = s + "!"
		return nil
	}
	type plain upper
	var p plain
	err := json.Unmarshal(b, &p)
	*u = upper(p)
	return err
}

type holder struct {
	U  upper   `json:"u"`
	PU *upper  `json:"pu"`
	L  []upper `json:"l"`
}

func TestDecodeUnmarshalers(t *testing.T) {
	t.Parallel()
	for _, plain := range []func(reflect.Type) bool{nil, func(t reflect.Type) bool { return t == reflect.TypeFor[upper]() }} {
		for _, in := range []string{
			`{"u":"id","pu":"id","l":["a",{"id":"b"}]}`,
			`{"u":{"id":"x"},"pu":{"id":"y"},"l":[]}`,
			`{"u":null,"pu":null,"l":null}`,
		} {
			var got, want holder
			require.True(t, New(reflect.TypeFor[holder](), plain).Decode([]byte(in), reflect.ValueOf(&got).Elem()), in)
			require.NoError(t, json.Unmarshal([]byte(in), &want))
			require.Equal(t, want, got, in)
		}
	}
}

// withCnt decodes itself as stripe-go's expandable resources do, through
// a plain copy of its type; that copy has the UnmarshalJSON of the Cnt it
// embeds, which json.Unmarshal calls instead of decoding the fields.
type withCnt struct {
	Cnt
	ID string `json:"id"`
}

func (w *withCnt) UnmarshalJSON(b []byte) error {
	type plain withCnt
	var p plain
	err := json.Unmarshal(b, &p)
	*w = withCnt(p)
	return err
}

// TestDecodePlainEmbeddingMethods: a type plain reports whose struct
// embeds a type with UnmarshalJSON decodes through its own UnmarshalJSON:
// its objects are not what the fields decode to.
func TestDecodePlainEmbeddingMethods(t *testing.T) {
	t.Parallel()
	type holder struct {
		W  withCnt  `json:"w"`
		PW *withCnt `json:"pw"`
	}
	plain := func(t reflect.Type) bool { return t == reflect.TypeFor[withCnt]() }
	in := []byte(`{"w":{"n":1,"id":"w_1"},"pw":{"n":2,"id":"w_2"}}`)
	var got, want holder
	require.True(t, New(reflect.TypeFor[holder](), plain).Decode(in, reflect.ValueOf(&got).Elem()))
	require.NoError(t, json.Unmarshal(in, &want))
	require.Equal(t, want, got)
	require.Equal(t, holder{W: withCnt{Cnt: Cnt{N: 99}}, PW: &withCnt{Cnt: Cnt{N: 99}}}, got, "what encoding/json does, for the record")
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"s":"x","p":{"n":1},"list":[{"n":2}],"meta":{"a":"b"},"any":[1],"raw":{}}`))
	f.Add([]byte(`{"i":-1,"u":2,"f":3.5,"strs":["a"],"objs":{"k":{"name":"n"}},"self":{"self":{}}}`))
	f.Add([]byte(`{"promoted":"p","hidden":"h","addr":"::1","num":1,"bytes":"AA==","arr":[1]}`))
	f.Add([]byte(`{"cnt":{"n":1},"pcnt":{"n":2},"wrapped":{"n":3},"opts":[1,null,"x"]}`))
	f.Add([]byte(`{"quoted":{"n":"1","f":"2.5","pf":"null","b":"false","s":"\"x\"","u":"7"}}`))
	dec := New(reflect.TypeFor[kinds](), nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // the caller validates
		}
		var got, want kinds
		if !dec.Decode(in, reflect.ValueOf(&got).Elem()) {
			return
		}
		require.NoError(t, json.Unmarshal(in, &want), "%q", in)
		require.True(t, reflect.DeepEqual(want, got), "input %q\ndecoded %+v\nwant    %+v", in, got, want)
	})
}

// Cnt decodes itself into N = 99; encoding/json finds the method only on
// a pointer it holds: *Cnt for a value of the named type Cnt, or a pointer
// it dereferences.
type Cnt struct {
	N int `json:"n"`
}

func (c *Cnt) UnmarshalJSON([]byte) error { c.N = 99; return nil }

type PCnt *Cnt // a named pointer type has no methods

type PAddr *netip.Addr

type PInner struct{ N int }

func (p *PInner) UnmarshalJSON([]byte) error { p.N = 7; return nil }

// Opt records the length of what UnmarshalJSON got.
type Opt int

func (o *Opt) UnmarshalJSON(b []byte) error { *o = Opt(len(b)); return nil }

// TestDecodeFindsMethodsAsEncodingJSON: UnmarshalJSON and UnmarshalText
// are called where encoding/json calls them, and nowhere else.
func TestDecodeFindsMethodsAsEncodingJSON(t *testing.T) {
	t.Parallel()
	type wrapCnt struct {
		X  struct{ Cnt }            `json:"x"`
		XP *struct{ Cnt }           `json:"xp"`
		L  []struct{ Cnt }          `json:"l"`
		M  map[string]struct{ Cnt } `json:"m"`
		C  Cnt                      `json:"c"`
		PC PCnt                     `json:"pc"`
	}
	require.True(t, same[wrapCnt](t, `{"x":{"n":1},"xp":{"n":2},"l":[{"n":3}],"m":{"k":{"n":4}},"c":{"n":5},"pc":{"n":6}}`))
	var w wrapCnt
	require.NoError(t, json.Unmarshal([]byte(`{"x":{"n":1},"xp":{"n":2},"c":{"n":5},"pc":{"n":6}}`), &w))
	want := []int{1, 99, 99, 6}
	if jsonV2 {
		want = []int{99, 99, 99, 99} // v2 calls the method on any addressable value that has it
	}
	require.Equal(t, want, []int{w.X.N, w.XP.N, w.C.N, (*w.PC).N}, "what encoding/json does, for the record")

	require.True(t, same[PCnt](t, `{"n":1}`))
	require.True(t, same[struct{ Cnt }](t, `{"n":1}`), "at the top, json.Unmarshal sees *struct{ Cnt }'s promoted method")
	same[struct {
		A struct{ netip.Addr } `json:"a"`
	}](t, `{"a":"192.0.2.1"}`)
	same[struct {
		P PAddr `json:"p"`
	}](t, `{"p":"192.0.2.1"}`)
	if !jsonV2 {
		same[struct {
			X struct{ *PInner } `json:"x"`
		}](t, `{"x":{"N":1}}`)
		same[[]struct{ *PInner }](t, `[{"N":1}]`)
	} else {
		// v2 calls the method promoted through the nil embedded pointer,
		// which panics; the Decoder gives up instead and leaves the
		// panic to json.Unmarshal.
		var v []struct{ *PInner }
		require.Panics(t, func() { _ = json.Unmarshal([]byte(`[{"N":1}]`), &v) })
		require.False(t, New(reflect.TypeOf(v), nil).Decode([]byte(`[{"N":1}]`), reflect.ValueOf(&v).Elem()))
	}
	require.True(t, same[struct {
		O  Opt  `json:"o,string"`
		PO *Opt `json:"po,string"`
	}](t, `{"o":null,"po":null}`))
	require.True(t, same[struct {
		O Opt `json:"o,string"`
	}](t, `{"o":"12"}`))
}

// TestDecodeRejectsWrongElementTypes: a string slice or map with a value
// that is not a string is left to encoding/json, which rejects it.
func TestDecodeRejectsWrongElementTypes(t *testing.T) {
	t.Parallel()
	require.False(t, same[[]string](t, `[1,",1"]`))
	require.False(t, same[map[string]string](t, `{"a":1,",":":1"}`))
	require.False(t, same[kinds](t, `{"strs":[1,",1"],"s":"x"}`))
	require.False(t, same[kinds](t, `{"meta":{"a":true}}`))
}
