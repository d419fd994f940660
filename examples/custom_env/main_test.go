package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCustomEnv runs the example and checks what it prints: every episode reaches the end of the
// corridor (a random walk over 4 cells does, well within 100 steps, almost always) and
// every step became a row.
func TestCustomEnv(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	main()
	os.Stdout = stdout
	w.Close()
	var out bytes.Buffer
	io.Copy(&out, r)
	m := regexp.MustCompile(`^episodes: (\d+), mean return ([0-9.]+), sampled rows: (\d+)\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q", out.String())
	}
	if n, _ := strconv.Atoi(m[1]); n < 100 {
		t.Errorf("episodes %s, want at least 100 (4000 steps, a random walk over 4 cells needs about 9)", m[1])
	}
	if m[3] != "4000" {
		t.Errorf("rows %s, want 4000 (10 fragments x 50 steps x 8 sub-environments)", m[3])
	}
	if m[2] != "1.00" && !strings.HasPrefix(m[2], "0.9") {
		t.Errorf("mean return %s, want about 1", m[2])
	}
}

// TestREADME: the README's library section shows this example as it is.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	block := "```go\n" + string(src) + "```\n"
	if !bytes.Contains(readme, []byte(block)) {
		t.Error("README.md does not show examples/custom_env/main.go as it is; copy the file into its ```go block")
	}
}
