// Package decode is a fast path for encoding/json's Unmarshal into a
// struct type known in advance, such as a stripe-go resource.
//
// A [Decoder] is compiled once per type. Its Decode either produces exactly
// what json.Unmarshal would, or reports false and leaves the caller to run
// json.Unmarshal on a fresh value. It reports false whenever the input
// strays from the plain case it is built for: a key repeated within an
// object (case-insensitively when it matches a field that way), a value of
// the wrong JSON type, a number that overflows its field, an escaped key.
// Values it does not decode itself (interfaces, []byte, arrays,
// json.Number, text unmarshalers, structs that embed a pointer to a struct)
// are handed to json.Unmarshal one by one. UnmarshalJSON is called with the
// value's bytes where encoding/json calls it, which is on pointers only
// (see compiler.compile).
//
// One exception, chosen by the caller: a type for which plain reports true
// decodes a JSON object field by field instead of calling its
// UnmarshalJSON. That is only correct for an UnmarshalJSON that decodes an
// object exactly as the struct would decode without it, as stripe-go's
// expandable resources do.
//
// [For] is what the registry calls: it returns, per handler type, the func
// that tries a cached Decoder first and the one that uses encoding/json
// alone (Config.DisableFastDecoder). It passes stripe-go's expandable
// resources as plain (the bypass) only when the running binary links a
// stripe-go whose source that list was verified against: the stripe-go
// module in the build information must be at a version in
// verifiedStripeVersions, replaced by nothing but itself at such a version.
// Any other build (a later v82.x a user's go.mod selects, a fork, a local
// directory, no build information) decodes those resources through their
// own UnmarshalJSON, while the Decoder still handles every other type. A
// test binary carries no list of dependencies (golang/go#76926); there the
// version is read from the path of stripe-go's source file, which the go
// command names <module>@<version> for a downloaded module. Bumping
// stripe-go in go.mod fails TestStripeExpandableMatchesSource until the
// new source is checked and its version listed.
//
// The promise is json.Unmarshal's result in the build at hand: with
// GOEXPERIMENT=jsonv2, encoding/json is v2 in v1 mode, and the Decoder
// follows its rules where they differ (it calls methods on any value that
// has them, and a ",string" field's methods with the value as sent) or
// gives up (a tag name v1 deems invalid, an option v1 ignores, a quoted
// null into a string).
//
// The input must be valid JSON (the caller has checked it); what Decode
// does with invalid JSON is unspecified beyond not panicking.
package decode

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Decoder decodes JSON into values of one type.
type Decoder struct {
	dec decodeFunc
}

// decodeFunc decodes the value at the scanner's cursor into v, which is
// addressable and holds its type's zero value. It reports false to give up.
type decodeFunc func(s *scanner, v reflect.Value) bool

