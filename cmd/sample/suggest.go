package main

import "strings"

// closest returns the candidate nearest to s by edit distance (ignoring case), if it is
// near enough to be a likely typo: at most a third of the longer name's length, and 3.
func closest(s string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > 3 || 3*bestD > max(len(s), len(best)) {
		return "", false
	}
	return best, true
}

// didYouMean is " (did you mean X?)" for the closest candidate, or "".
func didYouMean(s string, candidates []string) string {
	if c, ok := closest(s, candidates); ok {
		return " (did you mean " + c + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
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
