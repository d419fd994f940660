package bench

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotThroughput draws median steps/s against sub-environments (both axes logarithmic), one
// line per configuration series, with min-max error bars, into a PNG file.
func PlotThroughput(path string, sums []Summary) (err error) {
	defer recoverPlot(&err)
	p := plot.New()
	p.Title.Text = "sample bench: env steps/s"
	p.X.Label.Text = "sub-environments"
	p.Y.Label.Text = "env steps/s (median, min-max)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Centimeter, -vg.Centimeter/2
	series := map[string][]Summary{}
	var names []string
	for _, s := range sums {
		if s.Skipped != "" || s.StepsPerSec <= 0 {
			continue
		}
		k := s.Series()
		if _, ok := series[k]; !ok {
			names = append(names, k)
		}
		series[k] = append(series[k], s)
	}
	if len(names) == 0 {
		return fmt.Errorf("bench: nothing to plot")
	}
	// Explicit ranges: a log axis must stay above 0, and a single sub-environment count (or a
	// single rate) would otherwise give an empty range that the plot widens below 0.
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, ss := range series {
		for _, s := range ss {
			xmin, xmax = math.Min(xmin, float64(s.NumEnvs)), math.Max(xmax, float64(s.NumEnvs))
			ymin, ymax = math.Min(ymin, math.Min(s.Min, s.StepsPerSec)), math.Max(ymax, math.Max(s.Max, s.StepsPerSec))
		}
	}
	if ymin <= 0 {
		ymin = ymax / 1000
	}
	if ymin <= 0 {
		return fmt.Errorf("bench: nothing to plot (no positive rate)")
	}
	for i, k := range names {
		ss := series[k]
		sort.Slice(ss, func(a, b int) bool { return ss[a].NumEnvs < ss[b].NumEnvs })
		pts := make(plotter.XYs, len(ss))
		errs := make(plotter.YErrors, len(ss))
		for j, s := range ss {
			pts[j] = plotter.XY{X: float64(s.NumEnvs), Y: s.StepsPerSec}
			lo := math.Max(s.Min, ymin) // a log axis has no 0: a bar down to 0 stops at the axis
			errs[j] = struct{ Low, High float64 }{Low: math.Max(0, s.StepsPerSec-lo), High: s.Max - s.StepsPerSec}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		c := plotutil.Color(i)
		line.Color, points.Color = c, c
		points.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs})
		if err != nil {
			return err
		}
		bars.Color = c
		p.Add(line, points, bars)
		p.Legend.Add(k, line, points)
	}
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = xmin/1.5, xmax*1.5
	// Headroom above the lines for the legend: a quarter of a decade per row.
	p.Y.Min, p.Y.Max = ymin/2, ymax*math.Pow(10, 0.25*float64(len(names)+1))
	return p.Save(18*vg.Centimeter, 12*vg.Centimeter, path)
}

// phaseColors are the stacked bars' colors, in the order of PhaseNames.
var phaseColors = []color.Color{
	color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}, // env wait
	color.RGBA{R: 0x55, G: 0xa8, B: 0x68, A: 0xff}, // obs processing
	color.RGBA{R: 0xc4, G: 0x4e, B: 0x52, A: 0xff}, // inference
	color.RGBA{R: 0x81, G: 0x72, B: 0xb2, A: 0xff}, // action processing
	color.RGBA{R: 0xcc, G: 0xb9, B: 0x74, A: 0xff}, // output
	color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}, // other
}

// PlotBreakdown draws, per configuration, a stacked bar of a runner step's time by phase as
// shares of the step (percent), into a PNG file.
func PlotBreakdown(path string, sums []Summary) (err error) {
	defer recoverPlot(&err)
	var ran []Summary
	for _, s := range sums {
		if s.Skipped == "" && s.Phases.Total() > 0 {
			ran = append(ran, s)
		}
	}
	if len(ran) == 0 {
		return fmt.Errorf("bench: nothing to plot")
	}
	p := plot.New()
	p.Title.Text = "sample bench: where a runner step goes"
	p.Y.Label.Text = "share of a step (%)"
	// Room above the bars for the legend; ticks only up to 100%.
	p.Y.Min, p.Y.Max = 0, 100+float64(len(PhaseNames))*16
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"},
		{Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
	labels := make([]string, len(ran))
	for i, s := range ran {
		labels[i] = fmt.Sprintf("%s %s %s w%d n%d", s.Env, s.Model, s.Device, s.Workers, s.NumEnvs)
	}
	width := vg.Points(math.Max(6, math.Min(24, 400/float64(len(ran)))))
	var below *plotter.BarChart
	for ph := range PhaseNames {
		vals := make(plotter.Values, len(ran))
		for i, s := range ran {
			vals[i] = 100 * s.Phases.Values()[ph] / s.Phases.Total()
		}
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bc.LineStyle.Width = 0
		bc.Color = phaseColors[ph]
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		p.Legend.Add(PhaseNames[ph], bc)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Centimeter, -vg.Centimeter/2
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	w := vg.Length(math.Max(18, 1.2*float64(len(ran))+8)) * vg.Centimeter
	return p.Save(w, 14*vg.Centimeter, path)
}

// recoverPlot turns a panic inside the plotting library (it panics on some degenerate
// ranges) into an error, so a report is never lost to a plot.
func recoverPlot(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("bench: plotting failed: %v", r)
	}
}
