/* The depth section's plain reference: 4 KiB random reads with O_DIRECT, nothing else.
 *
 * depthref DEVICE THREADS DEPTH SECONDS: THREADS threads read random 4 KiB blocks of
 * DEVICE (or a file) for SECONDS, each keeping DEPTH reads in flight the way aiobench's
 * native engine does: one Linux AIO context per thread, the free positions submitted in
 * one io_submit, or two per call when there are fewer threads than CPUs and the device did
 * not complete the last batch inside io_submit (see aio_submit in
 * aiobench/engines/_native.c), then io_getevents for at least one. At a depth of 1, one
 * pread after the other unless there are fewer threads than CPUs; then AIO too, until 64
 * reads in a row complete inside their io_submit with the thread switched out for fewer
 * than 16 of them (SYNC_STREAK and SYNC_SWITCHES there): pread from then. Each read is
 * timed from its submission to its completion. Prints "<reads> <elapsed_ns>
 * <latency_sum_ns>" over all threads (elapsed: from the common start to the
 * last thread's last completion), so the mean number in flight is latency_sum / elapsed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#define BLOCK 4096
#define SYNC_STREAK 64
#define SYNC_SWITCHES (SYNC_STREAK / 4)

static const char *path;
static int depth, spare; /* spare: fewer threads than CPUs */
static uint64_t blocks;
static int64_t start_ns, end_ns;
static pthread_barrier_t barrier;

typedef struct {
    uint64_t rng;
    long long reads;
    int64_t latency_ns, last_ns;
} Worker;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static off_t next_offset(Worker *w)
{
    w->rng ^= w->rng << 13; /* xorshift64 */
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (off_t)((w->rng % blocks) * BLOCK);
}

static void fail(const char *what)
{
    perror(what);
    exit(1);
}

static void read_one_by_one(Worker *w, int fd, char *buf)
{
    for (;;) {
        int64_t t0 = now_ns();
        if (t0 >= end_ns)
            break;
        if (pread(fd, buf, BLOCK, next_offset(w)) != BLOCK)
            fail("pread");
        int64_t t1 = now_ns();
        w->latency_ns += t1 - t0;
        w->last_ns = t1;
        w->reads++;
    }
}

/* The completions in the AIO ring of ``ctx`` (its head is the kernel's ABI), not reaped. */
static unsigned ring_count(aio_context_t ctx)
{
    const unsigned *ring = (const unsigned *)(uintptr_t)ctx; /* id, nr, head, tail */
    unsigned head = __atomic_load_n(&ring[2], __ATOMIC_ACQUIRE);
    unsigned tail = __atomic_load_n(&ring[3], __ATOMIC_ACQUIRE);
    return tail >= head ? tail - head : tail + ring[1] - head;
}

/* The calling thread's context switches so far. */
static long thread_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw + ru.ru_nivcsw : 0;
}

/* batch[0..count) in one io_submit, or two per call (spare, and the last batch of more
 * than two did not complete inside its io_submit: *inline_done says whether it did); at
 * depth 1, *streak counts the reads in a row that completed inside it (*switches: the
 * thread's context switches at its first), and is SYNC_STREAK once such a streak had
 * fewer than SYNC_SWITCHES of them. */
static void submit(aio_context_t ctx, struct iocb **batch, int count, int *inline_done,
                   int *streak, long *switches)
{
    unsigned before = ring_count(ctx);
    int step = spare && count > 2 && !*inline_done ? 2 : count;
    for (int i = 0; i < count; i += step) {
        long c = count - i < step ? count - i : step;
        if (syscall(SYS_io_submit, ctx, c, batch + i) != c)
            fail("io_submit");
    }
    if (count > 2)
        *inline_done = ring_count(ctx) - before >= (unsigned)count;
    if (depth != 1)
        return;
    if (ring_count(ctx) == before)
        *streak = 0;
    else if ((*streak)++ == 0)
        *switches = thread_switches();
    else if (*streak == SYNC_STREAK && thread_switches() - *switches >= SYNC_SWITCHES)
        *streak = 0; /* (another thread completed them, preempting this one) */
}

