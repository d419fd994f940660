#include "textflag.h"

// func lines(p unsafe.Pointer, n uintptr)
TEXT ·lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	ADDQ AX, CX      // CX: the end
	ANDQ $~63, AX    // from the line that holds the first byte
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JB loop
	RET
