// Package eventtypes knows the Stripe event types of the stripe-go this
// module builds with, to tell a misspelt type a handler is registered
// for (invoice.payed) from one Stripe sends.
package eventtypes

import "sort"

// Known reports whether t is an event type stripe-go knows. A type Stripe
// added after it is not known, and may still be sent.
func Known(t string) bool {
	i := sort.SearchStrings(known[:], t)
	return i < len(known) && known[i] == t
}

// Nearest returns the known type fewest edits (insertions, deletions,
// substitutions of a byte) away from t, when it is at most two away and
// no other is as near: the type t is likely a misspelling of. The first
// in sorted order wins a tie.
func Nearest(t string) (string, bool) {
	const most = 2
	best, bestD := "", most+1
	for _, k := range known {
		if d := distance(t, k, bestD); d < bestD {
			best, bestD = k, d
		}
	}
	return best, bestD <= most
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
