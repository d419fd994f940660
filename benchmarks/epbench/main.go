// Command epbench measures the project's execution provider (device "native") against ONNX
// Runtime's CPU provider on six policy shapes (benchmarks/epbench/models, exported by
// export.py): each model at batch 1, 32, 256 and 4,096, with one and two intra-op threads for
// both providers, the two sessions run alternately in one process. It prints, per cell, the
// median over rounds of native throughput divided by CPU-provider throughput: above 1 means
// native is faster. Run it with `make bench-ep` (which exports the models first) or
//
//	go run ./benchmarks/epbench [-models DIR] [-batches 1,32,256,4096] [-threads 1,2] [-rounds 3] [-time 300ms]
//
// With -solo native (or cpu) it runs that provider alone and prints microseconds per run, for
// a profiler (perf record) or absolute times; each cell then runs for -time once.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onnxrl/sampler/inference"
)

var modelNames = []string{
	"mlp_8_64_64_tanh", "mlp_64_256_256_relu", "lstm_128", "gru_64", "nature_cnn", "mlp_layernorm_gelu",
}

func main() {
	dir := flag.String("models", "benchmarks/epbench/models", "folder of the exported models (export.py)")
	only := flag.String("only", "", "comma-separated model names (default: all six)")
	batches := flag.String("batches", "1,32,256,4096", "batch sizes")
	threads := flag.String("threads", "1,2", "intra-op thread counts, the same for both providers")
	rounds := flag.Int("rounds", 3, "rounds per cell; the median ratio is printed")
	per := flag.Duration("time", 300*time.Millisecond, "time per provider per round")
	device := flag.String("device", "native", "the device measured against the CPU provider")
	solo := flag.String("solo", "", "run only this provider (native, cpu) and print µs per run")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: epbench [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *solo != "" {
		*device = *solo
		*rounds = 0
	}
	if err := run(*dir, *only, *batches, *threads, *rounds, *per, *device); err != nil {
		fmt.Fprintln(os.Stderr, "epbench:", err)
		os.Exit(1)
	}
}

func ints(s, what string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", what, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(dir, only, batchList, threadList string, rounds int, per time.Duration, device string) error {
	batches, err := ints(batchList, "batches")
	if err != nil {
		return err
	}
	threads, err := ints(threadList, "threads")
	if err != nil {
		return err
	}
	if rounds < 0 {
		return fmt.Errorf("-rounds %d: at least 1", rounds)
	}
	names := modelNames
	if only != "" {
		names = strings.Split(only, ",")
	}
	if err := inference.Init(); err != nil {
		return fmt.Errorf("ONNX Runtime: %w (run `make onnxruntime`)", err)
	}
	if rounds == 0 {
		fmt.Printf("# %s alone: µs per run over %v\n", device, per)
	} else {
		fmt.Printf("# %s against the CPU provider: throughput ratio native/cpu, median of %d rounds of %v each (above 1 = native faster)\n",
			device, rounds, per)
	}
	fmt.Printf("# CPU: %s, %d logical CPUs; ONNX Runtime %s; %s\n\n", cpuModel(), runtime.NumCPU(), inference.Version(),
		time.Now().UTC().Format("2006-01-02"))
	head := "| model | nodes on " + device + " |"
	rule := "|---|---|"
	for _, t := range threads {
		for _, b := range batches {
			head += fmt.Sprintf(" b=%d t=%d |", b, t)
			rule += "---|"
		}
	}
	fmt.Println(head)
	fmt.Println(rule)
	for _, name := range names {
		row, err := measureModel(filepath.Join(dir, name+".onnx"), name, batches, threads, rounds, per, device)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Println(row)
	}
	return nil
}

func measureModel(path, name string, batches, threads []int, rounds int, per time.Duration, device string) (string, error) {
	m, err := inference.LoadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w (export the models: /usr/bin/python3 benchmarks/epbench/export.py)", err)
	}
	capacity := slices.Max(batches)
	row := "| " + name + " |"
	first := true
	for _, t := range threads {
		if rounds == 0 {
			us, err := solo(m, device, capacity, batches, t, per)
			if err != nil {
				return "", err
			}
			if first {
				row += " - |"
				first = false
			}
			row += us
			continue
		}
		cpu, err := inference.NewSession(m, inference.Options{Capacity: capacity, IntraOpThreads: t, InterOpThreads: 1})
		if err != nil {
			return "", err
		}
		nat, err := inference.NewSession(m, inference.Options{Device: device, Capacity: capacity, IntraOpThreads: t,
			InterOpThreads: 1, RecordAssignment: first})
		if err != nil {
			cpu.Close()
			return "", err
		}
		if first {
			row += " " + nodesOn(nat) + " |"
			first = false
		}
		for _, b := range batches {
			r, err := cell(cpu, nat, b, rounds, per)
			if err != nil {
				cpu.Close()
				nat.Close()
				return "", fmt.Errorf("batch %d, %d threads: %w", b, t, err)
			}
			row += fmt.Sprintf(" %.2f |", r)
		}
		cpu.Close()
		nat.Close()
	}
	return row, nil
}

