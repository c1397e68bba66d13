/*
 * vivarium-pvh-loader: the kernel QEMU is given (-kernel) for a PVH guest, in place of the
 * vmlinux itself. QEMU loads an ELF kernel as ROM blobs that every system reset copies back into
 * guest RAM, a loadvm's included: some 44 MiB for a distribution kernel, 65-245 ms of every
 * checkpoint restore under TCG (docs/benchmarks.md). This loader is a few hundred bytes. The
 * backend writes the vmlinux's load segments into the guest's RAM file at their physical
 * addresses before QEMU starts (GuestKernel.java), and a boot block at BOOT_BLOCK naming the
 * kernel's PVH entry; QEMU's PVH option ROM jumps here with the start_info it built in %ebx (flat
 * 32-bit protected mode, no paging: the PVH boot ABI); this checks the block, clears it, and jumps
 * to the kernel's entry with %ebx as it came. A missing block is reported on the serial console.
 */
#include <stdint.h>

#define SERIAL 0x3f8
/* The boot block: "VIVKERN1", the entry, its complement (GuestKernel.BOOT_BLOCK, pvh-loader.ld). */
#define BOOT_BLOCK 0x110000u

__asm__(".pushsection .note.Xen, \"a\", @note\n"
	".balign 4\n"
	".long 4, 4, 18\n" /* XEN_ELFNOTE_PHYS32_ENTRY */
	".asciz \"Xen\"\n"
	".balign 4\n"
	".long _start\n"
	".popsection\n"
	".pushsection .text.entry, \"ax\"\n"
	".code32\n"
	".globl _start\n"
	"_start:\n"
	"cli\n"
	"cld\n"
	"mov $stack_top, %esp\n"
	"push %ebx\n"
	"call kernel_entry\n"
	"pop %ebx\n"
	"jmp *%eax\n"
	".popsection\n");

static unsigned char stack[1024] __attribute__((aligned(16), used));
__asm__(".globl stack_top\n.set stack_top, stack + 1024\n");

static inline void outb(uint16_t port, uint8_t v) { __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }

static void __attribute__((noreturn)) fail(const char *why)
{
	for (const char *p = "vivarium-pvh-loader: "; *p; p++)
		outb(SERIAL, (uint8_t)*p);
	for (const char *p = why; *p; p++)
		outb(SERIAL, (uint8_t)*p);
	outb(SERIAL, '\n');
	for (;;)
		__asm__ volatile("cli; hlt");
}

uint32_t kernel_entry(void) __attribute__((used));
uint32_t kernel_entry(void)
{
	volatile uint32_t *block = (volatile uint32_t *)BOOT_BLOCK;
	/* "VIVKERN1" as two little-endian words */
	if (block[0] != 0x4b564956u || block[1] != 0x314e5245u || block[2] != ~block[3] || block[2] < 0x100000u)
		fail("no kernel in guest RAM (the backend writes it into the RAM file before QEMU starts)");
	uint32_t entry = block[2];
	for (int i = 0; i < 4; i++)
		block[i] = 0;
	return entry;
}
