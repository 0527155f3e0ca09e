/* SPDX-License-Identifier: MIT */
/* gpuboot-probe, embedded in read-only data. */
	.section .rodata
	.balign 16
	.globl gb_probe_blob
gb_probe_blob:
	.incbin PROBE_BIN
gb_probe_blob_end:
	.balign 8
	.globl gb_probe_blob_size
gb_probe_blob_size:
	.quad gb_probe_blob_end - gb_probe_blob
	.section .note.GNU-stack,"",%progbits
