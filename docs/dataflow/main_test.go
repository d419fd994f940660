package main

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ../dataflow.svg")

// TestSVGCurrent: docs/dataflow.svg is what this program writes (go test ./docs/dataflow
// -update, or go run ./docs/dataflow > docs/dataflow.svg, after changing the boxes).
func TestSVGCurrent(t *testing.T) {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("../dataflow.svg", buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("../dataflow.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatal("docs/dataflow.svg is not what docs/dataflow writes: run go run ./docs/dataflow > docs/dataflow.svg")
	}
}

// TestArrowsJoinBoxes: an arrow naming a box that does not exist is an error.
func TestArrowsJoinBoxes(t *testing.T) {
	saved := arrows
	defer func() { arrows = saved }()
	arrows = append(arrows, arrow{from: "env", to: "nowhere"})
	if err := write(&bytes.Buffer{}); err == nil {
		t.Fatal("no error for an arrow to a missing box")
	}
}