static void read_queued(Worker *w, int fd, char *mem)
{
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, depth, &ctx) < 0)
        fail("io_setup");
    struct iocb *cbs = calloc((size_t)depth, sizeof *cbs);
    struct iocb **batch = calloc((size_t)depth, sizeof *batch);
    struct io_event *events = calloc((size_t)depth, sizeof *events);
    int64_t *started = calloc((size_t)depth, sizeof *started);
    int *free_pos = calloc((size_t)depth, sizeof *free_pos);
    int n_free = depth, inflight = 0, inline_done = 0, streak = 0;
    long switches = 0;
    for (int p = 0; p < depth; p++)
        free_pos[p] = p;
    for (;;) {
        int count = 0;
        int64_t t0 = now_ns();
        while (t0 < end_ns && n_free > 0) {
            int p = free_pos[--n_free];
            memset(&cbs[p], 0, sizeof cbs[p]);
            cbs[p].aio_data = (uint64_t)p;
            cbs[p].aio_lio_opcode = IOCB_CMD_PREAD;
            cbs[p].aio_fildes = (uint32_t)fd;
            cbs[p].aio_buf = (uint64_t)(uintptr_t)(mem + (size_t)p * BLOCK);
            cbs[p].aio_nbytes = BLOCK;
            cbs[p].aio_offset = next_offset(w);
            started[p] = t0;
            batch[count++] = &cbs[p];
        }
        if (count)
            submit(ctx, batch, count, &inline_done, &streak, &switches);
        inflight += count;
        if (inflight == 0)
            break;
        long got = syscall(SYS_io_getevents, ctx, 1L, (long)inflight, events, NULL);
        if (got < 0)
            fail("io_getevents");
        int64_t t1 = now_ns();
        for (long e = 0; e < got; e++) {
            int p = (int)events[e].data;
            if (events[e].res != BLOCK)
                fail("read");
            w->latency_ns += t1 - started[p];
            w->reads++;
            free_pos[n_free++] = p;
            inflight--;
        }
        w->last_ns = t1;
        if (streak >= SYNC_STREAK)
            break; /* (nothing in flight at depth 1) */
    }
    syscall(SYS_io_destroy, ctx);
    if (streak >= SYNC_STREAK)
        read_one_by_one(w, fd, mem);
}

static void *work(void *arg)
{
    Worker *w = arg;
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0)
        fail(path);
    char *mem;
    if (posix_memalign((void **)&mem, BLOCK, (size_t)depth * BLOCK))
        fail("posix_memalign");
    pthread_barrier_wait(&barrier);
    if (depth == 1 && !spare)
        read_one_by_one(w, fd, mem);
    else
        read_queued(w, fd, mem);
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: depthref DEVICE THREADS DEPTH SECONDS\n");
        return 2;
    }
    path = argv[1];
    int threads = atoi(argv[2]);
    depth = atoi(argv[3]);
    double seconds = atof(argv[4]);
    cpu_set_t cpus;
    spare = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && threads < CPU_COUNT(&cpus);
    if (threads < 1 || depth < 1 || seconds <= 0)
        return 2;
    int fd = open(path, O_RDONLY);
    struct stat st;
    uint64_t size = 0;
    if (fd < 0 || fstat(fd, &st) < 0)
        fail(path);
    if (!S_ISBLK(st.st_mode))
        size = (uint64_t)st.st_size;
    else if (ioctl(fd, BLKGETSIZE64, &size) < 0)
        fail(path);
    close(fd);
    blocks = size / BLOCK;
    if (blocks == 0) {
        fprintf(stderr, "%s: smaller than a block\n", path);
        return 2;
    }
    Worker *workers = calloc((size_t)threads, sizeof *workers);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        workers[i].rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
        if (pthread_create(&ids[i], NULL, work, &workers[i]))
            fail("pthread_create");
    }
    start_ns = now_ns();
    end_ns = start_ns + (int64_t)(seconds * 1e9);
    pthread_barrier_wait(&barrier);
    long long reads = 0;
    int64_t latency = 0, last = start_ns;
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        reads += workers[i].reads;
        latency += workers[i].latency_ns;
        if (workers[i].last_ns > last)
            last = workers[i].last_ns;
    }
    printf("%lld %lld %lld\n", reads, (long long)(last - start_ns), (long long)latency);
    return 0;
}
