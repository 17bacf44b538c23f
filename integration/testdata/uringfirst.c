/*
 * uringfirst: io_uring before anything else, by raw syscalls, so that
 * its requests come as early as a program can make them.
 *
 *   uringfirst PATH
 * Sets up a ring and creates PATH through it (IORING_OP_OPENAT).
 *
 *   uringfirst ring PATH PROGRAM ARGS...
 * Sets up a ring as descriptor 3, then execs PROGRAM with ARGS, which
 * inherits it, and its parameters in URINGFIRST_PARAMS (hex); PATH is
 * unused.
 *
 *   uringfirst enter PATH
 * Creates PATH through the ring it inherited as descriptor 3: no
 * io_uring_setup of its own.
 */
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int setup(struct io_uring_params *p)
{
	memset(p, 0, sizeof(*p));
	return syscall(__NR_io_uring_setup, 4, p);
}

/* Creates path through the ring fd, set up with p. */
static int create(int fd, struct io_uring_params *p, const char *path)
{
	size_t len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cqlen = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	char *ring, *cq;
	struct io_uring_sqe *sqe;
	unsigned *tail, mask, head;
	int res;

	if (cqlen > len)
		len = cqlen;
	ring = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	sqe = mmap(0, p->sq_entries * sizeof(*sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (ring == MAP_FAILED || sqe == MAP_FAILED)
		return 3;
	cq = ring;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_OPENAT;
	sqe->fd = AT_FDCWD;
	sqe->addr = (uint64_t)(uintptr_t)path;
	sqe->len = 0644;
	sqe->open_flags = O_WRONLY | O_CREAT | O_TRUNC;
	tail = (unsigned *)(ring + p->sq_off.tail);
	mask = *(unsigned *)(ring + p->sq_off.ring_mask);
	((unsigned *)(ring + p->sq_off.array))[*tail & mask] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return 4;
	head = *(unsigned *)(cq + p->cq_off.head);
	res = ((struct io_uring_cqe *)(cq + p->cq_off.cqes))[head & *(unsigned *)(cq + p->cq_off.ring_mask)].res;
	if (res < 0)
		return 5;
	close(res);
	return 0;
}

int main(int argc, char **argv)
{
	struct io_uring_params p;
	int fd;

	if (argc >= 4 && !strcmp(argv[1], "ring")) {
		char hex[2 * sizeof(p) + 1];
		unsigned char *b = (unsigned char *)&p;

		fd = setup(&p);
		/* The kernel makes the ring's descriptor close on exec. */
		if (fd < 0 || (fd != 3 && dup2(fd, 3) != 3) || fcntl(3, F_SETFD, 0) < 0)
			return 2;
		for (size_t i = 0; i < sizeof(p); i++) {
			hex[2 * i] = "0123456789abcdef"[b[i] >> 4];
			hex[2 * i + 1] = "0123456789abcdef"[b[i] & 15];
		}
		hex[2 * sizeof(p)] = 0;
		setenv("URINGFIRST_PARAMS", hex, 1);
		execv(argv[3], argv + 3);
		return 6;
	}
	if (argc == 3 && !strcmp(argv[1], "enter")) {
		/* The ring's parameters, from the process that set it up. */
		const char *hex = getenv("URINGFIRST_PARAMS");
		unsigned char *b = (unsigned char *)&p;

		if (!hex || strlen(hex) != 2 * sizeof(p))
			return 7;
		for (size_t i = 0; i < sizeof(p); i++) {
			unsigned hi = hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10;
			unsigned lo = hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10;
			b[i] = hi << 4 | lo;
		}
		return create(3, &p, argv[2]);
	}
	if (argc != 2)
		return 1;
	fd = setup(&p);
	if (fd < 0)
		return 2;
	return create(fd, &p, argv[1]);
}