// Decode decodes data into v, which must be an addressable value of the
// Decoder's type holding its zero value. When it reports false, v may be
// partly written: decode into a fresh value with json.Unmarshal instead.
func (d *Decoder) Decode(data []byte, v reflect.Value) (ok bool) {
	defer func() {
		if recover() != nil { // a bug here, or an UnmarshalJSON that panics: encoding/json decides
			ok = false
		}
	}()
	s := scanner{b: data}
	s.ws()
	if !d.dec(&s, v) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// New compiles the Decoder of t. plain reports the json.Unmarshaler types
// whose objects decode field by field (see the package documentation); nil
// means none. Compile once, at start-up, and keep the Decoder: it is safe
// for concurrent use.
func New(t reflect.Type, plain func(reflect.Type) bool) *Decoder {
	if plain == nil {
		plain = func(reflect.Type) bool { return false }
	}
	c := compiler{plain: plain, funcs: map[funcKey]*decodeFunc{}}
	// json.Unmarshal(data, &x) looks for methods on *T whether T is named
	// or not.
	if m := c.methods(reflect.PointerTo(t)); m != nil {
		return &Decoder{dec: func(s *scanner, v reflect.Value) bool { return m(s, v.Addr()) }}
	}
	return &Decoder{dec: c.compile(t, false)}
}

type compiler struct {
	plain func(reflect.Type) bool
	funcs map[funcKey]*decodeFunc
}

// funcKey names a compiled func: the type and whether it is reached as a
// value (a field, an element, a map value) or after a pointer.
type funcKey struct {
	t     reflect.Type
	value bool
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// compile returns the decodeFunc of a t reached as a value or, with value
// false, after a pointer; a type that contains itself gets a func that
// calls through the cache.
//
// encoding/json looks for UnmarshalJSON and UnmarshalText on pointers
// only: on *T for a value of a named type T, and on each pointer type it
// dereferences. A value of an unnamed type, or a named type reached through
// a named pointer type (which has no methods), decodes by its kind. With
// GOEXPERIMENT=jsonv2 it calls them on every value whose type or pointer
// type has them, named or not, however it was reached.
func (c *compiler) compile(t reflect.Type, value bool) decodeFunc {
	k := funcKey{t, value}
	if p, ok := c.funcs[k]; ok {
		if *p != nil {
			return *p
		}
		return func(s *scanner, v reflect.Value) bool { return (*p)(s, v) }
	}
	p := new(decodeFunc)
	c.funcs[k] = p
	*p = c.build(t, value)
	return *p
}

func (c *compiler) build(t reflect.Type, value bool) decodeFunc {
	if t.Kind() != reflect.Pointer && (jsonV2 || value && t.Name() != "") {
		if m := c.methods(reflect.PointerTo(t)); m != nil {
			return func(s *scanner, v reflect.Value) bool { return m(s, v.Addr()) }
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return c.pointerFunc(t)
	case reflect.Struct:
		if f := c.structFunc(t); f != nil {
			return f
		}
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 { // base64 in encoding/json
			return c.sliceFunc(t)
		}
	case reflect.Map:
		return c.mapFunc(t)
	case reflect.String:
		if t != reflect.TypeFor[json.Number]() {
			return decodeString
		}
	case reflect.Bool:
		return decodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return decodeUint
	case reflect.Float32, reflect.Float64:
		return decodeFloat
	}
	// Interfaces, []byte, arrays, json.Number, structs beyond structFunc,
	// and what encoding/json rejects. json.Unmarshal(raw, &x) would look for
	// methods on *T where encoding/json, here, does not: give up then.
	if c.methods(reflect.PointerTo(t)) != nil {
		return giveUp
	}
	return delegate
}

// methods returns the decodeFunc for a value of pointer type pt when pt
// has UnmarshalJSON or UnmarshalText, or nil. The func takes the pointer.
func (c *compiler) methods(pt reflect.Type) decodeFunc {
	switch {
	case pt.Implements(unmarshalerType):
		if et := pt.Elem(); et.Kind() == reflect.Struct && c.plain(et) && !embedsMethods(et) {
			if fields := c.structFunc(et); fields != nil {
				return func(s *scanner, p reflect.Value) bool {
					if s.peek() == '{' {
						return fields(s, p.Elem())
					}
					return callUnmarshaler(s, p)
				}
			}
		}
		return callUnmarshaler
	case pt.Implements(textUnmarshalerType):
		return func(s *scanner, p reflect.Value) bool {
			raw, ok := s.value()
			return ok && json.Unmarshal(raw, p.Interface()) == nil
		}
	}
	return nil
}

// embedsMethods reports whether t embeds, at any depth, a type with
// UnmarshalJSON or UnmarshalText: they would be promoted to the local type
// a plain UnmarshalJSON decodes into.
func embedsMethods(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.Anonymous {
			continue
		}
		ft := f.Type
		for _, mt := range []reflect.Type{ft, reflect.PointerTo(ft)} {
			if mt.Implements(unmarshalerType) || mt.Implements(textUnmarshalerType) {
				return true
			}
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && embedsMethods(ft) {
			return true
		}
	}
	return false
}

// delegate hands the value to json.Unmarshal.
func delegate(s *scanner, v reflect.Value) bool {
	raw, ok := s.value()
	return ok && json.Unmarshal(raw, v.Addr().Interface()) == nil
}

func giveUp(*scanner, reflect.Value) bool { return false }

// callUnmarshaler calls UnmarshalJSON on the pointer p with the value's
// bytes.
func callUnmarshaler(s *scanner, p reflect.Value) bool {
	raw, ok := s.value()
	return ok && p.Interface().(json.Unmarshaler).UnmarshalJSON(raw) == nil
}

func (c *compiler) pointerFunc(t reflect.Type) decodeFunc {
	et := t.Elem()
	m := c.methods(t)
	var elem decodeFunc
	if m == nil {
		elem = c.compile(et, false)
	}
	return func(s *scanner, v reflect.Value) bool {
		if s.peek() == 'n' {
			return s.null() // v is nil already
		}
		p := reflect.New(et)
		v.Set(p)
		if m != nil {
			return m(s, p)
		}
		return elem(s, p.Elem())
	}
}

// field is a struct field as encoding/json names it.
type field struct {
	name      string
	nameBytes []byte
	index     []int
	dec       decodeFunc
}

// maxFields bounds the fields of a struct the fast path tracks for repeated
// keys.
const maxFields = 512

// structFunc returns the decodeFunc of a struct's fields, or nil when
// encoding/json's rules for it are beyond this package: an embedded
// pointer to a struct, a name two fields share.
func (c *compiler) structFunc(t reflect.Type) decodeFunc {
	var fields []field
	if !c.collect(t, nil, &fields) || len(fields) > maxFields {
		return nil
	}
	byName := make(map[string]int, len(fields))
	for i, f := range fields {
		if _, dup := byName[f.name]; dup {
			return nil
		}
		byName[f.name] = i
	}
	// Stripe sends keys in name order, as stripe-go declares fields: the
	// field after the last one matched, by name, is tried before the map.
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(fields[a].name, fields[b].name) })
	next := make([]int, len(fields))
	for k, i := range order {
		next[i] = -1
		if k+1 < len(order) {
			next[i] = order[k+1]
		}
	}
	return func(s *scanner, v reflect.Value) bool {
		if container, ok := s.open('{'); !container {
			return ok
		}
		var seen [maxFields / 64]uint64
		guess := -1
		more, ok := s.firstMember('}')
		for ; more; more, ok = s.nextMember('}') {
			key, ok := s.key()
			if !ok {
				return false
			}
			i, found := guess, guess >= 0 && bytes.Equal(key, fields[guess].nameBytes)
			if !found {
				i, found = byName[string(key)]
			}
			if !found {
				if i = foldMatch(fields, key); i < 0 {
					if !s.skip() {
						return false
					}
					continue
				}
			}
			if seen[i/64]&(1<<(i%64)) != 0 {
				return false
			}
			seen[i/64] |= 1 << (i % 64)
			guess = next[i]
			f := &fields[i]
			fv := v.Field(f.index[0])
			for _, j := range f.index[1:] {
				fv = fv.Field(j)
			}
			if !f.dec(s, fv) {
				return false
			}
		}
		return ok
	}
}

// collect appends t's fields as encoding/json names them, walking into
// embedded structs.
func (c *compiler) collect(t reflect.Type, index []int, fields *[]field) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			if jsonV2 && name != "" {
				return false // v2 takes most such names as written, and unquotes 'quoted' ones
			}
			name = ""
		}
		if jsonV2 && !legacyOptions(opts) {
			return false // v2 honours options v1 ignores, such as inline and case:ignore
		}
		idx := append(append([]int(nil), index...), i)
		if sf.Anonymous && name != "" && !sf.IsExported() {
			return false // encoding/json records it as a field it cannot set
		}
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				if ft.Elem().Kind() == reflect.Struct {
					return false
				}
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if !c.collect(ft, idx, fields) {
					return false
				}
				continue
			}
			if !sf.IsExported() {
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		dec := c.compile(sf.Type, true)
		if hasOption(opts, "string") && quotable(sf.Type) && !(jsonV2 && decodesItself(sf.Type)) {
			dec = quoted(dec, sf.Type)
		}
		*fields = append(*fields, field{name: name, nameBytes: []byte(name), index: idx, dec: dec})
	}
	return true
}

