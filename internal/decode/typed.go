package decode

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// For returns the two funcs that decode a data.object into a T, both with
// the result of json.Unmarshal in this build. The input must be valid
// JSON: the envelope parser has validated the whole body.
//
// plain decodes with encoding/json alone (see jsonDecoderFor). fast tries
// the compiled Decoder of T first and, when it gives up, decodes afresh
// with plain; for a type that decodes itself it is plain, unless the type
// is one of stripe-go's expandable resources and the bypass is on (see the
// package documentation). Call For once per type, at registration: it
// compiles on the first call for T and reads the build information.
func For[T any]() (fast, plain func(raw []byte, dst *T) error) {
	return forBypass[T](stripeBypass())
}

// forBypass is For with the bypass of stripe-go's UnmarshalJSON on or off
// whatever the build information says, so that tests run both.
func forBypass[T any](bypass bool) (fast, plain func(raw []byte, dst *T) error) {
	plain = jsonDecoderFor[T]()
	expandable := expandableFor(bypass)
	rt := reflect.TypeFor[T]()
	base := rt
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if reflect.PointerTo(base).Implements(unmarshalerType) && !expandable(base) {
		return plain, plain
	}
	d := compiled(rt, bypass)
	var counter *atomic.Int64 // for tests only: see CountFast
	if c, ok := fastCounts.Load(rt); ok {
		counter = c.(*atomic.Int64)
	}
	return func(raw []byte, dst *T) error {
		if d.Decode(raw, reflect.ValueOf(dst).Elem()) {
			if counter != nil {
				counter.Add(1)
			}
			return nil
		}
		var zero T
		*dst = zero
		return plain(raw, dst)
	}, plain
}

// compiledKey is a Decoder's type and the bypass it was compiled with.
type compiledKey struct {
	t      reflect.Type
	bypass bool
}

// compiledDecoders caches the Decoders across registrations: compiling
// *stripe.Invoice walks a few thousand stripe-go types (about 1.6 ms).
var compiledDecoders sync.Map // compiledKey → *Decoder

func compiled(rt reflect.Type, bypass bool) *Decoder {
	k := compiledKey{rt, bypass}
	if d, ok := compiledDecoders.Load(k); ok {
		return d.(*Decoder)
	}
	d, _ := compiledDecoders.LoadOrStore(k, New(rt, expandableFor(bypass)))
	return d.(*Decoder)
}

// jsonDecoderFor returns the func that decodes data.object into a T with
// encoding/json. When T (or *T) implements json.Unmarshaler, as stripe-go's
// types do, the envelope parser's validation allows two savings over
// json.Unmarshal, with the same result:
//   - its UnmarshalJSON is called directly: json.Unmarshal would validate
//     the bytes once more first;
//   - it gets the object without the indentation Stripe sends: stripe-go's
//     decoders scan their input several times over, and spend a fifth less
//     on the compact form.
func jsonDecoderFor[T any]() func(raw []byte, dst *T) error {
	rt := reflect.TypeFor[T]()
	if rt == reflect.TypeFor[json.RawMessage]() || rt == reflect.TypeFor[*json.RawMessage]() {
		return func(raw []byte, dst *T) error { return json.Unmarshal(raw, dst) } // keeps the bytes as sent
	}
	switch {
	case rt.Kind() == reflect.Pointer && rt.Implements(unmarshalerType):
		elem := rt.Elem()
		return func(raw []byte, dst *T) error {
			if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) { // json.Unmarshal sets the pointer to nil, calling nothing
				var zero T
				*dst = zero
				return nil
			}
			v := reflect.New(elem)
			if err := decodeCompact(rt, raw, v.Interface().(json.Unmarshaler).UnmarshalJSON); err != nil {
				return err
			}
			*dst = v.Interface().(T)
			return nil
		}
	case reflect.PointerTo(rt).Implements(unmarshalerType):
		return func(raw []byte, dst *T) error {
			return decodeCompact(rt, raw, any(dst).(json.Unmarshaler).UnmarshalJSON)
		}
	}
	return func(raw []byte, dst *T) error { return json.Unmarshal(raw, dst) }
}

// decodeCompact calls decode with raw compacted. The json.Unmarshaler
// contract lets an implementation keep its input only by copying it;
// stripe-go's do not keep it, so for them the buffer is recycled, while any
// other type gets a buffer of its own, in case it keeps the slice anyway.
func decodeCompact(rt reflect.Type, raw []byte, decode func([]byte) error) error {
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if !strings.HasPrefix(rt.PkgPath(), "github.com/stripe/stripe-go/") {
		return decode(envelope.Compact(make([]byte, 0, len(raw)), raw))
	}
	buf := getBuf()
	defer putBuf(buf)
	*buf = envelope.Compact((*buf)[:0], raw)
	return decode(*buf)
}

// decodeBufs recycles the buffers objects are compacted into.
var decodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8192); return &b }}

func getBuf() *[]byte { return decodeBufs.Get().(*[]byte) }

// putBuf recycles buf unless a large event grew it: a pool of 1 MiB
// buffers would hold memory the common 5 KB event never needs.
func putBuf(buf *[]byte) {
	if cap(*buf) <= 64<<10 {
		decodeBufs.Put(buf)
	}
}

// fastCounts holds the counters CountFast asked for.
var fastCounts sync.Map // reflect.Type → *atomic.Int64

// CountFast returns the func that reports how many values of type T the
// fast funcs from [For] decoded on the compiled path; decodes handed to
// encoding/json are not counted. It is for tests, which need to tell the
// two paths apart (they give the same value by design), and counts only
// for funcs that For returns after the first CountFast[T] call: the funcs
// of a type no test counts do not look for a counter as they decode.
func CountFast[T any]() (count func() int64) {
	c, _ := fastCounts.LoadOrStore(reflect.TypeFor[T](), new(atomic.Int64))
	return c.(*atomic.Int64).Load
}
