package output

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
)

// TestCheckParquetScript runs scripts/check_parquet.py on the files of a run with an MLP and
// an LSTM policy (two file sets): with pyarrow every file must pass its checks of types,
// shapes and metadata; without pyarrow the script must say it skipped and exit 0. Skipped
// when python3 is missing.
func TestCheckParquetScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	path := filepath.Join(t.TempDir(), "c.parquet")
	w, err := NewWriter(path, Options{Metadata: Source{Env: "CartPole-v1", Seed: 3}.Metadata()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m := &envrunner.MultiAgentBatch{EnvSteps: 20}
		*m.Policy("mlp") = *cartPoleBatch(rng, 12)
		*m.Policy("rnn") = *lstmBatch(rng, 9)
		m.AgentSteps = 21
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if len(files) != 2 {
		t.Fatalf("files %v, want the main file and the LSTM policy's", files)
	}
	out, err := exec.Command(py, append([]string{filepath.Join("..", "..", "scripts", "check_parquet.py")}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("check_parquet.py: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "skipped: pyarrow is not installed") {
		t.Skipf("check_parquet.py skipped: %s", strings.TrimSpace(string(out)))
	}
	if n := strings.Count(string(out), ": ok,"); n != len(files) {
		t.Fatalf("check_parquet.py passed %d of %d files:\n%s", n, len(files), out)
	}
	t.Logf("%s", out)
}
