package main

import (
	"flag"
	"strings"
)

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

// editDistance is the number of single-byte insertions, deletions, substitutions and
// swaps of neighbours that turn a into b (the optimal string alignment distance).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// flagError turns an error of flag.FlagSet.Parse into a usage error: an unknown flag is
// named with two dashes, as the docs write flags, with the closest defined flag when one is
// near ("unknown flag --num-env; did you mean --num-envs?").
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if c, ok := closest(name, names); ok {
			msg += "; did you mean --" + c + "?"
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		msg = "flag --" + strings.TrimLeft(name, "-") + " needs a value"
	}
	return &usageError{msg}
}
