package actions

import (
	"sort"
	"strings"
)

// Closest returns up to three names within a small edit distance of s,
// nearest first: the suggestions for a typo.
func Closest(s string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	limit := max(2, (len(s)+1)/2)
	var cs []cand
	for _, n := range names {
		d := distance(s, n)
		if len(s) >= 3 && (strings.HasPrefix(n, s) || strings.HasPrefix(s, n)) {
			d = min(d, 1)
		}
		if d <= limit && n != s {
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
	if len(a) > 256 || len(b) > 256 {
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
