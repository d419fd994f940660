package scaleout

import (
	"encoding/binary"
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// checkIPC looks through the metadata of an Arrow IPC stream for what Arrow's reader would
// trust to its cost: it allocates by the lengths it reads and recurses through the fields, so
// a corrupt or hostile message could take all the memory there is (a fatal error, not a
// panic that Decode recovers) or never end. FuzzDecode found both. A message passes when
//   - every vector (fields, children, key-value pairs, features, nodes, buffers) fits in it,
//   - its fields are of the types the sampler writes (Int, FloatingPoint, Utf8, Bool,
//     FixedSizeList), none dictionary-encoded, nested at most maxFieldDepth deep, and fewer
//     than the message has room for (tables shared by several parents expand without end),
//   - and a record batch's length, and each of its nodes' lengths and null counts, are at
//     most maxRows(len(data)): what the data could hold uncompressed.
//
// Reads out of range panic here too; Decode recovers them.
func checkIPC(data []byte) error {
	rows := maxRows(len(data))
	for pos := 0; pos+4 <= len(data); {
		n := int(int32(binary.LittleEndian.Uint32(data[pos:])))
		pos += 4
		if uint32(n) == 0xFFFFFFFF { // continuation marker, then the length
			if pos+4 > len(data) {
				return nil // the reader reports the truncation
			}
			n = int(int32(binary.LittleEndian.Uint32(data[pos:])))
			pos += 4
		}
		if n == 0 {
			return nil // end of stream
		}
		if n < 0 || n > len(data)-pos {
			return fmt.Errorf("a message of %d bytes in %d", n, len(data)-pos)
		}
		body, err := checkMessage(data[pos:pos+n], rows)
		if err != nil {
			return err
		}
		pos += n
		if body < 0 || body > int64(len(data)-pos) {
			return fmt.Errorf("a message body of %d bytes in %d", body, len(data)-pos)
		}
		pos += int(body)
	}
	return nil
}

// maxRows bounds the rows (and values) of a message of n bytes: one bit for each bit its
// buffers could hold uncompressed (a bool takes one bit, other values more).
func maxRows(n int) int64 { return 8 * int64(uncompressedBudget(n)) }

// Slots of the Arrow flatbuffers tables (Message.fbs, Schema.fbs): 4 + 2 x the field's index.
const (
	slot0 = 4 + 2*iota
	slot1
	slot2
	slot3
	slot4
	slot5
	slot6
)

const maxFieldDepth = 32

// The field types the sampler writes (Schema.fbs's Type union).
var knownTypes = map[byte]bool{2: true, 3: true, 5: true, 6: true, 16: true} // Int, FloatingPoint, Utf8, Bool, FixedSizeList

// checkMessage checks a Message table and returns its bodyLength.
func checkMessage(buf []byte, rows int64) (int64, error) {
	if len(buf) < 4 {
		return 0, errors.New("a message shorter than its root offset")
	}
	m := &flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
	if err := checkVector(m, slot4, 4, "message custom_metadata"); err != nil {
		return 0, err
	}
	var body int64
	if o := m.Offset(slot3); o != 0 {
		body = m.GetInt64(m.Pos + flatbuffers.UOffsetT(o))
	}
	var kind byte
	if o := m.Offset(slot1); o != 0 {
		kind = m.GetByte(m.Pos + flatbuffers.UOffsetT(o))
	}
	o := m.Offset(slot2)
	if o == 0 {
		return body, nil
	}
	var h flatbuffers.Table
	m.Union(&h, flatbuffers.UOffsetT(o))
	switch kind {
	case 1: // Schema
		return body, checkSchema(&h)
	case 3: // RecordBatch
		return body, checkRecordBatch(&h, rows)
	}
	return 0, fmt.Errorf("a message of kind %d (the sampler writes schemas and record batches)", kind)
}

func checkSchema(s *flatbuffers.Table) error {
	if err := checkVector(s, slot2, 4, "schema custom_metadata"); err != nil {
		return err
	}
	if err := checkVector(s, slot3, 8, "schema features"); err != nil {
		return err
	}
	// A field table takes more than 4 bytes, so a message holds fewer fields than a quarter
	// of its bytes; more means tables shared between parents (children vectors pointing at
	// the same fields), which Arrow's reader would expand, level after level, without end.
	budget := len(s.Bytes) / 4
	return checkFields(s, slot1, 0, &budget)
}

// checkFields checks the vector of Field tables in t's slot, and their children, counting
// them against budget.
func checkFields(t *flatbuffers.Table, slot flatbuffers.VOffsetT, depth int, budget *int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("fields nested more than %d deep", maxFieldDepth)
	}
	if err := checkVector(t, slot, 4, "fields"); err != nil {
		return err
	}
	o := t.Offset(slot)
	if o == 0 {
		return nil
	}
	start, n := t.Vector(flatbuffers.UOffsetT(o)), t.VectorLen(flatbuffers.UOffsetT(o))
	if *budget -= n; *budget < 0 {
		return errors.New("more fields than the message can hold (shared tables)")
	}
	for i := range n {
		f := &flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(start + flatbuffers.UOffsetT(4*i))}
		if err := checkVector(f, slot6, 4, "field custom_metadata"); err != nil {
			return err
		}
		var typ byte
		if o := f.Offset(slot2); o != 0 {
			typ = f.GetByte(f.Pos + flatbuffers.UOffsetT(o))
		}
		if !knownTypes[typ] {
			return fmt.Errorf("a field of type %d (the sampler writes Int, FloatingPoint, Utf8, Bool and FixedSizeList)", typ)
		}
		if f.Offset(slot4) != 0 {
			return errors.New("a dictionary-encoded field (the sampler writes none)")
		}
		if err := checkFields(f, slot5, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

func checkRecordBatch(rb *flatbuffers.Table, rows int64) error {
	if o := rb.Offset(slot0); o != 0 {
		if n := rb.GetInt64(rb.Pos + flatbuffers.UOffsetT(o)); n < 0 || n > rows {
			return fmt.Errorf("a record batch of %d rows", n)
		}
	}
	if err := checkVector(rb, slot1, 16, "record batch nodes"); err != nil {
		return err
	}
	if o := rb.Offset(slot1); o != 0 {
		start, n := rb.Vector(flatbuffers.UOffsetT(o)), rb.VectorLen(flatbuffers.UOffsetT(o))
		for i := range n {
			at := start + flatbuffers.UOffsetT(16*i) // FieldNode: length, null_count
			length, nulls := rb.GetInt64(at), rb.GetInt64(at+8)
			if length < 0 || length > rows || nulls < 0 || nulls > length {
				return fmt.Errorf("a field node of %d values, %d null", length, nulls)
			}
		}
	}
	if err := checkVector(rb, slot2, 16, "record batch buffers"); err != nil {
		return err
	}
	if o := rb.Offset(slot4); o != 0 && rb.VectorLen(flatbuffers.UOffsetT(o)) != 0 {
		return errors.New("variadic buffer counts (the sampler writes no view types)")
	}
	return nil
}

// checkVector fails when the vector in t's slot (elements of elem bytes) runs past the buffer.
func checkVector(t *flatbuffers.Table, slot flatbuffers.VOffsetT, elem int, what string) error {
	o := t.Offset(slot)
	if o == 0 {
		return nil
	}
	start, n := int(t.Vector(flatbuffers.UOffsetT(o))), t.VectorLen(flatbuffers.UOffsetT(o))
	if n < 0 || start > len(t.Bytes) || n > (len(t.Bytes)-start)/elem {
		return fmt.Errorf("%s: %d of %d bytes each in a message of %d bytes", what, n, elem, len(t.Bytes))
	}
	return nil
}
