#include "textflag.h"

// func Lines(p unsafe.Pointer, n uintptr)
TEXT ·Lines(SB), NOSPLIT, $0-16
	MOVD	p+0(FP), R0
	MOVD	n+8(FP), R1
	ADD	R0, R1, R1
loop:
	CMP	R1, R0
	BHS	done
	PRFM	(R0), PLDL1KEEP
	ADD	$64, R0
	B	loop
done:
	RET
