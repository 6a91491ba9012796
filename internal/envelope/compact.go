package envelope

// Compact appends v to dst without the white space between its tokens. v
// must be valid JSON, as Parse's Object is: on any
// other input Compact neither fails nor panics, but what it appends is
// unspecified.
//
// Stripe sends events indented; a decoder that scans the bytes several
// times, as stripe-go's types do, spends about a fifth less on the compact
// form.
func Compact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			start := i
			i++
			for {
				i = plainEnd(v, i)
				if i >= len(v) {
					break
				}
				if v[i] == '"' {
					i++
					break
				}
				if v[i] == '\\' && i+1 < len(v) {
					i += 2 // the escaped byte cannot end the string
					continue
				}
				i++ // a control character: invalid JSON, copied as is
			}
			dst = append(dst, v[start:i]...)
		default:
			start := i
			for i < len(v) && !compactStop[v[i]] {
				i++
			}
			if i == start {
				i++
			}
			dst = append(dst, v[start:i]...)
		}
	}
	return dst
}

// compactStop marks the bytes that end a run of bytes Compact copies as
// they are: white space and a string's opening quote.
var compactStop = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, '"': true}
