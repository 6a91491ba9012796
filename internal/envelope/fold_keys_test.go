package envelope

import "testing"

// TestFoldKeysFirstBytes: checkFolded looks no further at a key whose
// first byte cannot start a rune that folds to a known key's first
// letter; every such rune's first byte is marked, U+017F for 's' and
// U+212A for 'k' too, and "\u017fend" and "\u212aind" are still refused.
func TestFoldKeysFirstBytes(t *testing.T) {
	t.Parallel()
	f := newFoldKeys("send", "kind")
	for _, key := range []string{"send", "SEND", "\u017fend", "Kind", "kIND", "\u212aind"} {
		p := &parser{}
		p.checkFolded("", []byte(key), f)
		isTrue(t, p.semErr != nil, key+" was not refused")
	}
	for _, key := range []string{"", "end", "ßend", "xind"} {
		p := &parser{}
		p.checkFolded("", []byte(key), f)
		isTrue(t, p.semErr == nil, key+" was refused")
	}
}
