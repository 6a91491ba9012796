// Package eventtypes knows the Stripe event types of the stripe-go this
// module is tested with, to tell a misspelt type a handler is registered
// for (invoice.payed) from one Stripe sends.
package eventtypes

import "sort"

// Version is the stripe-go release whose event types known holds:
// TestKnownMatchesStripeGo fails unless it is the one go.mod selects. A
// service's go.mod may select a later one, which knows more types.
const Version = "v82.5.1"

// Known reports whether t is an event type stripe-go Version knows. A type
// Stripe added after it, or one of a preview API version, is not known,
// and may still be sent.
func Known(t string) bool {
	i := sort.SearchStrings(known[:], t)
	return i < len(known) && known[i] == t
}

// Nearest returns the known types fewest edits (insertions, deletions,
// substitutions of a byte) away from t, in sorted order, when they are
// at most two away: the types t is likely a misspelling of. Two types
// can be as near (payment_method.tached: attached and detached); none is
// returned for a type further from every known one.
func Nearest(t string) []string {
	const most = 2
	var near []string
	bound := most + 1
	for _, k := range known {
		switch d := distance(t, k, bound+1); { // exact up to bound
		case d < bound:
			near, bound = append(near[:0], k), d
		case d == bound && bound <= most:
			near = append(near, k)
		}
	}
	return near
}

// distance is the edit distance between a and b, or any value of at
// least bound once it is known to be no less.
func distance(a, b string, bound int) int {
	if d := len(a) - len(b); d >= bound || -d >= bound {
		return bound
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			cur[j] = c
			low = min(low, c)
		}
		if low >= bound {
			return bound
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