// quotable reports whether encoding/json honours the ",string" option on a
// field of type t.
func quotable(t reflect.Type) bool {
	if t.Name() == "" && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// decodesItself reports whether a value of type t, or the value t points
// to, has UnmarshalJSON or UnmarshalText: v2 calls them with the value as
// sent, where the original encoding/json unquotes a ",string" field first.
func decodesItself(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType)
}

// quoted decodes a ",string" field of type t: a string holding the
// value's JSON, or null.
func quoted(dec decodeFunc, t reflect.Type) decodeFunc {
	if t.Name() == "" && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// The original encoding/json takes "null" as null for every kind; v2
	// reads a string field's quoted contents as a JSON string, and fails
	// on null.
	quotedNull := !jsonV2 || t.Kind() != reflect.String
	return func(s *scanner, v reflect.Value) bool {
		switch s.peek() {
		case 'n':
			return dec(s, v) // as encoding/json stores a null, unquoted
		case '"':
		default:
			return false
		}
		b, ok := s.stringBytes()
		if !ok {
			return false
		}
		inner := scanner{b: b}
		if !quotedNull && inner.peek() == 'n' {
			return false
		}
		return dec(&inner, v) && inner.i == len(b)
	}
}

// legacyOptions reports whether opts holds only options that mean the same
// to the original encoding/json and to encoding/json/v2 in v1 mode.
func legacyOptions(opts string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		switch o {
		case "", "omitempty", "omitzero", "string":
		default:
			return false
		}
	}
	return true
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// validTagName is encoding/json's isValidTag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// foldMatch returns the first field whose name equals key under Unicode
// case folding, as encoding/json matches a key no name equals exactly, or
// -1.
func foldMatch(fields []field, key []byte) int {
	for i := range fields {
		if bytes.EqualFold(key, fields[i].nameBytes) {
			return i
		}
	}
	return -1
}

