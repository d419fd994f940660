package output

// Page checksums. Parquet's PageHeader has a crc field (field 4): the CRC-32 (IEEE, as
// zlib's) of the page's bytes as written after the header (compressed_page_size bytes),
// which pyarrow verifies with page_checksum_verification=True. The pinned arrow-go
// (v18.8.0) neither writes nor checks it: the writer puts it in every page header
// (parquetpage.go), and readers check it (verify.go). The footer also gets MetaChecksums,
// the CRC-32 of all bytes before the footer and of the footer itself, so that a damaged page
// header or footer (which page checksums do not cover) is found too.

// MetaChecksums is the key of the file metadata that holds the file's own checksums:
// "crc32 data=XXXXXXXX footer=YYYYYYYY", the CRC-32 (hex) of the bytes before the footer
// and of the footer (the Thrift FileMetaData) with YYYYYYYY read as 00000000.
const MetaChecksums = "onnxrl.checksums"

const parquetMagic = "PAR1"

// Field ids of Parquet's Thrift structs (parquet.thrift) that the checks read.
const (
	pageHeaderCompressedSize = 3
	pageHeaderCRC            = 4

	fileMetaRowGroups = 4
	fileMetaKeyValue  = 5

	rowGroupColumns     = 1
	chunkMeta           = 3
	metaPathInSchema    = 3
	metaTotalCompressed = 7
	metaDataPageOffset  = 9
	metaDictPageOffset  = 11
)

// chunkStart is where a column chunk's pages start: its dictionary page, or its first data
// page.
func chunkStart(md *tValue) int64 {
	start := int64(0)
	if f := md.field(metaDataPageOffset); f != nil {
		start = f.i
	}
	if f := md.field(metaDictPageOffset); f != nil && f.i > 0 && f.i < start {
		start = f.i
	}
	return start
}
