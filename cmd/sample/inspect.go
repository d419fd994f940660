package main

import (
	"encoding/json"
	"fmt"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

type inspectJSON struct {
	Model     string            `json:"model"`
	Producer  string            `json:"producer"`
	IRVersion int64             `json:"ir_version"`
	Opsets    map[string]int64  `json:"opsets"`
	Inputs    []valueJSON       `json:"inputs"`
	Outputs   []valueJSON       `json:"outputs"`
	Metadata  map[string]string `json:"metadata"`
	Spec      *models.Spec      `json:"policy_spec"`
	Source    string            `json:"policy_spec_source"`
	Decisions []decisionJSON    `json:"decisions"`
	// Assignment: with --device, which execution provider runs which nodes.
	Device     string           `json:"device,omitempty"`
	Assignment []assignmentJSON `json:"assignment,omitempty"`
}

type valueJSON struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Shape    []int64  `json:"shape"`
	DimNames []string `json:"dim_names"`
	Dynamic  []int    `json:"dynamic_axes"`
}

type decisionJSON struct {
	Role   string `json:"role"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "[--json] [--device DEVICE] MODEL | --list", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	device := fs.String("device", "", "also open a session on this device (cpu, cuda[:N], tensorrt[:N], native, native:cuda[:N]) and show which provider runs which node")
	list := fs.Bool("list", false, "list the bundled models")
	var maxModel modelSizeFlag
	maxModel.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := maxModel.parse(); err != nil {
		return err
	}
	if *list {
		for _, n := range models.BundledNames() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	if len(pos) != 1 {
		return usagef("want exactly one MODEL (a path to an .onnx file or a bundled model name), got %d arguments", len(pos))
	}
	p, err := runspec.OpenPolicy(pos[0], maxModel.limit())
	if err != nil {
		return err
	}
	out := inspectOf(p)
	if *device != "" {
		if _, err := inference.ParseDevice(*device); err != nil {
			return usagef("--device: %v", err)
		}
		out.Device = *device
		if out.Assignment, err = providerAssignment(p, *device); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printInspect(stdout, p, &out)
	return nil
}

// inspectOf is what sample inspect says of p (without --device's assignment).
func inspectOf(p *models.Policy) inspectJSON {
	m := p.Model
	out := inspectJSON{Model: m.Path, Producer: strings.TrimSpace(m.ProducerName + " " + m.ProducerVersion),
		IRVersion: m.IRVersion, Opsets: m.Opsets, Metadata: m.Metadata, Spec: &p.Spec, Source: p.Source}
	for _, v := range m.Inputs {
		out.Inputs = append(out.Inputs, toValueJSON(v))
	}
	for _, v := range m.Outputs {
		out.Outputs = append(out.Outputs, toValueJSON(v))
	}
	for _, d := range p.Decisions {
		out.Decisions = append(out.Decisions, decisionJSON(d))
	}
	return out
}

// printInspect prints out as text: the model's inputs, outputs and metadata, then the
// policy spec's decisions and the provider assignment.
func printInspect(stdout io.Writer, p *models.Policy, out *inspectJSON) {
	m := p.Model
	w := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(w, "model\t%s\n", m.Path)
	fmt.Fprintf(w, "producer\t%s (IR version %d, opsets %s)\n", out.Producer, m.IRVersion, formatOpsets(m.Opsets))
	fmt.Fprintf(w, "\ninputs\ttype\tshape\tdynamic axes\n")
	for _, v := range m.Inputs {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", v.Name, v.ElemType, v.ShapeString(), dynamicAxes(v))
	}
	fmt.Fprintf(w, "\noutputs\ttype\tshape\tdynamic axes\n")
	for _, v := range m.Outputs {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", v.Name, v.ElemType, v.ShapeString(), dynamicAxes(v))
	}
	fmt.Fprintf(w, "\nmetadata\t\n")
	if len(m.MetadataKeys) == 0 {
		fmt.Fprintf(w, "  (none)\t\n")
	}
	for _, k := range m.MetadataKeys {
		v := m.Metadata[k]
		if len(v) > 80 {
			v = v[:77] + "..."
		}
		fmt.Fprintf(w, "  %s\t%s\n", k, oneLine(v))
	}
	w.Flush()
	fmt.Fprintf(stdout, "\npolicy spec (explicit part from: %s)\n", p.Source)
	for _, d := range p.Decisions {
		fmt.Fprintf(stdout, "  %-18s %s\n  %-18s   (%s)\n", d.Role, decisionValue(p, d), "", d.Reason)
	}
	if out.Device != "" {
		printAssignment(stdout, out.Device, out.Assignment)
	}
}

// decisionValue is how the text form shows a decision's value: spaces in their short form,
// "-" for none.
func decisionValue(p *models.Policy, d models.Decision) string {
	switch {
	case d.Role == "observation_space" && p.Spec.ObservationSpace != nil:
		return spaceText(p.Spec.ObservationSpace)
	case d.Role == "action_space" && p.Spec.ActionSpace != nil:
		return spaceText(p.Spec.ActionSpace)
	case d.Value == "":
		return "-"
	}
	return d.Value
}

func toValueJSON(v inference.ValueInfo) valueJSON {
	j := valueJSON{Name: v.Name, Type: v.ElemType.String(), Shape: v.Shape, DimNames: v.DimNames, Dynamic: []int{}}
	for i := range v.Shape {
		if v.Dynamic(i) {
			j.Dynamic = append(j.Dynamic, i)
		}
	}
	return j
}

func dynamicAxes(v inference.ValueInfo) string {
	var parts []string
	for i := range v.Shape {
		if !v.Dynamic(i) {
			continue
		}
		if v.DimNames[i] != "" {
			parts = append(parts, fmt.Sprintf("%d (%s)", i, v.DimNames[i]))
		} else {
			parts = append(parts, fmt.Sprint(i))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func formatOpsets(o map[string]int64) string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = "ai.onnx"
		}
		parts[i] = fmt.Sprintf("%s %d", name, o[k])
	}
	return strings.Join(parts, ", ")
}