// cell runs both sessions at batch b, alternating in blocks of about blockTime, for rounds
// of about per each, and returns the median of (native runs/s) / (cpu runs/s).
func cell(cpu, nat *inference.Session, b, rounds int, per time.Duration) (float64, error) {
	for _, s := range []*inference.Session{cpu, nat} {
		if err := s.SetBatch(b); err != nil {
			return 0, err
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i, in := range cpu.Inputs() {
		x := in.Float32()
		for j := range x {
			x[j] = float32(rng.Float64()*2 - 1)
		}
		copy(nat.Inputs()[i].Float32(), x)
	}
	for i := 0; i < 3; i++ { // warm both
		if err := cpu.Run(); err != nil {
			return 0, err
		}
		if err := nat.Run(); err != nil {
			return 0, err
		}
	}
	ratios := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		var tc, tn time.Duration
		var nc, nn int
		for tc < per || tn < per {
			for _, x := range []struct {
				s    *inference.Session
				t    *time.Duration
				runs *int
			}{{cpu, &tc, &nc}, {nat, &tn, &nn}} {
				t, k, err := block(x.s)
				if err != nil {
					return 0, err
				}
				*x.t += t
				*x.runs += k
			}
		}
		ratios = append(ratios, (float64(nn)/tn.Seconds())/(float64(nc)/tc.Seconds()))
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2], nil
}

// blockTime is how long each session runs before the other takes over.
const blockTime = 20 * time.Millisecond

// block runs s once untimed, then for about blockTime (one run at least), and returns the
// timed runs' time and count. The untimed run absorbs the hand-over: after its last run the
// other session's intra-op threads spin for a while before they sleep, and with two threads
// on two cores a run started at once competes with them (alternating run by run, each
// provider's two-thread runs were timed against the other's spinning pool).
func block(s *inference.Session) (time.Duration, int, error) {
	if err := s.Run(); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	n := 0
	for n == 0 || time.Since(t0) < blockTime {
		if err := s.Run(); err != nil {
			return 0, 0, err
		}
		n++
	}
	return time.Since(t0), n, nil
}

// solo runs one provider alone at each batch size for about per and returns the row's cells,
// microseconds per run.
func solo(m *inference.Model, device string, capacity int, batches []int, threads int, per time.Duration) (string, error) {
	opt := inference.Options{Capacity: capacity, IntraOpThreads: threads, InterOpThreads: 1}
	if device != "cpu" {
		opt.Device = device
	}
	s, err := inference.NewSession(m, opt)
	if err != nil {
		return "", err
	}
	defer s.Close()
	row := ""
	for _, b := range batches {
		if err := s.SetBatch(b); err != nil {
			return "", err
		}
		rng := rand.New(rand.NewSource(1))
		for _, in := range s.Inputs() {
			x := in.Float32()
			for j := range x {
				x[j] = float32(rng.Float64()*2 - 1)
			}
		}
		if err := s.Run(); err != nil {
			return "", err
		}
		n := 0
		t0 := time.Now()
		for time.Since(t0) < per {
			if err := s.Run(); err != nil {
				return "", err
			}
			n++
		}
		row += fmt.Sprintf(" %.1f |", float64(time.Since(t0).Microseconds())/float64(n))
	}
	return row, nil
}

// nodesOn is "ours/all" nodes of the session's graph, from the runtime's assignment record.
func nodesOn(s *inference.Session) string {
	subs, err := s.Assignment()
	if err != nil {
		return "?"
	}
	ours, all := 0, 0
	for _, g := range subs {
		all += len(g.Nodes)
		if g.Provider == inference.NativeProvider {
			ours += len(g.Nodes)
		}
	}
	return fmt.Sprintf("%d/%d", ours, all)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