func (c *compiler) sliceFunc(t reflect.Type) decodeFunc {
	elem := c.compile(t.Elem(), true)
	if t == reflect.TypeFor[[]string]() {
		return decodeStrings
	}
	return func(s *scanner, v reflect.Value) bool {
		if container, ok := s.open('['); !container {
			return ok
		}
		v.Set(reflect.MakeSlice(t, 0, 0)) // [] is an empty slice, not nil
		n := 0
		more, ok := s.firstMember(']')
		for ; more; more, ok = s.nextMember(']') {
			if n == v.Cap() {
				grown := reflect.MakeSlice(t, n, max(4, n+n/2))
				reflect.Copy(grown, v)
				v.Set(grown)
			}
			v.SetLen(n + 1)
			if !elem(s, v.Index(n)) {
				return false
			}
			n++
		}
		return ok
	}
}

func decodeStrings(s *scanner, v reflect.Value) bool {
	if container, ok := s.open('['); !container {
		return ok
	}
	out := []string{}
	more, ok := s.firstMember(']')
	for ; more; more, ok = s.nextMember(']') {
		var str string
		switch s.peek() {
		case 'n': // null leaves the element ""
			ok = s.null()
		case '"':
			str, ok = s.string()
		default:
			return false
		}
		if !ok {
			return false
		}
		out = append(out, str)
	}
	if !ok {
		return false
	}
	v.Set(reflect.ValueOf(out))
	return true
}

