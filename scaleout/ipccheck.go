package scaleout

import (
	"encoding/binary"
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// checkIPC looks through the metadata of an Arrow IPC stream for what would make Arrow's
// reader allocate without bound or recurse without end: a vector (of fields, children,
// key-value pairs, union type ids, features, nodes, buffers) longer than the message could
// hold, fields nested too deep (a cycle) or more of them than the message has room for
// (tables shared by several parents). Arrow's reader trusts these lengths, and a
// corrupt one cost the process a fatal out-of-memory (found by FuzzDecode); other damage
// makes it panic, which Decode recovers. Reads out of range panic here too.
func checkIPC(data []byte) error {
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
		meta := data[pos : pos+n]
		body, err := checkMessage(meta)
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

// checkMessage checks a Message table and returns its bodyLength.
func checkMessage(buf []byte) (int64, error) {
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
		return body, checkRecordBatch(&h)
	case 2: // DictionaryBatch: its RecordBatch is field 1
		if o := h.Offset(slot1); o != 0 {
			rb := flatbuffers.Table{Bytes: buf, Pos: h.Indirect(h.Pos + flatbuffers.UOffsetT(o))}
			return body, checkRecordBatch(&rb)
		}
	}
	return body, nil
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
		if o := f.Offset(slot3); o != 0 && f.GetByte(f.Pos+flatbuffers.UOffsetT(f.Offset(slot2))) == 14 { // Union
			var u flatbuffers.Table
			f.Union(&u, flatbuffers.UOffsetT(o))
			if err := checkVector(&u, slot1, 4, "union type ids"); err != nil {
				return err
			}
		}
		if err := checkFields(f, slot5, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

func checkRecordBatch(rb *flatbuffers.Table) error {
	if err := checkVector(rb, slot1, 16, "record batch nodes"); err != nil {
		return err
	}
	if err := checkVector(rb, slot2, 16, "record batch buffers"); err != nil {
		return err
	}
	return checkVector(rb, slot4, 8, "record batch variadic buffer counts")
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
