/*
 * vivarium-pvh-loader: the kernel QEMU is given (-kernel) for a PVH guest, in place of the
 * vmlinux itself. QEMU loads an ELF kernel as ROM blobs that every system reset copies back into
 * guest RAM, a loadvm's included: some 44 MiB for a distribution kernel, 65-245 ms of every
 * checkpoint restore under TCG (docs/benchmarks.md). This stub is a few KiB: QEMU's PVH option ROM
 * jumps to it, it reads the real vmlinux from the fw_cfg file opt/vivarium/vmlinux (fw_cfg files
 * are not rewritten at a reset) straight into place by fw_cfg DMA, and jumps to the kernel's own
 * PVH entry with the start_info QEMU prepared. Freestanding 32-bit code, entered in flat 32-bit
 * protected mode without paging, %ebx holding the start_info (the PVH boot ABI).
 */
#include <stdint.h>

#define FW_CFG_PORT_SEL 0x510
#define FW_CFG_PORT_DATA 0x511
#define FW_CFG_PORT_DMA_HIGH 0x514
#define FW_CFG_PORT_DMA_LOW 0x518
#define FW_CFG_ID 0x01
#define FW_CFG_FILE_DIR 0x19
#define FW_CFG_VERSION_DMA 0x02u
#define DMA_ERROR 0x01u
#define DMA_READ 0x02u
#define DMA_SKIP 0x04u
#define DMA_SELECT 0x08u
#define KERNEL_FILE "opt/vivarium/vmlinux"
#define SERIAL 0x3f8
#define PT_LOAD 1
#define PT_NOTE 4
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define MAX_PHDRS 32
#define EM_X86_64 62

__asm__(".pushsection .note.Xen, \"a\", @note\n"
	".balign 4\n"
	".long 4, 4, " "18" "\n"
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
	"call load_kernel\n"
	"pop %ebx\n"
	"jmp *%eax\n"
	".popsection\n");

struct fw_cfg_dma {
	uint32_t control;
	uint32_t length;
	uint64_t address;
} __attribute__((packed));

struct fw_cfg_file {
	uint32_t size;
	uint16_t select;
	uint16_t reserved;
	char name[56];
} __attribute__((packed));

struct elf64_ehdr {
	unsigned char ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
} __attribute__((packed));

struct elf64_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
} __attribute__((packed));

static volatile struct fw_cfg_dma dma __attribute__((aligned(16)));
static unsigned char scratch[4096] __attribute__((aligned(16)));
static struct elf64_phdr phdrs[MAX_PHDRS];
static unsigned char stack[8192] __attribute__((aligned(16), used));
__asm__(".globl stack_top\n.set stack_top, stack + 8192\n");
/* this loader's own extent (pvh-loader.ld), which no segment of the kernel may overwrite */
extern unsigned char loader_start[], loader_end[];

static uint16_t key;
static uint32_t position;

