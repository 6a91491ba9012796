package idempotency

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// Key derives a deterministic Stripe idempotency key from the
// parts of an intent, for params.SetIdempotencyKey on the sending side:
//
//	params.SetIdempotencyKey(idempotency.Key("refund", orderID, "v1"))
//
// The same parts give the same key in every process and on every machine,
// so a retried request (after a crash, a timeout, a redelivered webhook) is
// recognised by Stripe instead of repeated. Name the intent in the first
// part: two intents about one object need different keys.
//
// The key is "ik_" followed by the unpadded base64url SHA-256 of the parts,
// each prefixed by its length, so ("ab", "c") and ("a", "bc") differ: 46
// characters, well within Stripe's 255. It panics when called without
// parts, a programming error that would give every request one key. An
// empty part is a part like any other, not refused: Key("refund", orderID)
// with orderID empty (the metadata missing) is one key for every such
// order: for a day, Stripe refuses each request after the first whose
// parameters differ, and answers one with the same parameters with the
// first one's saved answer, doing nothing. Check the ids first, as
// [Tx.Guard] refuses an empty key.
func Key(parts ...string) string {
	if len(parts) == 0 {
		panic("idempotency: Key needs at least one part")
	}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	return "ik_" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
