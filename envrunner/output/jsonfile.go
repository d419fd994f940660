package output

import (
	"io"

	"github.com/onnxrl/sampler/envrunner"
)

// jsonEncoder writes each batch as one JSON line into a reused buffer.
type jsonEncoder struct {
	buf []byte
}

func (e *jsonEncoder) write(dst io.Writer, m *envrunner.MultiAgentBatch) error {
	e.buf = e.appendLine(e.buf[:0], m)
	_, err := dst.Write(e.buf)
	return err
}

func (e *jsonEncoder) appendLine(dst []byte, m *envrunner.MultiAgentBatch) []byte {
	return append(AppendJSON(dst, m), '\n')
}

func (e *jsonEncoder) endFile(io.Writer) error { return nil }
