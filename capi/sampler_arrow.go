package main

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
)

// arrowExport exports rec through the Arrow C Data Interface into the caller's ArrowArray and
// ArrowSchema (schema may be NULL), without copying its buffers: cdata hands C their
// addresses and keeps the record's data alive until the consumer calls the array's release.
// The buffers are Go memory that C keeps after the call returns, so they are pinned (pins)
// until the sampler's next batch, when the batch's arrays go back to the runner anyway.
func arrowExport(rec arrow.RecordBatch, array, schema unsafe.Pointer, pins *pinSet) {
	for _, col := range rec.Columns() {
		pinData(col.Data(), pins)
	}
	// cdata's warning: the structs must be zeroed, or the collector may take what C left
	// there for Go pointers.
	clear(unsafe.Slice((*byte)(array), unsafe.Sizeof(cdata.CArrowArray{})))
	var sc *cdata.CArrowSchema
	if schema != nil {
		clear(unsafe.Slice((*byte)(schema), unsafe.Sizeof(cdata.CArrowSchema{})))
		sc = (*cdata.CArrowSchema)(schema)
	}
	cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(array), sc)
}

// pinData pins the buffers of d and of its children.
func pinData(d arrow.ArrayData, pins *pinSet) {
	for _, b := range d.Buffers() {
		if b != nil && b.Len() > 0 {
			pins.pin(unsafe.Pointer(unsafe.SliceData(b.Bytes())))
		}
	}
	for _, c := range d.Children() {
		pinData(c, pins)
	}
}
