// Package suggest finds the names a typo most likely meant, for "did you
// mean" hints in usage errors.
package suggest

import (
	"sort"
	"strings"
)

// maxLen bounds the edit-distance work on hostile input.
const maxLen = 256

// Closest returns up to three names within a small edit distance of s (or
// that s is a prefix of, or contains), nearest first. s itself is never
// suggested.
func Closest(s string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	limit := max(2, (len(s)+1)/2)
	var cs []cand
	for _, n := range names {
		if n == s {
			continue
		}
		d := distance(s, n)
		if len(s) >= 3 && (strings.HasPrefix(n, s) || strings.HasPrefix(s, n) || strings.Contains(n, s)) {
			d = min(d, 1)
		}
		if d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	out := make([]string, 0, 3)
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// distance is the Levenshtein distance over bytes; names are ASCII.
func distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
