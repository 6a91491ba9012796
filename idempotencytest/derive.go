package idempotencytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Derive returns a copy of payload, a Stripe event as Stripe sends it (a
// fixture, or one the Stripe CLI printed), with fields set, each named by
// its dotted path from the event's top: "id", "type", "created",
// "account", "data.object.metadata.order_id",
// "data.object.lines.data.0.period.end". It makes the events a test needs
// from one real event, to [Deliver], without decoding it into a map and
// encoding it again.
//
// A path's field that exists is replaced. A key that is not there is added
// only as the path's last segment, in an object that exists, so that
// "data.object.metadata.order_id" is added to an empty metadata, while a
// typo in an inner segment, or a path through a string, a number or null,
// panics naming the path and what is there. In an array a segment is an
// index (0, 1, ...), and one past its end panics: Derive adds no element.
// A segment names a key as it decodes: "object" names one written
// "\u006fbject" too. A key with a dot in it, escaped or not, cannot be
// named: set the object that holds it instead. Two paths of which one is inside the other panic, as they
// would set the same field twice.
//
// A value is anything encoding/json encodes, as json.Marshal encodes it
// (without escaping <, > and &): a string, a number, a bool, a map, a
// struct, a json.RawMessage (compacted); nil, and a nil map, slice or
// pointer, set JSON null. Only the bytes of the values set change (an
// added key is written after the object's last one): every other field
// keeps its place, its bytes and its numbers, large integers included.
// The caller's payload is not modified.
//
// It panics on misuse, as [NewSignedRequestJSON] does, rather than take a
// testing.TB, so that it serves in an Example and in a table of cases too:
// besides a path that is not there, on a payload that is not a JSON object
// (or that has a key of a path twice), a path that is empty or has an
// empty segment, and a value that encoding/json cannot encode. That is a
// mistake of the test, not something a handler answers.
func Derive(payload []byte, fields map[string]any) []byte {
	const prefix = "idempotencytest: Derive: "
	if !json.Valid(payload) {
		var v any
		panic(prefix + "the payload is not JSON: " + json.Unmarshal(payload, &v).Error())
	}
	start := len(payload) - len(bytes.TrimLeft(payload, jsonSpace))
	end := len(bytes.TrimRight(payload, jsonSpace))
	if payload[start] != '{' {
		panic(prefix + "the payload is not a JSON object, as an event is")
	}
	paths := slices.Sorted(maps.Keys(fields))
	for i, path := range paths {
		if path == "" || slices.Contains(strings.Split(path, "."), "") {
			panic(fmt.Sprintf(prefix+"the path %q has an empty segment", path))
		}
		for _, other := range paths[i+1:] {
			if strings.HasPrefix(other, path+".") {
				panic(fmt.Sprintf(prefix+"the paths %q and %q overlap: set one of them", path, other))
			}
		}
	}
	event := payload[start:end]
	for _, path := range paths {
		value, err := encodeValue(fields[path])
		if err != nil {
			panic(fmt.Sprintf(prefix+"%q: encoding the value: %v", path, err))
		}
		event, err = setPath(event, "", strings.Split(path, "."), value)
		if err != nil {
			panic(fmt.Sprintf(prefix+"%q: %v", path, err))
		}
	}
	return slices.Concat(payload[:start], event, payload[end:])
}

// jsonSpace is JSON's white space.
const jsonSpace = " \t\r\n"

// element is an object's member (with its key) or an array's element, by
// where its value's bytes start and end in the object's or array's.
type element struct {
	key        string
	start, end int
}

// elements returns the elements of raw, a valid JSON object or array: the
// members of an object or the elements of an array.
func elements(raw []byte) ([]element, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // { or [
		return nil, err
	}
	var es []element
	for dec.More() {
		var e element
		if raw[0] == '{' {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			e.key, _ = tok.(string)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		e.end = int(dec.InputOffset())
		e.start = e.end - len(v)
		es = append(es, e)
	}
	return es, nil
}

// setPath returns raw, a JSON value at path at ("" for the event itself),
// with the value at segs below it set to value.
func setPath(raw []byte, at string, segs []string, value []byte) ([]byte, error) {
	seg, here := segs[0], joinPath(at, segs[0])
	if raw[0] != '{' && raw[0] != '[' {
		return nil, fmt.Errorf("%s is %s, which has no field %q", nameOf(at), kindOf(raw), seg)
	}
	es, err := elements(raw)
	if err != nil {
		return nil, err
	}
	var i int
	switch raw[0] {
	case '{':
		i = slices.IndexFunc(es, func(e element) bool { return e.key == seg })
		if i < 0 {
			if len(segs) > 1 {
				return nil, fmt.Errorf("%s has no key %q (%s); a key is added only as a path's last segment",
					nameOf(at), seg, keysOf(es))
			}
			pos := 1 // after {
			sep := ""
			if len(es) > 0 {
				pos, sep = es[len(es)-1].end, ","
			}
			key, _ := encodeValue(seg)
			return slices.Concat(raw[:pos], []byte(sep), key, []byte(":"), value, raw[pos:]), nil
		}
		if slices.ContainsFunc(es[i+1:], func(e element) bool { return e.key == seg }) {
			return nil, fmt.Errorf("%s has the key %q twice", nameOf(at), seg)
		}
	case '[':
		n, err := strconv.Atoi(seg)
		if err != nil || n < 0 || strconv.Itoa(n) != seg {
			return nil, fmt.Errorf("%s is an array of %d, and %q is no index of it", nameOf(at), len(es), seg)
		}
		if n >= len(es) {
			return nil, fmt.Errorf("%s is an array of %d, and has no index %d; Derive adds no element", nameOf(at), len(es), n)
		}
		i = n
	}
	e := es[i]
	set := value
	if len(segs) > 1 {
		if set, err = setPath(raw[e.start:e.end], here, segs[1:], value); err != nil {
			return nil, err
		}
	}
	return slices.Concat(raw[:e.start], set, raw[e.end:]), nil
}

// encodeValue returns v as JSON, as json.Marshal does but without escaping
// <, > and &, as Stripe sends them.
func encodeValue(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func joinPath(at, seg string) string {
	if at == "" {
		return seg
	}
	return at + "." + seg
}

// nameOf names the value at path at in an error.
func nameOf(at string) string {
	if at == "" {
		return "the event"
	}
	return at
}

// kindOf names the JSON type of raw, a JSON value, in an error, without
// its value: an event's fields may be a customer's data.
func kindOf(raw []byte) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// maxKeysNamed bounds the keys an error names: an invoice has about 80.
const maxKeysNamed = 20

// keysOf names the keys of an object's members, in their order, in an error.
func keysOf(es []element) string {
	if len(es) == 0 {
		return "it is empty"
	}
	var keys []string
	for _, e := range es[:min(len(es), maxKeysNamed)] {
		keys = append(keys, strconv.Quote(e.key))
	}
	text := "its keys: " + strings.Join(keys, ", ")
	if len(es) > maxKeysNamed {
		text += fmt.Sprintf(" and %d more", len(es)-maxKeysNamed)
	}
	return text
}