static inline void outb(uint16_t port, uint8_t v) { __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outw(uint16_t port, uint16_t v) { __asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outl(uint16_t port, uint32_t v) { __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port)); }
static inline uint8_t inb(uint16_t port) { uint8_t v; __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline uint32_t be32(uint32_t v) { return __builtin_bswap32(v); }
static inline uint16_t be16(uint16_t v) { return __builtin_bswap16(v); }

/* On the serial console (the VM's console file), then halt: the daemon reports a boot that never answers. */
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

/* One fw_cfg DMA operation; QEMU completes it before the port write returns. */
static void transfer(uint32_t control, uint32_t address, uint32_t length)
{
	dma.control = be32(control);
	dma.length = be32(length);
	dma.address = (uint64_t)be32(address) << 32;
	__asm__ volatile("" : : : "memory");
	outl(FW_CFG_PORT_DMA_HIGH, 0);
	outl(FW_CFG_PORT_DMA_LOW, be32((uint32_t)(uintptr_t)&dma));
	__asm__ volatile("" : : : "memory");
	uint32_t done = be32(dma.control);
	if (done & DMA_ERROR)
		fail("fw_cfg DMA failed");
	if (done)
		fail("fw_cfg DMA did not complete");
}

/* Reads length bytes at offset of the kernel file to physical address to (skipping ahead, or selecting again to go back). */
static void read_at(uint32_t offset, uint32_t to, uint32_t length)
{
	if (offset < position) {
		transfer((uint32_t)key << 16 | DMA_SELECT | DMA_SKIP, 0, offset);
	} else if (offset > position) {
		transfer(DMA_SKIP, 0, offset - position);
	}
	if (length)
		transfer(DMA_READ, to, length);
	position = offset + length;
}

static uint32_t find_kernel_file(uint32_t *size)
{
	outw(FW_CFG_PORT_SEL, FW_CFG_ID);
	uint32_t features = 0;
	for (int i = 0; i < 4; i++)
		features |= (uint32_t)inb(FW_CFG_PORT_DATA) << (8 * i);
	if (!(features & FW_CFG_VERSION_DMA))
		fail("this QEMU's fw_cfg has no DMA interface");
	uint32_t count;
	transfer((uint32_t)FW_CFG_FILE_DIR << 16 | DMA_SELECT | DMA_READ, (uint32_t)(uintptr_t)&count, sizeof count);
	count = be32(count);
	struct fw_cfg_file f;
	for (uint32_t i = 0; i < count; i++) {
		transfer(DMA_READ, (uint32_t)(uintptr_t)&f, sizeof f);
		const char *want = KERNEL_FILE;
		int j = 0;
		while (want[j] && f.name[j] == want[j])
			j++;
		if (!want[j] && !f.name[j]) {
			*size = be32(f.size);
			return be16(f.select);
		}
	}
	fail("no fw_cfg file " KERNEL_FILE " (QEMU needs -fw_cfg name=" KERNEL_FILE ",file=VMLINUX)");
}

static uint32_t pvh_entry(const struct elf64_phdr *note)
{
	if (note->filesz > sizeof scratch)
		fail("the kernel's note segment is too large");
	read_at((uint32_t)note->offset, (uint32_t)(uintptr_t)scratch, (uint32_t)note->filesz);
	uint32_t at = 0, end = (uint32_t)note->filesz;
	while (at + 12 <= end) {
		uint32_t namesz = *(uint32_t *)(scratch + at), descsz = *(uint32_t *)(scratch + at + 4),
			 type = *(uint32_t *)(scratch + at + 8);
		uint32_t name = at + 12, desc = name + ((namesz + 3) & ~3u);
		if (desc + descsz > end)
			break;
		if (type == XEN_ELFNOTE_PHYS32_ENTRY && namesz == 4 && scratch[name] == 'X' && scratch[name + 1] == 'e'
		    && scratch[name + 2] == 'n' && descsz >= 4)
			return *(uint32_t *)(scratch + desc);
		at = desc + ((descsz + 3) & ~3u);
	}
	return 0;
}

uint32_t load_kernel(void) __attribute__((used));
uint32_t load_kernel(void)
{
	uint32_t size;
	key = (uint16_t)find_kernel_file(&size);
	transfer((uint32_t)key << 16 | DMA_SELECT | DMA_READ, (uint32_t)(uintptr_t)scratch, sizeof scratch);
	position = sizeof scratch;
	const struct elf64_ehdr *eh = (const struct elf64_ehdr *)scratch;
	if (eh->ident[0] != 0x7f || eh->ident[1] != 'E' || eh->ident[2] != 'L' || eh->ident[3] != 'F' || eh->ident[4] != 2
	    || eh->ident[5] != 1 || eh->machine != EM_X86_64)
		fail(KERNEL_FILE " is not a little-endian x86-64 ELF (a vmlinux)");
	if (eh->phentsize != sizeof(struct elf64_phdr) || eh->phnum > MAX_PHDRS || eh->phoff > sizeof scratch
	    || eh->phoff + (uint64_t)eh->phnum * sizeof(struct elf64_phdr) > sizeof scratch)
		fail("unexpected program headers in " KERNEL_FILE);
	uint16_t n = eh->phnum;
	const unsigned char *from = scratch + eh->phoff;
	for (uint16_t i = 0; i < n; i++)
		for (uint32_t b = 0; b < sizeof(struct elf64_phdr); b++)
			((unsigned char *)&phdrs[i])[b] = from[i * sizeof(struct elf64_phdr) + b];
	uint32_t entry = 0;
	for (uint16_t i = 0; i < n && !entry; i++)
		if (phdrs[i].type == PT_NOTE)
			entry = pvh_entry(&phdrs[i]);
	if (!entry)
		fail(KERNEL_FILE " has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)");
	/* in file order: fw_cfg reads forward cheaply and only backward by selecting again */
	uint32_t loaded = 0;
	for (;;) {
		int next = -1;
		for (uint16_t i = 0; i < n; i++)
			if (phdrs[i].type == PT_LOAD && phdrs[i].memsz && !(loaded & (1u << i))
			    && (next < 0 || phdrs[i].offset < phdrs[next].offset))
				next = i;
		if (next < 0)
			break;
		loaded |= 1u << next;
		const struct elf64_phdr *seg = &phdrs[next];
		if (seg->offset + seg->filesz > size || seg->paddr + seg->memsz > 0xffffffffull || seg->filesz > seg->memsz)
			fail("a load segment of " KERNEL_FILE " lies outside the file or 32-bit memory");
		if (seg->paddr < (uintptr_t)loader_end && seg->paddr + seg->memsz > (uintptr_t)loader_start)
			fail("a load segment of " KERNEL_FILE " would overwrite this loader");
		read_at((uint32_t)seg->offset, (uint32_t)seg->paddr, (uint32_t)seg->filesz);
		uint32_t zero_from = (uint32_t)(seg->paddr + seg->filesz), zeros = (uint32_t)(seg->memsz - seg->filesz);
		__asm__ volatile("rep stosb" : "+D"(zero_from), "+c"(zeros) : "a"(0) : "memory");
	}
	return entry;
}
