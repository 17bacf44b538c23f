/*
 * fork32: an ia32 program, built without libc (cc -m32 -nostdlib
 * -static). It calls fork, ia32 syscall 2, which is open on x86-64, with
 * registers that would read as open(PATH, O_WRONLY|O_CREAT) there; both
 * processes then exit 0. writewatch must not take it for an open.
 */
static const char path[] = "/var/tmp/writewatch-ia32-not-an-open.txt";

void _start(void)
{
	int ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(2), "D"(path), "S"(0x41) : "memory");
	__asm__ volatile("int $0x80" : : "a"(1), "b"(0));
	for (;;)
		;
}
