/* SPDX-License-Identifier: MIT */
/* The probe's entry point, calling the oldest __libc_start_main (GLIBC_2.2.5
 * on x86_64, GLIBC_2.17 on aarch64) so the binary runs on every glibc
 * gpuboot supports: crt1.o of a new glibc would bind GLIBC_2.34. No
 * init/fini: the probe has no constructors. Also embeds the PTX kernels,
 * NUL-terminated. */
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
#elif defined(__aarch64__)
	.symver __libc_start_main,__libc_start_main@GLIBC_2.17
	.text
	.globl _start
	.type _start,%function
_start:
	mov x29, #0             /* the outermost frame */
	mov x30, #0
	mov x5, x0              /* rtld_fini, from the dynamic loader */
	ldr x1, [sp]            /* argc */
	add x2, sp, #8          /* argv */
	mov x3, #0              /* init */
	mov x4, #0              /* fini */
	mov x6, sp              /* stack_end (16-byte aligned by the kernel) */
	adrp x0, main
	add x0, x0, :lo12:main
	bl __libc_start_main
	brk #0
	.size _start, .-_start
#else
#error "gpuboot-probe: no entry point for this architecture"
#endif

	.section .rodata
	.globl gb_probe_ptx
	.type gb_probe_ptx,@object
gb_probe_ptx:
	.incbin PTX_FILE
	.byte 0
	.size gb_probe_ptx, .-gb_probe_ptx
	.section .note.GNU-stack,"",%progbits