func (c *compiler) mapFunc(t reflect.Type) decodeFunc {
	kt := t.Key()
	if kt.Kind() != reflect.String || reflect.PointerTo(kt).Implements(textUnmarshalerType) {
		return delegate
	}
	if t == reflect.TypeFor[map[string]string]() {
		return decodeStringMap
	}
	elem := c.compile(t.Elem(), true)
	return func(s *scanner, v reflect.Value) bool {
		if container, ok := s.open('{'); !container {
			return ok
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		ev := reflect.New(t.Elem()).Elem()
		more, ok := s.firstMember('}')
		for ; more; more, ok = s.nextMember('}') {
			key, ok := s.key()
			if !ok {
				return false
			}
			ev.SetZero()
			if !elem(s, ev) {
				return false
			}
			v.SetMapIndex(reflect.ValueOf(string(key)).Convert(kt), ev)
		}
		return ok
	}
}

func decodeStringMap(s *scanner, v reflect.Value) bool {
	if container, ok := s.open('{'); !container {
		return ok
	}
	m := map[string]string{}
	more, ok := s.firstMember('}')
	for ; more; more, ok = s.nextMember('}') {
		key, ok := s.key()
		if !ok {
			return false
		}
		var val string
		switch s.peek() {
		case 'n':
			ok = s.null()
		case '"':
			val, ok = s.string()
		default:
			return false
		}
		if !ok {
			return false
		}
		m[string(key)] = val
	}
	if !ok {
		return false
	}
	v.Set(reflect.ValueOf(m))
	return true
}

func decodeString(s *scanner, v reflect.Value) bool {
	switch s.peek() {
	case 'n':
		return s.null()
	case '"':
		str, ok := s.string()
		if ok {
			v.SetString(str)
		}
		return ok
	}
	return false
}

func decodeBool(s *scanner, v reflect.Value) bool {
	switch s.peek() {
	case 'n':
		return s.null()
	case 't':
		v.SetBool(true)
		return s.literal("true")
	case 'f':
		return s.literal("false")
	}
	return false
}

func decodeInt(s *scanner, v reflect.Value) bool {
	tok, ok := s.numberOrNull()
	if !ok || tok == nil {
		return ok
	}
	n, ok := parseInt(tok)
	if !ok {
		var err error
		if n, err = strconv.ParseInt(string(tok), 10, 64); err != nil {
			return false
		}
	}
	if v.OverflowInt(n) {
		return false
	}
	v.SetInt(n)
	return true
}

func decodeUint(s *scanner, v reflect.Value) bool {
	tok, ok := s.numberOrNull()
	if !ok || tok == nil {
		return ok
	}
	n, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil || v.OverflowUint(n) {
		return false
	}
	v.SetUint(n)
	return true
}

func decodeFloat(s *scanner, v reflect.Value) bool {
	tok, ok := s.numberOrNull()
	if !ok || tok == nil {
		return ok
	}
	f, err := strconv.ParseFloat(string(tok), v.Type().Bits())
	if err != nil || v.OverflowFloat(f) {
		return false
	}
	v.SetFloat(f)
	return true
}

// parseInt parses an integer literal of up to 18 digits, which cannot
// overflow an int64.
func parseInt(tok []byte) (int64, bool) {
	neg := len(tok) > 0 && tok[0] == '-'
	digits := tok
	if neg {
		digits = tok[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// scanner is a cursor over valid JSON.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the byte at the cursor, 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// open consumes the opening bracket c of an object or array and reports
// true, or consumes a null and reports false with ok.
func (s *scanner) open(c byte) (container, ok bool) {
	switch s.peek() {
	case 'n':
		return false, s.null()
	case c:
		s.i++
		return true, true
	}
	return false, false
}

// firstMember is called after an opening bracket: it reports whether a
// member (or element) follows, and false ok on malformed input.
func (s *scanner) firstMember(end byte) (more, ok bool) {
	s.ws()
	if s.peek() == end {
		s.i++
		return false, true
	}
	return s.i < len(s.b), s.i < len(s.b)
}

// nextMember is called after a member: it consumes the separator.
func (s *scanner) nextMember(end byte) (more, ok bool) {
	s.ws()
	switch s.peek() {
	case ',':
		s.i++
		s.ws()
		return true, true
	case end:
		s.i++
		return false, true
	}
	return false, false
}

// key reads an object key and its colon. Escaped keys and invalid UTF-8
// are left to encoding/json.
func (s *scanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	key := s.b[start : start+end]
	if bytes.IndexByte(key, '\\') >= 0 || !ascii(key) && !utf8.Valid(key) { // encoding/json would unquote or replace
		return nil, false
	}
	s.i = start + end + 1
	s.ws()
	if s.peek() != ':' {
		return nil, false
	}
	s.i++
	s.ws()
	return key, true
}

// string reads a string value.
func (s *scanner) string() (string, bool) {
	b, ok := s.stringBytes()
	return string(b), ok
}

// stringBytes reads a string value and returns its contents, a slice of
// the input when it is plain. One with escapes, control bytes or invalid
// UTF-8 is unquoted by encoding/json.
func (s *scanner) stringBytes() ([]byte, bool) {
	start := s.i + 1
	b := s.b
	plain := true
	for i := start; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			if raw := b[start:i]; plain || utf8.Valid(raw) {
				s.i = i + 1
				return raw, true
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c >= utf8.RuneSelf {
			plain = false
		}
	}
	raw, ok := s.value()
	if !ok {
		return nil, false
	}
	var str string
	if json.Unmarshal(raw, &str) != nil {
		return nil, false
	}
	return []byte(str), true
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *scanner) null() bool { return s.literal("null") }

// numberOrNull reads a number, or a null, for which it returns nil.
func (s *scanner) numberOrNull() ([]byte, bool) {
	if s.peek() == 'n' {
		return nil, s.null()
	}
	return s.number()
}

// number reads a number literal as JSON defines it.
func (s *scanner) number() ([]byte, bool) {
	b, start, i := s.b, s.i, s.i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	s.i = i
	return b[start:i], true
}

// value reads any value and returns its bytes.
func (s *scanner) value() ([]byte, bool) {
	start := s.i
	if !s.skip() {
		return nil, false
	}
	return s.b[start:s.i], true
}

// skip moves past the value at the cursor.
func (s *scanner) skip() bool {
	b := s.b
	if s.i >= len(b) {
		return false
	}
	switch b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(b) {
			switch b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.null()
	}
	_, ok := s.number()
	return ok
}

func (s *scanner) skipString() bool {
	b := s.b
	for i := s.i + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			s.i = i + 1
			return true
		}
	}
	return false
}
