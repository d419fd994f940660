package main

import "strings"

// repeated is a flag that may be given several times (--policy, --policy-map; the policies are
// built by envrunner/runspec).
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
