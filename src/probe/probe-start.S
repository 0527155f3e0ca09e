/* SPDX-License-Identifier: MIT */
/* The probe's entry point, calling the oldest __libc_start_main (GLIBC_2.2.5
 * on x86_64) so the binary runs on every glibc gpuboot supports: crt1.o of a
 * new glibc would bind GLIBC_2.34. No init/fini: the probe has no
 * constructors. Also embeds the PTX kernels, NUL-terminated. */
#if defined(__x86_64__)
	.symver __libc_start_main,__libc_start_main@GLIBC_2.2.5
	.text
	.globl _start
	.type _start,@function
_start:
	xor %ebp, %ebp
	mov %rdx, %r9           /* rtld_fini */
	pop %rsi                /* argc */
	mov %rsp, %rdx          /* argv */
	and $-16, %rsp
	push %rax
	push %rsp               /* stack_end */
	xor %r8d, %r8d          /* fini */
	xor %ecx, %ecx          /* init */
	lea main(%rip), %rdi
	call __libc_start_main@PLT
	hlt
	.size _start, .-_start
#endif

	.section .rodata
	.globl gb_probe_ptx
	.type gb_probe_ptx,@object
gb_probe_ptx:
	.incbin PTX_FILE
	.byte 0
	.size gb_probe_ptx, .-gb_probe_ptx
	.section .note.GNU-stack,"",@progbits
