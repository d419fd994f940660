#include "textflag.h"

// func stridedLines(dst, src unsafe.Pointer, stride, w, lines uintptr)
TEXT ·stridedLines(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ w+24(FP), AX
	MOVQ lines+32(FP), CX
	CMPQ AX, $1
	JEQ  w1
	CMPQ AX, $2
	JEQ  w2

w4: // 4 rows of 16 bytes a line
	MOVUPS     (SI), X0
	ADDQ       DX, SI
	MOVUPS     (SI), X1
	ADDQ       DX, SI
	MOVUPS     (SI), X2
	ADDQ       DX, SI
	MOVUPS     (SI), X3
	ADDQ       DX, SI
	MOVNTPS    X0, (DI)
	MOVNTPS    X1, 16(DI)
	MOVNTPS    X2, 32(DI)
	MOVNTPS    X3, 48(DI)
	ADDQ       $64, DI
	DECQ       CX
	JNZ        w4
	RET

w2: // 8 rows of 8 bytes a line, 2 to a 16-byte store
	MOVQ $4, BX
w2row:
	MOVSD    (SI), X0
	ADDQ     DX, SI
	MOVSD    (SI), X1
	ADDQ     DX, SI
	MOVLHPS  X1, X0
	MOVNTPS  X0, (DI)
	ADDQ     $16, DI
	DECQ     BX
	JNZ      w2row
	DECQ     CX
	JNZ      w2
	RET

w1: // 16 rows of 4 bytes a line, 4 to a 16-byte store
	MOVQ $4, BX
w1row:
	MOVSS    (SI), X0
	ADDQ     DX, SI
	MOVSS    (SI), X1
	ADDQ     DX, SI
	MOVSS    (SI), X2
	ADDQ     DX, SI
	MOVSS    (SI), X3
	ADDQ     DX, SI
	UNPCKLPS X1, X0  // x0 x1
	UNPCKLPS X3, X2  // x2 x3
	MOVLHPS  X2, X0  // x0 x1 x2 x3
	MOVNTPS  X0, (DI)
	ADDQ     $16, DI
	DECQ     BX
	JNZ      w1row
	DECQ     CX
	JNZ      w1
	RET

// func stridedWords(dst, src unsafe.Pointer, stride, w, rows uintptr)
TEXT ·stridedWords(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ w+24(FP), R8
	MOVQ rows+32(FP), CX
	TESTQ $1, R8
	JNZ  odd
	SHRQ $1, R8 // qwords a row
even:
	XORQ BX, BX
evenWord:
	MOVQ    (SI)(BX*8), AX
	MOVNTIQ AX, (DI)
	ADDQ    $8, DI
	INCQ    BX
	CMPQ    BX, R8
	JNE     evenWord
	ADDQ    DX, SI
	DECQ    CX
	JNZ     even
	RET
odd:
	XORQ BX, BX
oddWord:
	MOVL    (SI)(BX*4), AX
	MOVNTIL AX, (DI)
	ADDQ    $4, DI
	INCQ    BX
	CMPQ    BX, R8
	JNE     oddWord
	ADDQ    DX, SI
	DECQ    CX
	JNZ     odd
	RET

// func fill64Lines(dst unsafe.Pointer, v uint64, lines uintptr)
TEXT ·fill64Lines(SB), NOSPLIT, $0-24
	MOVQ       dst+0(FP), DI
	MOVQ       v+8(FP), X0
	PUNPCKLQDQ X0, X0
	MOVQ       lines+16(FP), CX
	JMP        fillLines<>(SB)

// fillLines writes X0 to the CX lines at DI.
TEXT fillLines<>(SB), NOSPLIT, $0
loop:
	MOVNTO X0, (DI)
	MOVNTO X0, 16(DI)
	MOVNTO X0, 32(DI)
	MOVNTO X0, 48(DI)
	ADDQ   $64, DI
	DECQ   CX
	JNZ    loop
	RET

// 0, 1, 2, 3 and 4, 4, 4, 4: iota32Lines' first step and its increment
DATA iotaInit<>+0(SB)/4, $0
DATA iotaInit<>+4(SB)/4, $1
DATA iotaInit<>+8(SB)/4, $2
DATA iotaInit<>+12(SB)/4, $3
DATA iotaInit<>+16(SB)/4, $4
DATA iotaInit<>+20(SB)/4, $4
DATA iotaInit<>+24(SB)/4, $4
DATA iotaInit<>+28(SB)/4, $4
GLOBL iotaInit<>(SB), RODATA|NOPTR, $32

// func iota32Lines(dst unsafe.Pointer, v0 int32, lines uintptr)
TEXT ·iota32Lines(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVL   v0+8(FP), X0
	PSHUFL $0, X0, X0
	PADDL  iotaInit<>+0(SB), X0
	MOVOU  iotaInit<>+16(SB), X1
	MOVQ   lines+16(FP), CX
iotaLoop:
	MOVNTO X0, (DI)
	PADDL  X1, X0
	MOVNTO X0, 16(DI)
	PADDL  X1, X0
	MOVNTO X0, 32(DI)
	PADDL  X1, X0
	MOVNTO X0, 48(DI)
	PADDL  X1, X0
	ADDQ   $64, DI
	DECQ   CX
	JNZ    iotaLoop
	RET

// func fence()
TEXT ·fence(SB), NOSPLIT, $0-0
	SFENCE
	RET
