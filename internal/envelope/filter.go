package envelope

// Filter appends to dst the JSON object obj keeping only the members whose
// key keep accepts, in their order, byte for byte. keep gets the key
// unescaped. obj must be a JSON object; anything else, or invalid JSON in a
// member, fails with an error wrapping ErrMalformed.
//
// It lets a caller decode a large object into a struct of a few fields
// without the decoder scanning the members the struct has no field for.
func Filter(dst, obj []byte, keep func(key []byte) bool) ([]byte, error) {
	p := parser{b: obj}
	p.ws()
	if p.i >= len(obj) || obj[p.i] != '{' {
		return nil, malformedAt(p.i, "expected an object")
	}
	p.i++
	if err := p.push(false); err != nil {
		return nil, err
	}
	dst = append(dst, '{')
	first := true
	more, err := p.firstMember()
	for ; err == nil && more; more, err = p.nextMember() {
		if obj[p.i] != '"' {
			return nil, malformedAt(p.i, "expected a string key")
		}
		keyStart := p.i
		esc, err := p.scanString()
		if err != nil {
			return nil, err
		}
		token := obj[keyStart:p.i]
		key := token[1 : len(token)-1]
		if esc {
			s, err := unquote(token)
			if err != nil {
				return nil, err
			}
			key = []byte(s)
		}
		p.ws()
		if p.i >= len(obj) || obj[p.i] != ':' {
			return nil, malformedAt(p.i, "expected ':'")
		}
		p.i++
		p.ws()
		valueStart := p.i
		if err := p.skipValue(); err != nil {
			return nil, err
		}
		if keep(key) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, token...)
			dst = append(dst, ':')
			dst = append(dst, obj[valueStart:p.i]...)
		}
	}
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(obj) {
		return nil, malformedAt(p.i, "data after the object")
	}
	return append(dst, '}'), nil
}
