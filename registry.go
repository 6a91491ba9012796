package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seed-a84bb619/idempotency/internal/decode"
	"github.com/seed-a84bb619/idempotency/internal/envelope"
)

// EventFunc handles the events of one type. It runs inside the transaction that
// claimed the event: its writes through tx (and through [PgxTx] on
// PostgreSQL) commit with the claim or not at all. Returning an error rolls
// everything back and answers 500, so Stripe sends the event again;
// returning [Skip] answers 200 and never retries it.
//
// ctx carries Config.Timeout and is not cancelled when the sender hangs up;
// a handler must return when ctx is done. When the database fails the
// transaction for a deadlock or a serialization conflict, the store rolls it
// back and runs the handler again (up to 5 attempts): keep side effects
// outside the transaction in AfterCommit.
type EventFunc[T any] func(ctx context.Context, tx Tx, ev Event[T]) error

// Handlers is the registry of event handlers and actions. Build it at
// start-up with [On] and [NewAction], then pass it to [NewHandler], which
// takes a snapshot: registrations made afterwards do not affect that
// handler. It is not safe for concurrent registration.
type Handlers struct {
	byType  map[string]registration
	actions []ActionInfo
}

// registration is one event type's handler, with T erased.
type registration struct {
	objectType string // T, for messages
	// apply decodes data.object, with the fast decoder when fast is set,
	// and runs the func.
	apply func(ctx context.Context, tx Tx, env *envelope.Envelope, raw []byte, fast bool) error
}

// NewHandlers returns an empty registry.
func NewHandlers() *Handlers {
	return &Handlers{byType: make(map[string]registration)}
}

// On registers fn for eventType. data.object is decoded into T only after
// the event is claimed, so a duplicate costs no decode. T is a stripe-go
// type such as *stripe.Invoice, or a struct of the fields fn needs.
//
// On panics on a programming error: an empty event type, a nil fn, or a
// second handler for one event type. [OnSafely] returns the error instead.
func On[T any](hs *Handlers, eventType string, fn EventFunc[T]) {
	if err := OnSafely(hs, eventType, fn); err != nil {
		panic(err)
	}
}

// OnSafely is [On] returning the error instead of panicking; the error wraps
// [ErrDuplicateRegistration] when eventType already has a handler.
func OnSafely[T any](hs *Handlers, eventType string, fn EventFunc[T]) error {
	var zero T
	objectType := fmt.Sprintf("%T", zero)
	fastDecode, plainDecode := decoderFor[T](), jsonDecoderFor[T]()
	switch {
	case hs == nil:
		return errors.New("idempotency: On: nil *Handlers")
	case eventType == "":
		return errors.New("idempotency: On: empty event type")
	case fn == nil:
		return fmt.Errorf("idempotency: On: nil func for %q", eventType)
	}
	if prev, ok := hs.byType[eventType]; ok {
		return fmt.Errorf("%w: event type %q has a handler for %s; a second one (for %s) would make the outcome depend on registration order",
			ErrDuplicateRegistration, eventType, prev.objectType, objectType)
	}
	hs.byType[eventType] = registration{
		objectType: objectType,
		apply: func(ctx context.Context, tx Tx, env *envelope.Envelope, raw []byte, fast bool) error {
			ev := Event[T]{
				ID:         env.ID,
				Type:       env.Type,
				Livemode:   env.Livemode,
				APIVersion: env.APIVersion,
				Account:    env.Account,
				Previous:   env.Previous,
				Raw:        raw,
			}
			if env.Created != 0 {
				ev.Created = time.Unix(env.Created, 0)
			}
			decode := plainDecode
			if fast {
				decode = fastDecode
			}
			if err := decode(env.Object, &ev.Object); err != nil {
				return &DecodeError{EventType: env.Type, Target: objectType, Err: err}
			}
			return fn(ctx, tx, ev)
		},
	}
	return nil
}


// decoderFor returns the func that decodes data.object into a T, with the
// result of json.Unmarshal. The envelope parser has already validated the
// whole body as JSON.
//
// The fast path is internal/decode, compiled once here, which also decodes
// the objects of stripe-go's expandable resources (*stripe.Invoice and its
// like) field by field rather than through their UnmarshalJSON. It gives up
// on anything beyond the plain case (see its documentation); the event is
// then decoded afresh by jsonDecoderFor. A type that decodes itself and is
// not one of stripe-go's expandable resources goes to jsonDecoderFor
// directly.
func decoderFor[T any]() func(raw []byte, dst *T) error {
	slow := jsonDecoderFor[T]()
	rt := reflect.TypeFor[T]()
	base := rt
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if reflect.PointerTo(base).Implements(reflect.TypeFor[json.Unmarshaler]()) && !isStripeExpandable(base) {
		return slow
	}
	fast := fastDecoder(rt)
	return func(raw []byte, dst *T) error {
		if fast.Decode(raw, reflect.ValueOf(dst).Elem()) {
			return nil
		}
		var zero T
		*dst = zero
		return slow(raw, dst)
	}
}

// fastDecoders caches the compiled decoders by type: compiling
// *stripe.Invoice walks a few thousand stripe-go types (about 1.6 ms).
var fastDecoders sync.Map // reflect.Type → *decode.Decoder

func fastDecoder(rt reflect.Type) *decode.Decoder {
	if d, ok := fastDecoders.Load(rt); ok {
		return d.(*decode.Decoder)
	}
	d, _ := fastDecoders.LoadOrStore(rt, decode.New(rt, isStripeExpandable))
	return d.(*decode.Decoder)
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
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	if rt == reflect.TypeFor[json.RawMessage]() || rt == reflect.TypeFor[*json.RawMessage]() {
		return func(raw []byte, dst *T) error { return json.Unmarshal(raw, dst) } // keeps the bytes as sent
	}
	switch {
	case rt.Kind() == reflect.Pointer && rt.Implements(unmarshaler):
		elem := rt.Elem()
		return func(raw []byte, dst *T) error {
			v := reflect.New(elem)
			if err := decodeCompact(rt, raw, v.Interface().(json.Unmarshaler).UnmarshalJSON); err != nil {
				return err
			}
			*dst = v.Interface().(T)
			return nil
		}
	case reflect.PointerTo(rt).Implements(unmarshaler):
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

// EventTypes returns the event types that have a handler, sorted.
func (hs *Handlers) EventTypes() []string {
	types := make([]string, 0, len(hs.byType))
	for t := range hs.byType {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}
