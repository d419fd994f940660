// Command dataflow writes docs/dataflow.svg, the picture of docs/architecture.md: the way of
// the data from an environment to a file or a stream. The boxes and arrows below are its
// source; the layout is a fixed grid, so the same source gives the same bytes.
//
//	go run ./docs/dataflow > docs/dataflow.svg
//
// TestSVGCurrent fails when the checked-in file differs from what this writes.
package main

import (
	"fmt"
	"html"
	"io"
	"os"
	"strings"
)

// A box is a titled rectangle with lines of detail, in a column of the grid.
type box struct {
	id     string
	col    int     // 0..4, left to right
	row    float64 // top, in rows of rowH
	title  string
	detail []string
	fill   string
}

// An arrow joins two boxes, from the right side of one to the left side of the other (or,
// back, from the left side of `from` to the right side of `to`), with a label.
type arrow struct {
	from, to string
	label    string
	back     bool
}

var boxes = []box{
	{"env", 0, 0, "env, env/classic", []string{"Env, VectorEnv, MultiAgentEnv", "CartPole-v1, Pendulum-v1, ...", "env.Register / env.Make"}, "#e8f1fb"},
	{"remote", 0, 2.2, "env.RemoteVectorEnv", []string{"sub-environments stepped", "on goroutines of their own"}, "#e8f1fb"},
	{"external", 0, 4.0, "externalenv (ExternalEnv)", []string{"the simulator drives:", "sample serve (HTTP, RLlib's", "PolicyClient), C API", "onnxrl_env_*, Python Env"}, "#e8f1fb"},
	{"base", 1, 1.7, "env.BaseEnv", []string{"Poll: ready agents'", "obs, rewards, flags", "SendActions"}, "#fff5e0"},
	{"runner", 2, 0.9, "envrunner.Runner", []string{"agent connectors: rows", "  into the batch tensors", "inference.Session: one", "  ONNX Runtime run per policy", "  cpu | native | native:cuda:N", "  | cuda (ep/: the provider)", "action connectors: sample,", "  logp, unsquash, RNN state"}, "#fff5e0"},
	{"batch", 3, 1.7, "SampleBatch per policy", []string{"MultiAgentBatch: RLlib's", "columns, episodes cut at", "fragments, GAE"}, "#fff5e0"},
	{"files", 4, 0, "envrunner/output", []string{"Parquet (RLlib's offline", "columns, metadata) or", "JSON lines: sample run --out,", "onnxrl_env \"out\" -> files"}, "#e9f7ec"},
	{"arrow", 4, 2.3, "envrunner/arrowbatch", []string{"Arrow records, no copy:", "C API onnxrl_sampler_*,", "Python Sampler.sample()", "(NumPy) and .to_arrow()"}, "#e9f7ec"},
	{"stream", 4, 4.6, "scaleout (NATS JetStream)", []string{"Arrow IPC messages from", "sample worker; sample drain", "-> Parquet files, learners"}, "#e9f7ec"},
}

var arrows = []arrow{
	{"env", "base", "adapters", false},
	{"remote", "base", "", false},
	{"external", "base", "", false},
	{"base", "runner", "observations", false},
	{"runner", "base", "actions", true},
	{"runner", "batch", "transitions", false},
	{"batch", "files", "", false},
	{"batch", "arrow", "", false},
	{"batch", "stream", "", false},
}

const (
	colW, gap   = 236, 86 // box width and the space between columns
	rowH        = 46      // one grid row
	lineH       = 15      // a line of text
	pad         = 10
	margin      = 12
	titleExtra  = 4
	fontFamily  = "DejaVu Sans Mono, Menlo, Consolas, monospace"
	strokeColor = "#445"
)

func (b box) x() int { return margin + b.col*(colW+gap) }
func (b box) y() int { return margin + int(b.row*rowH) }
func (b box) h() int { return 2*pad + titleExtra + lineH*(1+len(b.detail)) }

func write(w io.Writer) error {
	byID := map[string]box{}
	width, height := 0, 0
	for _, b := range boxes {
		byID[b.id] = b
		width = max(width, b.x()+colW+margin)
		height = max(height, b.y()+b.h()+margin)
	}
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="11">`+"\n",
		width, height, width, height, fontFamily)
	p(`<title>The data's way: from an environment to a file or a stream</title>` + "\n")
	p(`<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">`)
	p(`<path d="M 0 0 L 10 5 L 0 10 z" fill="%s"/></marker></defs>`+"\n", strokeColor)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	for _, a := range arrows {
		from, ok1 := byID[a.from]
		to, ok2 := byID[a.to]
		if !ok1 || !ok2 {
			return fmt.Errorf("arrow %s -> %s: no such box", a.from, a.to)
		}
		x1, x2 := from.x()+colW, to.x()
		y1, y2 := from.y()+from.h()/2, to.y()+to.h()/2
		if a.back {
			x1, x2 = from.x(), to.x()+colW
			y1, y2 = y1+18, y2+18
		} else if a.to == "runner" || a.from == "runner" {
			y1, y2 = y1-8, y2-8
		}
		mid := (x1 + x2) / 2
		p(`<path d="M %d %d C %d %d, %d %d, %d %d" fill="none" stroke="%s" stroke-width="1.4" marker-end="url(#head)"/>`+"\n",
			x1, y1, mid, y1, mid, y2, x2, y2, strokeColor)
		if a.label != "" {
			ly := min(y1, y2) - 5
			if a.back {
				ly = max(y1, y2) + 14
			}
			p(`<text x="%d" y="%d" text-anchor="middle" fill="#333" font-style="italic">%s</text>`+"\n", mid, ly, html.EscapeString(a.label))
		}
	}
	for _, b := range boxes {
		p(`<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="%s"/>`+"\n", b.x(), b.y(), colW, b.h(), b.fill, strokeColor)
		ty := b.y() + pad + lineH - 3
		p(`<text x="%d" y="%d" font-weight="bold" font-size="12">%s</text>`+"\n", b.x()+pad, ty, html.EscapeString(b.title))
		for i, line := range b.detail {
			p(`<text x="%d" y="%d" xml:space="preserve">%s</text>`+"\n", b.x()+pad, ty+titleExtra+lineH*(i+1), html.EscapeString(line))
		}
	}
	p("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

func main() {
	if err := write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dataflow:", err)
		os.Exit(1)
	}
}
