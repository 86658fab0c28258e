/* aiobench.engines._native: the native engine's hot loops, each run of operations in one call.
 *
 * Every entry point has one shape: (slot, spec). The slot (Slot, made once per slot by
 * SlotBuffer) holds the slot's memory and buffer state, which the loops advance in place,
 * and its Linux AIO queue, whose operations may stay in flight from one call to the next;
 * the spec (Spec) says what the call runs: targets, operations, budget, output arrays, and
 * it carries back what the call ended with.
 *
 * Every loop runs with the GIL released and times each operation with
 * clock_gettime(CLOCK_MONOTONIC), the clock of time.perf_counter_ns on Linux, so these
 * instants mix with Python's. Results go into int64 arrays the caller preallocated; a
 * failure comes back as numbers in the spec (status, index, errno, short count, offset,
 * words) that aiobench/engines/native.py words exactly as the Python engine
 * (aiobench/engines/python.py) does. That engine is the reference: every loop here mirrors
 * one of its loops step by step, and the order of untimed steps (stamping, pattern,
 * refill, read back, check) is the same.
 *
 * Only Python's C API and Linux syscalls: native AIO is reached through syscall(2) with
 * <linux/aio_abi.h>, no libaio. Every size and index given is checked before the GIL is
 * released: a wrong call raises ValueError, it never touches memory it was not given.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* What a call ended with; the Python side maps each to the engine's exception. */
enum {
    ST_DONE = 0,     /* every operation (entry) of the call was done */
    ST_BUDGET = 1,   /* one ended past until_ns (or pacing would have slept past it) */
    ST_ERRNO = 2,    /* a call failed: err; in dir mode the entry's own call */
    ST_SHORT = 3,    /* a transfer came back short: a = got, b = length (c = offset) */
    ST_MISMATCH = 4, /* --verify: a = first wrong offset, b = expected, c = found word */
    ST_EXISTS = 5,   /* mkdir found the name: Python checks it is a real dir (reuse_dir) */
    ST_SYMLINK = 6,  /* lstat (or the look before unlink) found a symlink: never stat-ed or removed */
    ST_CUT = 7,      /* time limit or stop request inside a file: it stays unfinished */
    ST_FULL = 8,     /* the block arrays cannot hold the next file's blocks: grow, call again */
    ST_BLOCK = 9,    /* a block read or write of a dir-mode file failed: err, c = offset */
    ST_SETUP = 10,   /* file_aio: io_setup failed: err (nothing was submitted) */
    ST_FSTAT = 11,   /* entries_files, --statinline: the fstat after the open failed: err */
};

/* Dir-mode metadata calls (entries_meta). */
enum { OP_MKDIR = 0, OP_UNLINK = 1, OP_RMDIR = 2, OP_LSTAT = 3, OP_OPEN_CLOSE = 4 };

/* Each 4 KiB of a written block starts with a stamp (engine.py STAMP_SPACING). */
#define STAMP_SPACING 4096

static inline int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
sleep_until(int64_t instant_ns)
{
    if (instant_ns <= 0)
        return;
    struct timespec ts = {instant_ns / 1000000000, instant_ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* -- the start gate ------------------------------------------------------------------ *
 * A phase's common start (aiobench.engines.python.StartGate): int64 gate[0] the state
 * (0 closed, GATE_OPEN, GATE_STOPPED: open, but the phase was stopped before it started)
 * and gate[1] the phase's time limit (0: none). A slot's first run waits here inside its
 * call, without the GIL. The release fans out: the opener wakes GATE_FANOUT runs and each
 * released run wakes GATE_FANOUT more before its first operation, none needing the GIL.
 */
enum { GATE_OPEN = 1, GATE_STOPPED = 2, GATE_FANOUT = 2 };

static int32_t *
gate_word(int64_t *gate)
{
#if __BYTE_ORDER == __LITTLE_ENDIAN
    return (int32_t *)gate; /* the low half of gate[0], where its small values live */
#else
    return (int32_t *)gate + 1;
#endif
}

/* Wait for the gate to open; then whether to run, and the run's end instant: ``budget_ns``
 * from now, or the time limit if that comes first. */
static int
gate_pass(int64_t *gate, int64_t budget_ns, long long *until_ns)
{
    int32_t *word = gate_word(gate);
    int32_t state;
    while ((state = __atomic_load_n(word, __ATOMIC_ACQUIRE)) == 0)
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    /* Wake GATE_FANOUT more before starting: the release fans out over the released
     * runs. (One waker waking 1024 took 150 ms here: each wakee preempted it.) */
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, GATE_FANOUT, NULL, NULL, 0);
    if (state == GATE_STOPPED)
        return 0;
    int64_t until = now_ns() + budget_ns, limit = gate[1];
    *until_ns = limit > 0 && limit < until ? limit : until;
    return 1;
}

PyDoc_STRVAR(gate_open_doc,
"gate_open(gate, state)\n\nOpen the start gate (state 1, or 2: the phase was stopped) and\n"
"start waking the runs waiting at it (each wakes more); gate[1] (the time limit) is set\n"
"before.");

static PyObject *
gate_open(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int state;
    if (!PyArg_ParseTuple(args, "w*i:gate_open", &view, &state))
        return NULL;
    if (view.len < 16 || ((uintptr_t)view.buf & 7) || (state != GATE_OPEN && state != GATE_STOPPED)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "gate: two int64, and a state of 1 or 2");
        return NULL;
    }
    int32_t *word = gate_word(view.buf);
    __atomic_store_n(word, state, __ATOMIC_RELEASE);
    Py_BEGIN_ALLOW_THREADS
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, GATE_FANOUT, NULL, NULL, 0);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* The syscalls, retried on EINTR (as Python's os functions do, PEP 475). */
static inline ssize_t
xpread(int fd, void *buf, size_t len, off_t off)
{
    ssize_t got;
    do
        got = pread(fd, buf, len, off);
    while (got < 0 && errno == EINTR);
    return got;
}

static inline ssize_t
xpwrite(int fd, const void *buf, size_t len, off_t off)
{
    ssize_t got;
    do
        got = pwrite(fd, buf, len, off);
    while (got < 0 && errno == EINTR);
    return got;
}

static inline int
xopenat(int dfd, const char *name, int flags, mode_t mode)
{
    int fd;
    do
        fd = openat(dfd, name, flags, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

static inline void
store64(uint8_t *at, uint64_t value)
{
    memcpy(at, &value, 8); /* native order, as numpy's uint64 view of the pool */
}

/* -- buffers ------------------------------------------------------------------------- */

#define MAX_VIEWS 12

typedef struct {
    Py_buffer views[MAX_VIEWS];
    int count;
} Views;

/* A C-contiguous buffer of ``obj`` (None or unset: empty), of items of ``itemsize`` bytes. */
static int
take(Views *v, PyObject *obj, int writable, Py_ssize_t itemsize, const char *what,
     void **ptr, Py_ssize_t *items)
{
    *ptr = NULL;
    *items = 0;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (v->count == MAX_VIEWS) {
        PyErr_SetString(PyExc_SystemError, "aiobench.engines._native: too many buffers");
        return -1;
    }
    Py_buffer *b = &v->views[v->count];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, b, flags) < 0)
        return -1;
    v->count++;
    if (itemsize > 1 && (b->itemsize != itemsize || (uintptr_t)b->buf % itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s: needs aligned %zd-byte items (got %zd-byte items)",
                     what, itemsize, b->itemsize);
        return -1;
    }
    *ptr = b->buf;
    *items = b->len / (itemsize > 1 ? itemsize : 1);
    return 0;
}

static void
release(Views *v)
{
    while (v->count)
        PyBuffer_Release(&v->views[--v->count]);
}

/* -- Linux native AIO through raw syscalls: a slot's queue (file_aio) ------------------- */

static inline long
sys_io_setup(unsigned nr, aio_context_t *ctx)
{
    return syscall(SYS_io_setup, nr, ctx);
}

static inline long
sys_io_destroy(aio_context_t ctx)
{
    return syscall(SYS_io_destroy, ctx);
}

static inline long
sys_io_submit(aio_context_t ctx, long count, struct iocb **iocbs)
{
    return syscall(SYS_io_submit, ctx, count, iocbs);
}

static inline long
sys_io_getevents(aio_context_t ctx, long min, long max, struct io_event *events)
{
    return syscall(SYS_io_getevents, ctx, min, max, events, NULL);
}

/* The head of the completion ring the kernel maps at a Linux AIO context's address (its
 * layout is the kernel's ABI): events head..tail are complete, not reaped yet. */
typedef struct {
    unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
} AioRing;
#define AIO_RING_MAGIC 0xa10a10a1u

/* The ring of ``ctx``; NULL for a ring of another layout. */
static inline AioRing *
ring_of(aio_context_t ctx)
{
    AioRing *ring = (AioRing *)(uintptr_t)ctx;
    if (ring->magic != AIO_RING_MAGIC || ring->incompat_features != 0 ||
        ring->header_length < sizeof(AioRing) || ring->nr == 0)
        return NULL;
    return ring;
}

/* Completions in the ring, not reaped yet (``ring`` from ring_of). */
static inline unsigned
ring_count(const AioRing *ring)
{
    unsigned head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
    unsigned tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
    return tail >= head ? tail - head : tail + ring->nr - head;
}

/* --poll: wait on the CPU until the ring holds a completion, then take the completions
 * from the ring (as io_getevents would, without its syscall), instead of sleeping in
 * io_getevents: on a device that completes in microseconds the wake-up of a sleeping
 * thread is a large part of each operation's time (measured: 4 KiB direct reads at depth 1
 * on a loop device, 2-CPU VM). The thread is the ring's only reader; the kernel reads its
 * head to know what was taken. At least one event and at most ``max`` are taken; -1: a
 * ring of another layout (io_getevents then). */
static long
ring_reap(aio_context_t ctx, struct io_event *events, long max)
{
    AioRing *ring = ring_of(ctx);
    if (ring == NULL)
        return -1;
    const unsigned nr = ring->nr;
    const struct io_event *ring_events =
        (const struct io_event *)((const char *)ring + ring->header_length);
    unsigned head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE), tail;
    while ((tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE)) == head) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
    long got = 0;
    while (head != tail && got < max) {
        events[got++] = ring_events[head];
        head = head + 1 < nr ? head + 1 : 0;
    }
    __atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
    return got;
}

/* What one in-flight position holds. */
typedef struct {
    struct iocb cb;
    Py_ssize_t op;      /* index of its operation in the current call's arrays */
    int64_t start;      /* when it was submitted */
    Py_ssize_t window;  /* the pool window it writes from; -1: a read */
    uint64_t window_at; /* the pool's next window and stamp before it took its own */
    uint64_t stamp_at;
    int live;           /* submitted, not reaped yet */
} Flight;

/* An operation a budget left to the slot's next call: what it is, matched against that
 * call's first operations. */
typedef struct {
    int fd;
    int64_t offset;
} Carried;

/* A slot's Linux AIO queue, made on its first file_aio call (sized for the slot's depth)
 * and kept from call to call, so that operations stay in flight from one run to the next
 * (issue #28): the context, the positions (each with its read area and iocb), the free
 * ones, and the in-flight writes per pool window. Between two calls it may hold carried
 * operations: the run's operations after its done ones that were submitted to keep the
 * queue full while the call waited for the done ones; they are still in flight, or
 * reaped already (their instants kept, in completion order). */
typedef struct {
    aio_context_t ctx; /* 0: none */
    pid_t pid;         /* the process that made or took ctx: a forked child takes its own */
    unsigned events;   /* what ctx was made for */
    Py_ssize_t positions;
    Flight *flights;
    struct iocb **batch;
    struct io_event *reaped;
    Py_ssize_t *free_pos, n_free;
    Py_ssize_t *busy, windows; /* in-flight writes per pool window */
    Py_ssize_t inflight;
    Carried *carried; /* carry_room of each */
    int64_t *carried_starts, *carried_ends;
    Py_ssize_t carry_room, n_carried, n_carried_done;
    Py_ssize_t carry_length, carry_depth; /* what the carried operations were run with */
    int carry_reading;
    int completes_inline; /* the last batch of more than two completed within io_submit */
    /* Depth 1 (a slot with a core to spare, sleeping): SYNC_STREAK operations in a row
     * completed within their io_submit without the thread leaving its CPU: the device
     * does its work there (zram, brd, tmpfs), and its slot goes back to one pread per
     * operation. */
    int synchronous;
} Queue;

/* Operations in a row completed within io_submit that show a device doing its work
 * there, if the submitting thread switched out for fewer than SYNC_SWITCHES of them. A
 * device that completes in another thread does so within io_submit only when that thread
 * preempts the submitting one on its CPU (a loop device's worker: 21-28 % of the reads
 * over a run here, and long streaks of them), a context switch each time. */
#define SYNC_STREAK 64
#define SYNC_SWITCHES (SYNC_STREAK / 4)

/* The calling thread's context switches so far, voluntary or not. */
static long
thread_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw + ru.ru_nivcsw : 0;
}

/* Carried operations at most, per position: bounds what a call may submit past its done
 * ones while it waits for them (each is in flight or reaped when the call returns). The
 * wait lasts until the slowest of the done ones completes: a tail latency of 10x the mean
 * sees ~10 completions per position meanwhile, each replaced while there is room. */
#define CARRY_PER_POSITION 16

/* Contexts of closed slots, each with nothing in flight, for the next slot to take:
 * io_destroy waits for an RCU grace period (~30 ms here), which paid per slot at every
 * phase's end would add up to seconds at -t 1024. Taken and given back with the GIL held
 * (it guards the list); a forked child forgets its parent's (idle_pid says whose). */
typedef struct {
    aio_context_t ctx;
    unsigned events;
} IdleContext;

static IdleContext *idle;
static Py_ssize_t n_idle, idle_room;
static pid_t idle_pid;

static void
idle_forget_if_forked(pid_t self)
{
    if (idle_pid != self) {
        n_idle = 0; /* the parent's: not ours to use (nor to destroy) */
        idle_pid = self;
    }
}

/* Give ``ctx`` (nothing in flight) back for another slot; 0 when the list had no room. */
static int
idle_park(aio_context_t ctx, unsigned events)
{
    idle_forget_if_forked(getpid());
    if (n_idle == idle_room) {
        Py_ssize_t room = idle_room ? 2 * idle_room : 16;
        IdleContext *grown = PyMem_Realloc(idle, (size_t)room * sizeof *idle);
        if (grown == NULL)
            return 0;
        idle = grown;
        idle_room = room;
    }
    idle[n_idle++] = (IdleContext){ctx, events};
    return 1;
}

static void
queue_free(Queue *q)
{
    PyMem_Free(q->flights);
    PyMem_Free(q->batch);
    PyMem_Free(q->reaped);
    PyMem_Free(q->free_pos);
    PyMem_Free(q->busy);
    PyMem_Free(q->carried);
    PyMem_Free(q->carried_starts);
    PyMem_Free(q->carried_ends);
    memset(q, 0, sizeof *q);
}

static void
queue_reset(Queue *q)
{
    q->n_free = q->positions;
    for (Py_ssize_t j = 0; j < q->positions; j++) {
        q->free_pos[j] = q->positions - 1 - j;
        q->flights[j].live = 0;
    }
    memset(q->busy, 0, (size_t)q->windows * sizeof *q->busy);
    q->inflight = q->n_carried = q->n_carried_done = 0;
}

/* The positions and lists for ``positions`` in flight over ``windows`` pool windows (at
 * least 1); -1 and MemoryError. */
static int
queue_make(Queue *q, Py_ssize_t positions, Py_ssize_t windows)
{
    Py_ssize_t room = CARRY_PER_POSITION * positions;
    q->positions = positions;
    q->windows = windows;
    q->carry_room = room;
    q->flights = PyMem_Calloc((size_t)positions, sizeof *q->flights);
    q->batch = PyMem_Calloc((size_t)positions, sizeof *q->batch);
    q->reaped = PyMem_Calloc((size_t)positions, sizeof *q->reaped);
    q->free_pos = PyMem_Calloc((size_t)positions, sizeof *q->free_pos);
    q->busy = PyMem_Calloc((size_t)windows, sizeof *q->busy);
    q->carried = PyMem_Calloc((size_t)room, sizeof *q->carried);
    q->carried_starts = PyMem_Calloc((size_t)room, sizeof *q->carried_starts);
    q->carried_ends = PyMem_Calloc((size_t)room, sizeof *q->carried_ends);
    if (!q->flights || !q->batch || !q->reaped || !q->free_pos || !q->busy || !q->carried ||
        !q->carried_starts || !q->carried_ends) {
        queue_free(q);
        PyErr_NoMemory();
        return -1;
    }
    queue_reset(q);
    return 0;
}

/* A forked child's copy of its parent's queue: the context and what is in flight are the
 * parent's (the kernel writes into the parent's memory), so the child starts empty. */
static void
queue_forget_if_forked(Queue *q)
{
    if (q->flights && q->ctx && q->pid != getpid()) {
        q->ctx = 0;
        queue_reset(q);
    }
}

/* The queue's context (with the GIL held): kept, an idle one, or a new one; an errno. */
static int
queue_context(Queue *q)
{
    queue_forget_if_forked(q);
    if (q->ctx)
        return 0;
    pid_t self = getpid();
    idle_forget_if_forked(self);
    unsigned events = (unsigned)q->positions;
    for (Py_ssize_t k = n_idle; k-- > 0;)
        if (idle[k].events >= events) {
            q->ctx = idle[k].ctx;
            q->events = idle[k].events;
            idle[k] = idle[--n_idle];
            q->pid = self;
            return 0;
        }
    aio_context_t ctx = 0;
    while (sys_io_setup(events, &ctx) < 0) {
        if (errno != EAGAIN || n_idle == 0) /* EAGAIN: over aio-max-nr; free the idle ones */
            return errno;
        sys_io_destroy(idle[--n_idle].ctx);
    }
    q->ctx = ctx;
    q->events = events;
    q->pid = self;
    return 0;
}

/* Wait for everything in flight and forget it (carried operations are not counted);
 * without the GIL. A failed wait destroys the context, which waits for them instead. */
static void
queue_drain(Queue *q)
{
    queue_forget_if_forked(q);
    while (q->inflight > 0) {
        long got = sys_io_getevents(q->ctx, 1, q->inflight, q->reaped);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            sys_io_destroy(q->ctx); /* waits for what is in flight: its memory is the slot's */
            q->ctx = 0;
            queue_reset(q);
            return;
        }
        for (long e = 0; e < got; e++) {
            Py_ssize_t pos = (Py_ssize_t)q->reaped[e].data;
            Flight *f = &q->flights[pos];
            if (f->window >= 0)
                q->busy[f->window]--;
            f->live = 0;
            q->free_pos[q->n_free++] = pos;
            q->inflight--;
        }
    }
    q->n_carried = q->n_carried_done = 0;
}

/* Before another kind of call uses the slot's memory: what file_aio carried is waited
 * for and forgotten (without the GIL). */
static inline void
queue_settle(Queue *q)
{
    if (q->inflight || q->n_carried)
        queue_drain(q);
}

/* Drained, and its context given back for another slot (or destroyed); its memory freed.
 * With the GIL held: the drain releases it. */
static void
queue_close(Queue *q)
{
    if (q->flights == NULL)
        return;
    if (q->inflight) {
        Py_BEGIN_ALLOW_THREADS
        queue_drain(q);
        Py_END_ALLOW_THREADS
    }
    queue_forget_if_forked(q);
    if (q->ctx && !idle_park(q->ctx, q->events)) {
        aio_context_t ctx = q->ctx;
        Py_BEGIN_ALLOW_THREADS
        sys_io_destroy(ctx);
        Py_END_ALLOW_THREADS
    }
    queue_free(q);
}

/* -- the slot: its memory and buffer state, kept from run to run (SlotBuffer.state) ---- */

/* One slot's state: its read memory (``depth`` areas of ``read_area`` bytes) and write
 * pool, both held as buffers from construction to close(); the pool's geometry; its
 * position (next window, next stamp); and the SFC64 state of --blockvarpct. The loops
 * advance it in place, and the Python engine reads and advances the same fields as
 * attributes, so the two engines can take turns on one slot.
 *
 * An extension type rather than a numpy array of these numbers: it holds the memory's
 * buffers for the slot's life (none to acquire per call), refuses a second call on the
 * slot while one runs without the GIL, and its close() and dealloc can undo C resources
 * before the memory goes. That is where the slot's Linux AIO queue lives (Queue), with
 * the operations a budget carries over from one file_aio run to the next: close() and
 * dealloc wait for them before they release the memory the kernel reads into or writes
 * from. */
typedef struct {
    PyObject_HEAD
    Py_buffer read;          /* the read memory (.obj NULL once closed) */
    Py_buffer pool;          /* the write pool (.obj NULL: the slot only reads) */
    Py_ssize_t read_area;    /* bytes from one read area's start to the next */
    Py_ssize_t depth;        /* read areas */
    Py_ssize_t window_words; /* 64-bit words from one pool window's start to the next */
    Py_ssize_t windows;
    Py_ssize_t stamps; /* stamps per block, STAMP_SPACING apart */
    unsigned long long next_window;
    unsigned long long next_stamp;
    uint64_t sfc[4]; /* numpy SFC64's state words */
    int busy;        /* a call is using the slot (its memory, without the GIL) */
    Queue q;         /* file_aio's, made on its first call */
} SlotObject;

static PyTypeObject SlotType;

/* The checks the pool must pass for blocks of up to ``length`` bytes from its next window
 * (its geometry is checked once, when the slot is made; the position is settable). */
static int
pool_check(const SlotObject *s, Py_ssize_t length)
{
    if (s->pool.obj == NULL) {
        PyErr_SetString(PyExc_ValueError, "write pool: the slot has none");
        return -1;
    }
    Py_ssize_t last = (s->windows - 1) * s->window_words * 8;
    Py_ssize_t stamped = (s->stamps - 1) * STAMP_SPACING + 8;
    Py_ssize_t reach = length > stamped ? length : stamped;
    if (reach > s->pool.len || last > s->pool.len - reach ||
        s->next_window >= (unsigned long long)s->windows) {
        PyErr_Format(PyExc_ValueError,
                     "write pool: %zd windows of %zd bytes (next %llu) exceed its %zd bytes",
                     s->windows, reach, s->next_window, s->pool.len);
        return -1;
    }
    return 0;
}

/* An SFC64 state: ``value``, a sequence of four 64-bit words (numpy's too), into ``words``;
 * else -1 with ValueError (a word out of range too), or TypeError (not a sequence). */
static int
sfc_parse(PyObject *value, uint64_t words[4], const char *wrong)
{
    PyObject *seq = PySequence_Fast(value, wrong);
    if (seq == NULL)
        return -1;
    int ok = PySequence_Fast_GET_SIZE(seq) == 4;
    for (Py_ssize_t k = 0; ok && k < 4; k++) {
        PyObject *word = PyNumber_Index(PySequence_Fast_GET_ITEM(seq, k));
        words[k] = word ? PyLong_AsUnsignedLongLong(word) : 0;
        ok = word != NULL && !PyErr_Occurred();
        Py_XDECREF(word);
    }
    Py_DECREF(seq);
    if (!ok) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, wrong);
        }
        return -1;
    }
    return 0;
}

static PyObject *
sfc_tuple(const uint64_t s[4])
{
    return Py_BuildValue("(KKKK)", (unsigned long long)s[0], (unsigned long long)s[1],
                         (unsigned long long)s[2], (unsigned long long)s[3]);
}

static int
sfc_set(SlotObject *s, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "sfc: cannot be deleted");
        return -1;
    }
    return sfc_parse(value, s->sfc, "sfc: four 64-bit words");
}

static PyObject *
sfc_get(SlotObject *s, void *closure)
{
    return sfc_tuple(s->sfc);
}

static PyObject *
closed_get(SlotObject *s, void *closure)
{
    return PyBool_FromLong(s->read.obj == NULL);
}

static void
slot_release(SlotObject *s)
{
    if (s->read.obj)
        PyBuffer_Release(&s->read);
    if (s->pool.obj)
        PyBuffer_Release(&s->pool);
}

static PyObject *
slot_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"read_mem", "read_area", "depth",  "pool", "window_words",
                             "windows",  "stamps",    "next_stamp", "sfc",  NULL};
    PyObject *read_o, *pool_o = Py_None, *sfc_o = Py_None;
    Py_ssize_t read_area, depth, window_words = 0, windows = 0, stamps = 1;
    unsigned long long next_stamp = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Onn|$OnnnKO:Slot", kwlist, &read_o,
                                     &read_area, &depth, &pool_o, &window_words, &windows,
                                     &stamps, &next_stamp, &sfc_o))
        return NULL;
    SlotObject *s = (SlotObject *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->read_area = read_area;
    s->depth = depth;
    s->window_words = window_words;
    s->windows = windows;
    s->stamps = stamps;
    s->next_stamp = next_stamp;
    if ((sfc_o != Py_None && sfc_set(s, sfc_o, NULL) < 0) ||
        PyObject_GetBuffer(read_o, &s->read, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0 ||
        (pool_o != Py_None &&
         PyObject_GetBuffer(pool_o, &s->pool, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0))
        goto fail;
    if (depth < 1 || read_area < 0 || read_area > s->read.len / depth) {
        PyErr_SetString(PyExc_ValueError, "read_mem: shorter than depth areas of read_area bytes");
        goto fail;
    }
    if (s->pool.obj &&
        (windows < 1 || stamps < 1 || window_words < 0 ||
         window_words > PY_SSIZE_T_MAX / 8 / windows || stamps > PY_SSIZE_T_MAX / STAMP_SPACING)) {
        PyErr_SetString(PyExc_ValueError, "write pool: malformed");
        goto fail;
    }
    if (s->pool.obj && pool_check(s, 0) < 0)
        goto fail;
    return (PyObject *)s;
fail:
    Py_DECREF(s);
    return NULL;
}

static void
slot_dealloc(SlotObject *s)
{
    queue_close(&s->q); /* (before the memory goes: what is in flight uses it) */
    slot_release(s);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *
slot_close(SlotObject *s, PyObject *unused)
{
    if (s->busy) {
        PyErr_SetString(PyExc_BufferError, "slot: a call is using it");
        return NULL;
    }
    s->busy = 1; /* (the drain releases the GIL) */
    queue_close(&s->q);
    s->busy = 0;
    slot_release(s);
    Py_RETURN_NONE;
}

/* A call takes the slot for itself: open, and not in use by another call. */
static int
slot_enter(SlotObject *s)
{
    if (s->read.obj == NULL || s->busy) {
        PyErr_SetString(PyExc_ValueError, s->busy ? "slot: another call is using it"
                                                  : "slot: closed");
        return -1;
    }
    s->busy = 1;
    return 0;
}

static PyObject *
slot_settle(SlotObject *s, PyObject *unused)
{
    if (s->read.obj == NULL)
        Py_RETURN_NONE; /* (closed: nothing is in flight) */
    if (slot_enter(s) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    queue_settle(&s->q);
    Py_END_ALLOW_THREADS
    s->busy = 0;
    Py_RETURN_NONE;
}

static PyMemberDef slot_members[] = {
    {"read_area", T_PYSSIZET, offsetof(SlotObject, read_area), READONLY,
     "bytes from one read area's start to the next"},
    {"depth", T_PYSSIZET, offsetof(SlotObject, depth), READONLY, "read areas"},
    {"window_words", T_PYSSIZET, offsetof(SlotObject, window_words), READONLY,
     "64-bit words from one pool window's start to the next"},
    {"windows", T_PYSSIZET, offsetof(SlotObject, windows), READONLY, "pool windows"},
    {"stamps", T_PYSSIZET, offsetof(SlotObject, stamps), READONLY, "stamps per block"},
    {"next_window", T_ULONGLONG, offsetof(SlotObject, next_window), 0,
     "the pool window the next stamped write takes"},
    {"next_stamp", T_ULONGLONG, offsetof(SlotObject, next_stamp), 0,
     "the stamp of the next stamped write's first 4 KiB"},
    {"carried", T_PYSSIZET, offsetof(SlotObject, q.n_carried), READONLY,
     "file_aio: operations the last call left to the next (in flight or reaped)"},
    {"in_flight", T_PYSSIZET, offsetof(SlotObject, q.inflight), READONLY,
     "file_aio: operations in flight between calls (the carried ones not reaped yet)"},
    {"synchronous", T_INT, offsetof(SlotObject, q.synchronous), READONLY,
     "file_aio at depth 1: the device completed its operations within io_submit (a pread\n"
     "does the same in one call)"},
    {NULL},
};

static PyGetSetDef slot_getset[] = {
    {"sfc", (getter)sfc_get, (setter)sfc_set,
     "--blockvarpct: the SFC64 generator's state (numpy's state['state']['state'])", NULL},
    {"closed", (getter)closed_get, NULL, "whether close() released the memory", NULL},
    {NULL},
};

static PyMethodDef slot_methods[] = {
    {"settle", (PyCFunction)slot_settle, METH_NOARGS,
     "settle()\n\nWait for the operations file_aio carried and forget them, before another\n"
     "engine uses the slot's memory."},
    {"close", (PyCFunction)slot_close, METH_NOARGS,
     "close()\n\nWait for the operations file_aio carried, then release the slot's memory\n"
     "(BufferError while a call is using it)."},
    {NULL},
};

PyDoc_STRVAR(slot_doc,
"Slot(read_mem, read_area, depth, *, pool=None, window_words=0, windows=0, stamps=1,\n"
"     next_stamp=0, sfc=None)\n\n"
"A slot's memory and buffer state, advanced in place by the calls given it.");

static PyTypeObject SlotType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aiobench.engines._native.Slot",
    .tp_basicsize = sizeof(SlotObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = slot_doc,
    .tp_new = slot_new,
    .tp_dealloc = (destructor)slot_dealloc,
    .tp_members = slot_members,
    .tp_getset = slot_getset,
    .tp_methods = slot_methods,
};

/* -- the write pool: stamped windows (SlotBuffer.next_block) -------------------------- */

/* A run's copy of the slot's pool position: the loops keep it in locals (their stores into
 * the pool could alias the slot), pool_keep writes it back. */
typedef struct {
    uint8_t *base;
    Py_ssize_t window_bytes; /* from one window's start to the next */
    Py_ssize_t windows;
    Py_ssize_t stamps; /* stamps per block, STAMP_SPACING apart */
    uint64_t window;   /* the next window */
    uint64_t stamp;    /* the next stamp */
} Pool;

/* The slot's pool for blocks of up to ``length`` bytes (pool_check), or -1. */
static int
pool_take(Pool *p, const SlotObject *s, Py_ssize_t length)
{
    if (pool_check(s, length) < 0)
        return -1;
    p->base = s->pool.buf;
    p->window_bytes = s->window_words * 8;
    p->windows = s->windows;
    p->stamps = s->stamps;
    p->window = s->next_window;
    p->stamp = s->next_stamp;
    return 0;
}

/* The next window with its stamps made unique; advances as SlotBuffer.next_block. */
static inline uint8_t *
pool_next(Pool *p)
{
    uint8_t *at = p->base + p->window * p->window_bytes;
    for (Py_ssize_t k = 0; k < p->stamps; k++)
        store64(at + k * STAMP_SPACING, p->stamp + (uint64_t)k);
    p->stamp += (uint64_t)p->stamps; /* modulo 2^64, as the Python mask */
    p->window = p->window + 1 < (uint64_t)p->windows ? p->window + 1 : 0;
    return at;
}

static void
pool_keep(SlotObject *s, const Pool *p)
{
    s->next_window = p->window;
    s->next_stamp = p->stamp;
}

/* -- the run spec: what one call runs, and what it ended with ------------------------- */

/* One type for every entry point, each reading the fields it needs. The numbers are kept
 * as C values (a call parses nothing), the arrays as objects whose buffers a call takes.
 * aiobench/engines/native.py makes a spec once per phase and slot (file mode: only the
 * operations, budget and output arrays change from run to run) or once per job (dir
 * mode) and sets the fields that change before each call. */
typedef struct {
    PyObject_HEAD
    PyObject *key; /* the caller's: what the spec was made for */
    PyObject *fds, *offsets, *starts, *ends, *intended, *gate, *leaves, *io_starts, *io_ends,
        *stop;
    int fd, dfd, op, flags, mode, mix_pct, err;
    char reading, verify, verify_direct, tolerate, carry, follows, poll, pairs, read_inline,
        stat_inline;
    Py_ssize_t length, depth, var_words, size, block, start, first, n, n_io, done, index;
    long long mix_base, first_seq, schedule_ns, until_ns, deadline_ns;
    unsigned long long salt, a, b, c;
    double ns_per_op;
} SpecObject;

static PyTypeObject SpecType;

#define SPEC_OBJECTS(X)                                                                     \
    X(key) X(fds) X(offsets) X(starts) X(ends) X(intended) X(gate) X(leaves) X(io_starts)  \
    X(io_ends) X(stop)

static PyObject *
spec_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    SpecObject *sp = (SpecObject *)type->tp_alloc(type, 0);
    if (sp == NULL)
        return NULL;
    /* The defaults that are not 0: no fd, no --rwmixpct, no --blockvarpct, no budget. */
    sp->fd = sp->dfd = -1;
    sp->mix_pct = -1;
    sp->var_words = -1;
    sp->depth = 1;
    sp->until_ns = sp->deadline_ns = LLONG_MAX;
    return (PyObject *)sp;
}

/* Spec(**fields): each keyword sets the field of its name. */
static int
spec_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "Spec() takes keyword arguments only");
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *name, *value;
    while (kwargs && PyDict_Next(kwargs, &pos, &name, &value))
        if (PyObject_SetAttr(self, name, value) < 0)
            return -1;
    return 0;
}

static int
spec_traverse(SpecObject *sp, visitproc visit, void *arg)
{
#define VISIT(field) Py_VISIT(sp->field);
    SPEC_OBJECTS(VISIT)
#undef VISIT
    return 0;
}

static int
spec_clear(SpecObject *sp)
{
#define CLEAR(field) Py_CLEAR(sp->field);
    SPEC_OBJECTS(CLEAR)
#undef CLEAR
    return 0;
}

static void
spec_dealloc(SpecObject *sp)
{
    PyObject_GC_UnTrack(sp);
    spec_clear(sp);
    Py_TYPE(sp)->tp_free((PyObject *)sp);
}

#define SPEC_FIELD(name, type, flags, doc) {#name, type, offsetof(SpecObject, name), flags, doc}

static PyMemberDef spec_members[] = {
    SPEC_FIELD(key, T_OBJECT, 0, "the caller's: what the spec was made for"),
    /* file mode */
    SPEC_FIELD(fd, T_INT, 0, "the fd of every operation (when fds is None)"),
    SPEC_FIELD(fds, T_OBJECT, 0, "int32 array: an fd per operation, or None"),
    SPEC_FIELD(offsets, T_OBJECT, 0, "int64 array: each operation's offset"),
    SPEC_FIELD(length, T_PYSSIZET, 0, "bytes per operation"),
    SPEC_FIELD(reading, T_BOOL, 0, "reads (else writes), unless mix_pct says"),
    SPEC_FIELD(mix_pct, T_INT, 0, "--rwmixpct: operation i reads if (mix_base + i) % 100 < it; -1: none"),
    SPEC_FIELD(mix_base, T_LONGLONG, 0, "--rwmixpct: the thread's rank + first_seq"),
    SPEC_FIELD(ns_per_op, T_DOUBLE, 0, "pacing: ns from one due start to the next; 0: none"),
    SPEC_FIELD(schedule_ns, T_LONGLONG, 0, "pacing: when the thread's operation 0 was due"),
    SPEC_FIELD(first_seq, T_LONGLONG, 0, "pacing: the thread's count of operations before"),
    SPEC_FIELD(verify, T_BOOL, 0, "--verify: write the pattern, check what is read"),
    SPEC_FIELD(salt, T_ULONGLONG, 0, "--verify: the pattern's salt"),
    SPEC_FIELD(verify_direct, T_BOOL, 0, "--verifydirect: read each write back and check it"),
    SPEC_FIELD(read_inline, T_BOOL, 0, "--readinline: read each write back, timed with it (file_run, entries_files)"),
    SPEC_FIELD(var_words, T_PYSSIZET, 0, "--blockvarpct: words refilled per write; -1: none"),
    SPEC_FIELD(depth, T_PYSSIZET, 0, "file_aio: operations in flight at most"),
    SPEC_FIELD(carry, T_BOOL, 0, "file_aio: until_ns is a run's budget (not the phase's end): past it, keep the queue full and leave what is in flight to the slot's next call"),
    SPEC_FIELD(follows, T_BOOL, 0, "file_aio, with carry: the slot has operations after this run: near its end, leave its last ones in flight to the next call too"),
    SPEC_FIELD(poll, T_BOOL, 0, "file_aio, --poll: wait for completions on the CPU (the ring), not asleep"),
    SPEC_FIELD(pairs, T_BOOL, 0, "file_aio: the slot has a core to spare: submit two operations per io_submit, not a batch the kernel plugs (unless the device completes inside io_submit)"),
    SPEC_FIELD(intended, T_OBJECT, 0, "pacing: int64 array, each operation's due start"),
    SPEC_FIELD(gate, T_OBJECT, 0, "a first run: the start gate's int64 word; else None"),
    /* dir mode */
    SPEC_FIELD(op, T_INT, 0, "entries_meta: the call (OP_*)"),
    SPEC_FIELD(dfd, T_INT, 0, "the entries' parent dir"),
    SPEC_FIELD(leaves, T_OBJECT, 0, "the entries' names (str)"),
    SPEC_FIELD(first, T_PYSSIZET, 0, "in: the first leaf to do; out: where the call stopped"),
    SPEC_FIELD(n, T_PYSSIZET, 0, "in and out: entries recorded in starts/ends"),
    SPEC_FIELD(tolerate, T_BOOL, 0, "--nodelerr: a missing entry counts as done"),
    SPEC_FIELD(flags, T_INT, 0, "open flags"),
    SPEC_FIELD(mode, T_INT, 0, "mode of what is made"),
    SPEC_FIELD(size, T_PYSSIZET, 0, "entries_files: bytes per file"),
    SPEC_FIELD(block, T_PYSSIZET, 0, "entries_files: bytes per block"),
    SPEC_FIELD(start, T_PYSSIZET, 0, "entries_files: the file offset of each file's first block (0: whole files)"),
    SPEC_FIELD(io_starts, T_OBJECT, 0, "entries_files: int64 array, each block's start"),
    SPEC_FIELD(io_ends, T_OBJECT, 0, "entries_files: int64 array, each block's end"),
    SPEC_FIELD(n_io, T_PYSSIZET, 0, "in and out: blocks recorded in io_starts/io_ends"),
    SPEC_FIELD(deadline_ns, T_LONGLONG, 0, "entries_files: a file's blocks stop past it"),
    SPEC_FIELD(stop, T_OBJECT, 0, "file_run, entries_files: StopEvent.flag, or None"),
    SPEC_FIELD(stat_inline, T_BOOL, 0, "entries_files, --statinline: fstat each file after its open"),
    /* both */
    SPEC_FIELD(until_ns, T_LONGLONG, 0, "the budget: nothing more starts after a unit ends past it"),
    SPEC_FIELD(starts, T_OBJECT, 0, "int64 array: each unit's start"),
    SPEC_FIELD(ends, T_OBJECT, 0, "int64 array: each unit's end"),
    /* what the call ended with */
    SPEC_FIELD(done, T_PYSSIZET, READONLY, "file mode: operations done"),
    SPEC_FIELD(index, T_PYSSIZET, READONLY, "file mode: the operation that failed"),
    SPEC_FIELD(err, T_INT, READONLY, "the errno of a failed call"),
    SPEC_FIELD(a, T_ULONGLONG, READONLY, "short: bytes moved; mismatch: its offset"),
    SPEC_FIELD(b, T_ULONGLONG, READONLY, "short: bytes asked; mismatch: the expected word"),
    SPEC_FIELD(c, T_ULONGLONG, READONLY, "mismatch: the word found; dir mode: the block's offset"),
    {NULL},
};

PyDoc_STRVAR(spec_doc,
"Spec(**fields)\n\nWhat one call of file_run, file_aio, entries_meta or entries_files runs,\n"
"and what it ended with (done, index, err, a, b, c; n, n_io and first in dir mode).");

static PyTypeObject SpecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aiobench.engines._native.Spec",
    .tp_basicsize = sizeof(SpecObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = spec_doc,
    .tp_new = spec_new,
    .tp_init = spec_init,
    .tp_dealloc = (destructor)spec_dealloc,
    .tp_traverse = (traverseproc)spec_traverse,
    .tp_clear = (inquiry)spec_clear,
    .tp_members = spec_members,
};

/* The (slot, spec) of a call, the slot taken for the call (slot_enter). */
static int
call_args(const char *name, PyObject *const *args, Py_ssize_t nargs, SlotObject **slot,
          SpecObject **spec)
{
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &SlotType) ||
        !PyObject_TypeCheck(args[1], &SpecType)) {
        PyErr_Format(PyExc_TypeError, "%s(slot, spec): a Slot and a Spec", name);
        return -1;
    }
    *slot = (SlotObject *)args[0];
    *spec = (SpecObject *)args[1];
    return slot_enter(*slot);
}

/* -- --verify: the pattern and its check (aiobench/engines/verify.py) ------------------------- */

/* The pattern's byte at file offset ``pos``: the little-endian word at pos & ~7 holds
 * (pos & ~7) + salt. */
static inline uint8_t
pattern_byte(uint64_t pos, uint64_t salt)
{
    return (uint8_t)(((pos & ~(uint64_t)7) + salt) >> (8 * (pos & 7)));
}

static void
fill_pattern(uint8_t *buf, uint64_t off, size_t len, uint64_t salt)
{
    size_t i = 0;
    for (; i < len && ((off + i) & 7); i++)
        buf[i] = pattern_byte(off + i, salt);
    for (; i + 8 <= len; i += 8) {
        uint64_t word = htole64(off + i + salt);
        memcpy(buf + i, &word, 8);
    }
    for (; i < len; i++)
        buf[i] = pattern_byte(off + i, salt);
}

/* 0 when ``buf`` holds the pattern; else 1 and the first wrong byte's offset, the word
 * the pattern has around it and the word found there (bytes of it outside the block
 * taken as expected), as verify.check. */
static int
check_pattern(const uint8_t *buf, uint64_t off, size_t len, uint64_t salt, uint64_t *bad,
              uint64_t *expected, uint64_t *found)
{
    size_t i = 0;
    for (; i < len && ((off + i) & 7); i++)
        if (buf[i] != pattern_byte(off + i, salt))
            goto mismatch;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        memcpy(&word, buf + i, 8);
        uint64_t diff = le64toh(word) ^ (off + i + salt);
        if (diff) {
            i += (size_t)__builtin_ctzll(diff) / 8;
            goto mismatch;
        }
    }
    for (; i < len; i++)
        if (buf[i] != pattern_byte(off + i, salt))
            goto mismatch;
    return 0;
mismatch:;
    uint64_t at = off + i, word_at = at & ~(uint64_t)7, want = word_at + salt, got = 0;
    for (unsigned k = 0; k < 8; k++) {
        uint64_t pos = word_at + k; /* inside the block: off <= pos < off + len */
        uint64_t byte = pos >= off && pos - off < len ? buf[pos - off] : (want >> (8 * k)) & 0xff;
        got |= byte << (8 * k);
    }
    *bad = at;
    *expected = want;
    *found = got;
    return 1;
}

/* -- SFC64 (numpy's): the write pools' data; --blockvarpct's refill continues it ------- */

static inline uint64_t
sfc64_next(uint64_t *s)
{
    const uint64_t tmp = s[0] + s[1] + s[3]++;
    s[0] = s[1] ^ (s[1] >> 11);
    s[1] = s[2] + (s[2] << 3);
    s[2] = ((s[2] << 24) | (s[2] >> 40)) + tmp;
    return tmp;
}

PyDoc_STRVAR(sfc64_fill_doc,
"sfc64_fill(buffer, state) -> state\n\n"
"Fill the writable buffer (a multiple of 8 bytes) with SFC64's raw 64-bit words from\n"
"state (four words), in native order: numpy's SFC64.random_raw from that state. The\n"
"state after them.");

/* A phase's write pools, before its clock (aiobench.engines.buffers.PoolSource): filled in
 * place, without numpy, and without the GIL (a pool may be hundreds of MiB). */
static PyObject *
sfc64_fill(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *state;
    uint64_t s[4];
    if (!PyArg_ParseTuple(args, "w*O:sfc64_fill", &view, &state))
        return NULL;
    if (view.len % 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "sfc64_fill: a buffer of whole 64-bit words");
        return NULL;
    }
    if (sfc_parse(state, s, "sfc64_fill: a state of four 64-bit words") < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    uint8_t *at = view.buf;
    Py_ssize_t words = view.len / 8;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t w = 0; w < words; w++)
        store64(at + 8 * w, sfc64_next(s));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return sfc_tuple(s);
}

/* -- file mode --------------------------------------------------------------------------- */

PyDoc_STRVAR(file_run_doc,
"file_run(slot, spec) -> status\n\n"
"One run of file-mode operations, composed as the Python engine's _composed loop: spec's\n"
"fd/fds, offsets, length, reading, mix_pct/mix_base, ns_per_op/schedule_ns/first_seq,\n"
"verify/salt/verify_direct, read_inline, var_words, until_ns, gate, stop (StopEvent.flag,\n"
"or None: a run ends after the operation in progress once it is set); starts, ends and\n"
"intended filled.\n"
"Sets spec.done, and for a failure spec.index, err, a, b, c.");

static PyObject *
file_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    SlotObject *slot;
    SpecObject *sp;
    if (call_args("file_run", args, nargs, &slot, &sp) < 0)
        return NULL;
    Views v = {.count = 0};
    int32_t *fds;
    int64_t *offsets, *starts, *ends, *dues, *gate;
    uint8_t *stop_mem;
    Py_ssize_t n_fds, n, n_starts, n_ends, n_dues, n_gate, n_stop;
    if (take(&v, sp->fds, 0, 4, "fds", (void **)&fds, &n_fds) ||
        take(&v, sp->offsets, 0, 8, "offsets", (void **)&offsets, &n) ||
        take(&v, sp->starts, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, sp->ends, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, sp->intended, 1, 8, "intended", (void **)&dues, &n_dues) ||
        take(&v, sp->gate, 1, 8, "gate", (void **)&gate, &n_gate) ||
        take(&v, sp->stop, 0, 1, "stop", (void **)&stop_mem, &n_stop))
        goto fail;
    volatile const uint8_t *stop = n_stop ? stop_mem : NULL; /* StopEvent.flag */
    const int fd0 = sp->fd, reading = sp->reading, mix_pct = sp->mix_pct, verify = sp->verify,
              verify_direct = sp->verify_direct, read_inline = sp->read_inline;
    const long long mix_base = sp->mix_base, schedule_ns = sp->schedule_ns,
                    first_seq = sp->first_seq;
    long long until_ns = sp->until_ns;
    const uint64_t salt = sp->salt;
    const double ns_per_op = sp->ns_per_op;
    const Py_ssize_t length = sp->length, var_words = sp->var_words;
    uint8_t *rmem = slot->read.buf, *pool_mem = slot->pool.buf;
    Py_ssize_t pool_len = slot->pool.obj ? slot->pool.len : 0;
    int pacing = ns_per_op > 0;
    int may_write = !reading || mix_pct >= 0;
    const char *wrong = NULL;
    if (length < 0)
        wrong = "length: negative";
    else if (n_fds != 0 && n_fds != n)
        wrong = "fds: one per operation, or none";
    else if (n_starts < n || n_ends < n || (pacing && n_dues < n))
        wrong = "starts/ends/intended: shorter than the run";
    else if (slot->read_area < length)
        wrong = "read_mem: shorter than a block";
    else if (n_gate == 1)
        wrong = "gate: state and time limit (int64), or None";
    else if (var_words >= 0 && may_write && !verify &&
             (pool_mem == NULL || pool_len < length || var_words > pool_len / 8))
        wrong = "blockvar: the block or its refilled words do not fit the pool";
    if (wrong) {
        PyErr_SetString(PyExc_ValueError, wrong);
        goto fail;
    }
    Pool pool = {0};
    int stamped = may_write && !verify && var_words < 0;
    if (stamped && pool_take(&pool, slot, length) < 0)
        goto fail;
    uint64_t s[4]; /* the SFC64 state, kept in a local while the loop runs */
    memcpy(s, slot->sfc, sizeof s);

    int status = ST_DONE, err = 0;
    uint64_t a = 0, b = 0, c = 0;
    Py_ssize_t done = 0;
    Py_BEGIN_ALLOW_THREADS
    queue_settle(&slot->q);
    if (n_gate && !gate_pass(gate, until_ns, &until_ns)) /* (gated: until_ns is the budget) */
        n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int fd = n_fds ? fds[i] : fd0;
        int64_t off = offsets[i];
        int read = mix_pct >= 0 ? (mix_base + i) % 100 < mix_pct : reading;
        int64_t due = 0;
        if (pacing) { /* (a) wait for the scheduled start, untimed */
            due = schedule_ns + (int64_t)((double)(first_seq + i) * ns_per_op);
            if (due - now_ns() > 0) {
                if (due > until_ns) {
                    sleep_until(until_ns); /* the rest waits for the slot's next run */
                    status = ST_BUDGET;
                    break;
                }
                sleep_until(due);
            }
        }
        uint8_t *data = rmem; /* (b, c) a read lands in read memory; a write's data */
        if (!read) {
            if (verify)
                fill_pattern(rmem, (uint64_t)off, (size_t)length, salt);
            else if (var_words >= 0) {
                for (Py_ssize_t w = 0; w < var_words; w++)
                    store64(pool_mem + 8 * w, sfc64_next(s));
                data = pool_mem;
            }
            else
                data = pool_next(&pool);
        }
        int64_t start = now_ns();
        ssize_t got = read ? xpread(fd, data, (size_t)length, off)
                           : xpwrite(fd, data, (size_t)length, off);
        int64_t end = now_ns();
        if (got < 0) {
            status = ST_ERRNO;
            err = errno;
            break;
        }
        if (got != length) {
            status = ST_SHORT;
            a = (uint64_t)got;
            b = (uint64_t)length;
            break;
        }
        if (!read && (read_inline || (verify && verify_direct))) { /* (d) read back */
            got = xpread(fd, rmem, (size_t)length, off);
            if (read_inline) /* elbencho's inline read: timed with its write */
                end = now_ns();
            if (got < 0) {
                status = ST_ERRNO;
                err = errno;
                break;
            }
            if (got != length) {
                status = ST_SHORT;
                a = (uint64_t)got;
                b = (uint64_t)length;
                break;
            }
        }
        if (verify && (read || verify_direct) &&
            check_pattern(rmem, (uint64_t)off, (size_t)length, salt, &a, &b, &c)) {
            status = ST_MISMATCH;
            break;
        }
        starts[i] = start;
        ends[i] = end;
        if (pacing)
            dues[i] = due;
        done = i + 1;
        if (end > until_ns || (stop && *stop)) {
            status = i + 1 < n ? ST_BUDGET : ST_DONE;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (stamped)
        pool_keep(slot, &pool);
    if (var_words > 0)
        memcpy(slot->sfc, s, sizeof s);
    slot->busy = 0;
    release(&v);
    sp->done = done;
    sp->index = done; /* (the operations are done in order: the failed one is next) */
    sp->err = err;
    sp->a = a;
    sp->b = b;
    sp->c = c;
    return PyLong_FromLong(status);
fail:
    slot->busy = 0;
    release(&v);
    return NULL;
}

/* -- file mode, depth N: Linux native AIO (the slot's Queue) ---------------------------- */

/* io_submit of a call's free positions, batch[0..count): in one call, or with ``pairs``
 * two per call, unless the device completed the last batch within io_submit
 * (q->completes_inline, updated here). The kernel plugs a call of more than two
 * (AIO_PLUG_THRESHOLD): the device gets none of its operations until all are prepared.
 * On a device that completes elsewhere (a disk, a loop device's worker) and a core to
 * spare, pairs let it start on the first while the rest are submitted (4 KiB direct reads
 * at -t 1 --iodepth 32, loop device, 2-CPU VM: +19-39 % in a plain C loop). Where the CPU
 * is the limit (no core to spare), or the device does the work inside io_submit (zram,
 * brd), one call costs fewer syscalls and nothing else. Returns how many were taken; -1
 * and errno when none was (as io_submit: a later pair's failure ends it short). */
static long
aio_submit(Queue *q, struct iocb **batch, long count, int pairs)
{
    AioRing *ring = pairs && count > 2 ? ring_of(q->ctx) : NULL; /* (only pairs ask) */
    unsigned before = ring ? ring_count(ring) : 0;
    long step = ring && !q->completes_inline ? 2 : count, taken = 0;
    while (taken < count) {
        long c = count - taken < step ? count - taken : step, took;
        do
            took = sys_io_submit(q->ctx, c, batch + taken);
        while (took < 0 && errno == EINTR);
        if (took < 0) {
            if (taken == 0)
                return -1;
            break;
        }
        taken += took;
        if (took < c)
            break;
    }
    if (ring && taken == count)
        q->completes_inline = ring_count(ring) - before >= (unsigned)count;
    return taken;
}

PyDoc_STRVAR(file_aio_doc,
"file_aio(slot, spec) -> status\n\n"
"One run of plain reads or stamped writes with up to spec.depth in flight (io_submit): each\n"
"timed from its submission to the reaping of its completion, recorded in completion order\n"
"(spec's fd/fds, offsets, length, reading, until_ns, carry, gate; starts and ends filled).\n"
"After an operation ends past until_ns (or fails) no operation after the ones submitted so\n"
"far counts in this call: they complete before it returns, done = how many. With\n"
"spec.carry (until_ns is a run's budget, not the phase's end), the queue stays full while\n"
"the call waits for them: the run's next operations are submitted and left in flight to\n"
"the slot's next call (slot.carried), which takes them as its first ones when its\n"
"operations start with them (the run's rest), and else waits for them and forgets them.\n"
"With carry and spec.follows (more operations follow), the run's last ones are carried\n"
"alike once no more than twice spec.depth of them are left to submit (a full queue's\n"
"worth is carried), so that its queue does not drain at the run's end either.\n"
"Without carry, or after a failure, everything in flight is reaped before the call returns.\n"
"Sets spec.done, and for a failure spec.index (the failing operation), err, a, b.");

static PyObject *
file_aio(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    SlotObject *slot;
    SpecObject *sp;
    if (call_args("file_aio", args, nargs, &slot, &sp) < 0)
        return NULL;
    Views v = {.count = 0};
    int32_t *fds;
    int64_t *offsets, *starts, *ends, *gate;
    Py_ssize_t n_fds, n, n_starts, n_ends, n_gate;
    if (take(&v, sp->fds, 0, 4, "fds", (void **)&fds, &n_fds) ||
        take(&v, sp->offsets, 0, 8, "offsets", (void **)&offsets, &n) ||
        take(&v, sp->starts, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, sp->ends, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, sp->gate, 1, 8, "gate", (void **)&gate, &n_gate))
        goto fail;
    const int fd0 = sp->fd, reading = sp->reading, poll = sp->poll, pairs = sp->pairs;
    long long until_ns = sp->until_ns;
    const Py_ssize_t length = sp->length, depth = sp->depth, area_bytes = slot->read_area;
    uint8_t *rmem = slot->read.buf;
    const char *wrong = NULL;
    if (depth < 1 || depth > 65536)
        wrong = "depth: between 1 and 65536";
    else if (length < 0 || length > area_bytes)
        wrong = "length: negative, or more than a read area";
    else if (n_fds != 0 && n_fds != n)
        wrong = "fds: one per operation, or none";
    else if (n_starts < n || n_ends < n)
        wrong = "starts/ends: shorter than the run";
    else if (n_gate == 1)
        wrong = "gate: state and time limit (int64), or None";
    if (wrong) {
        PyErr_SetString(PyExc_ValueError, wrong);
        goto fail;
    }
    if (depth > slot->depth) { /* (each operation in flight needs a read area of its own) */
        PyErr_Format(PyExc_ValueError, "a depth of %zd needs a SlotBuffer made for it", depth);
        goto fail;
    }
    Pool pool = {0};
    if (!reading && pool_take(&pool, slot, length) < 0)
        goto fail;
    Queue *q = &slot->q;
    if (q->flights == NULL &&
        queue_make(q, slot->depth, slot->pool.obj ? slot->windows : 1) < 0)
        goto fail;
    int status = ST_DONE, err = 0, failed = 0, stop = 0;
    if (n > 0 && (err = queue_context(q)))
        status = ST_SETUP;
    uint64_t a = 0, b = 0;
    Py_ssize_t done = 0, index = -1;
    Py_BEGIN_ALLOW_THREADS
    if (n_gate && !gate_pass(gate, until_ns, &until_ns)) /* (gated: until_ns is the budget) */
        n = 0;
    /* Carry only past a run's budget: never past the time limit (a gated run's until_ns
     * is the limit when that comes first). */
    const int carry = sp->carry && !(n_gate && gate[1] > 0 && until_ns >= gate[1]);
    const int carry_tail = carry && sp->follows;
    Flight *flights = q->flights;
    struct iocb **batch = q->batch;
    struct io_event *events = q->reaped;
    Py_ssize_t *free_slots = q->free_pos, *busy = q->busy;
    /* The operations carried from the last call: this run's first ones when they match,
     * in order (else another run, kind or depth came in between: drained, not counted). */
    Py_ssize_t k = q->n_carried, next = 0;
    int match = k > 0 && k <= n && status == ST_DONE && q->carry_length == length &&
                q->carry_reading == reading && q->carry_depth == depth;
    for (Py_ssize_t j = 0; match && j < k; j++)
        match = q->carried[j].fd == (n_fds ? fds[j] : fd0) && q->carried[j].offset == offsets[j];
    if (match) {
        for (Py_ssize_t j = 0; j < q->n_carried_done; j++) {
            starts[done] = q->carried_starts[j];
            ends[done] = q->carried_ends[j];
            done++;
        }
        next = k; /* (their Flights hold their index in this run already) */
    }
    else if (q->inflight || k)
        queue_drain(q);
    q->n_carried = q->n_carried_done = 0;
    if (n > 0 && status == ST_DONE && q->ctx == 0) { /* (a failed drain destroyed it) */
        aio_context_t made = 0;
        if (sys_io_setup((unsigned)q->positions, &made) < 0) {
            status = ST_SETUP;
            err = errno;
        }
        q->ctx = made;
        q->events = (unsigned)q->positions;
        q->pid = getpid();
    }
    if (status != ST_DONE)
        n = 0; /* (the loop below has nothing to do) */
    aio_context_t ctx = q->ctx;
    /* At depth 1, whether the device completes within io_submit (see Queue.synchronous). */
    AioRing *ring1 = ctx && depth == 1 && !poll && !q->synchronous ? ring_of(ctx) : NULL;
    Py_ssize_t streak = 0; /* (this call's: its thread's switches are counted) */
    long streak_switches = 0;
    Py_ssize_t inflight = q->inflight, n_free = q->n_free;
    /* Past the budget, with carry: ops before ``owed_end`` (those submitted then) count in
     * this call and ``owed`` of them are still in flight; the ones after, up to
     * ``limit``, keep the queue full meanwhile and are carried. */
    Py_ssize_t owed_end = n, owed = 0, limit = n, n_reaped_after = 0;
    int waiting = 0;
    while (n > 0) {
        /* Near the run's end, when more operations follow, its last ones are carried as
         * past the budget: else the queue would drain at the end of a run that went
         * faster than its size was made for (as a slot that got more of a CPU it shares
         * does) and stay empty until the next call, after a boundary in Python. Each
         * fill submits at most depth, so the first check that finds no more than twice
         * depth left finds more than depth (unless the run was that short): a full
         * queue's worth is carried. (16 slots of depth 16 on 2 CPUs, zram:
         * 84-89 % of 256 in flight before, 98.5-99 % with.) */
        if (carry_tail && !waiting && !stop && next > 0 && next < n && n - next <= 2 * depth) {
            waiting = 1;
            owed_end = next;
            owed = inflight; /* (all of them before owed_end) */
        }
        /* Fill the free positions; a write waits while its window is still in flight. */
        long count = 0;
        while (!stop && next + count < limit && inflight + count < depth && n_free > 0) {
            Py_ssize_t i = next + count, pos = free_slots[n_free - 1];
            Flight *f = &flights[pos];
            uint8_t *data;
            if (reading) {
                data = rmem + pos * area_bytes;
                f->window = -1;
            }
            else {
                if (busy[pool.window])
                    break;
                f->window = (Py_ssize_t)pool.window;
                f->window_at = pool.window;
                f->stamp_at = pool.stamp;
                busy[f->window]++;
                data = pool_next(&pool);
            }
            n_free--;
            memset(&f->cb, 0, sizeof f->cb);
            f->cb.aio_data = (uint64_t)pos;
            f->cb.aio_lio_opcode = reading ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
            f->cb.aio_fildes = (uint32_t)(n_fds ? fds[i] : fd0);
            f->cb.aio_buf = (uint64_t)(uintptr_t)data;
            f->cb.aio_nbytes = (uint64_t)length;
            f->cb.aio_offset = offsets[i];
            f->op = i;
            batch[count++] = &f->cb;
        }
        if (count) {
            int64_t submitted = now_ns();
            unsigned ready = ring1 ? ring_count(ring1) : 0;
            long took = aio_submit(q, batch, count, pairs);
            if (ring1 && took == 1) { /* (once synchronous, the call submits no more) */
                if (ring_count(ring1) == ready)
                    streak = 0;
                else if (streak++ == 0)
                    streak_switches = thread_switches();
                else if (streak == SYNC_STREAK) {
                    q->synchronous = thread_switches() - streak_switches < SYNC_SWITCHES;
                    stop |= q->synchronous; /* (the run's rest: the next call, with pread) */
                    streak = 0;
                }
            }
            if (took < 0) {
                if (errno != EAGAIN || inflight == 0) { /* EAGAIN: reap first, then again */
                    if (!failed) {
                        failed = 1;
                        status = ST_ERRNO;
                        err = errno;
                        index = next;
                    }
                    stop = 1;
                    waiting = 0; /* (everything in flight is reaped) */
                }
                took = 0;
            }
            for (long j = 0; j < count; j++) {
                Flight *f = &flights[batch[j]->aio_data];
                if (j < took) {
                    f->start = submitted;
                    f->live = 1;
                    continue;
                }
                /* Not taken: its position, window and stamps are given back. */
                if (f->window >= 0) {
                    busy[f->window]--;
                    if (j == took) {
                        pool.window = f->window_at;
                        pool.stamp = f->stamp_at;
                    }
                }
                free_slots[n_free++] = (Py_ssize_t)batch[j]->aio_data;
            }
            inflight += took;
            next += took;
        }
        if (waiting && owed == 0)
            break; /* the run's done ones are: what is in flight is carried */
        if (inflight == 0)
            break; /* all done, or nothing more may start */
        long got = poll ? ring_reap(ctx, events, inflight) : -1;
        if (got < 0) {
            do
                got = sys_io_getevents(ctx, 1, inflight, events);
            while (got < 0 && errno == EINTR);
        }
        if (got < 0) {
            if (!failed) {
                failed = 1;
                status = ST_ERRNO;
                err = errno;
                index = next;
            }
            sys_io_destroy(ctx); /* waits for what is still in flight: its memory is ours */
            q->ctx = 0;
            inflight = 0;
            break;
        }
        int64_t reaped = now_ns();
        for (long e = 0; e < got; e++) {
            Py_ssize_t pos = (Py_ssize_t)events[e].data;
            Flight *f = &flights[pos];
            int64_t res = events[e].res;
            if (f->window >= 0)
                busy[f->window]--;
            f->live = 0;
            free_slots[n_free++] = pos;
            inflight--;
            if (res != length) {
                if (!failed) {
                    failed = 1;
                    index = f->op;
                    if (res < 0) {
                        status = ST_ERRNO;
                        err = (int)-res;
                    }
                    else {
                        status = ST_SHORT;
                        a = (uint64_t)res;
                        b = (uint64_t)length;
                    }
                }
                stop = 1;
                waiting = 0; /* (everything in flight is reaped) */
                continue;
            }
            if (f->op >= owed_end) { /* a carried one, reaped already */
                q->carried_starts[n_reaped_after] = f->start;
                q->carried_ends[n_reaped_after] = reaped;
                n_reaped_after++;
                continue;
            }
            if (waiting)
                owed--;
            starts[done] = f->start;
            ends[done] = reaped;
            done++;
            if (reaped > until_ns && !stop && !waiting) {
                if (carry) {
                    waiting = 1;
                    owed_end = next;
                    owed = inflight; /* (all of them before owed_end; this batch's too) */
                    limit = n - next < q->carry_room ? n : next + q->carry_room;
                }
                else
                    stop = 1;
            }
        }
    }
    if (waiting && !failed && next > owed_end) {
        /* Carried: ops owed_end..next-1 of this run, ops 0.. of the next one. */
        k = next - owed_end;
        for (Py_ssize_t j = 0; j < k; j++) {
            Py_ssize_t i = owed_end + j;
            q->carried[j] = (Carried){n_fds ? fds[i] : fd0, offsets[i]};
        }
        for (Py_ssize_t p = 0; p < q->positions; p++)
            if (flights[p].live)
                flights[p].op -= owed_end;
        q->n_carried = k;
        q->n_carried_done = n_reaped_after;
        q->carry_length = length;
        q->carry_reading = reading;
        q->carry_depth = depth;
    }
    q->inflight = inflight;
    q->n_free = n_free;
    if (q->ctx == 0)
        queue_reset(q); /* (destroyed: nothing is in flight) */
    if (!failed && status == ST_DONE && done < n)
        status = ST_BUDGET;
    Py_END_ALLOW_THREADS
    if (!reading)
        pool_keep(slot, &pool);
    slot->busy = 0;
    release(&v);
    sp->done = done;
    sp->index = index;
    sp->err = err;
    sp->a = a;
    sp->b = b;
    sp->c = 0;
    return PyLong_FromLong(status);
fail:
    slot->busy = 0;
    release(&v);
    return NULL;
}

/* -- dir mode ---------------------------------------------------------------------------- */

/* The leaves as UTF-8, converted before the GIL goes; ``tuple`` keeps the strs alive. */
typedef struct {
    PyObject *tuple;
    const char **names;
    Py_ssize_t count;
} Names;

static int
names_take(Names *nm, PyObject *leaves, Py_ssize_t first)
{
    nm->tuple = PySequence_Tuple(leaves ? leaves : Py_None);
    nm->names = NULL;
    if (nm->tuple == NULL)
        return -1;
    nm->count = PyTuple_GET_SIZE(nm->tuple);
    if (first < 0 || first > nm->count) {
        PyErr_SetString(PyExc_ValueError, "first: outside the leaves");
        return -1;
    }
    nm->names = PyMem_Malloc(sizeof(char *) * (size_t)(nm->count + 1));
    if (nm->names == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = first; k < nm->count; k++) {
        PyObject *item = PyTuple_GET_ITEM(nm->tuple, k);
        if (!PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "leaves: must be str");
            return -1;
        }
        Py_ssize_t size;
        const char *name = PyUnicode_AsUTF8AndSize(item, &size);
        if (name == NULL)
            return -1;
        if ((Py_ssize_t)strlen(name) != size) {
            PyErr_SetString(PyExc_ValueError, "leaves: embedded null byte");
            return -1;
        }
        nm->names[k] = name;
    }
    return 0;
}

static void
names_release(Names *nm)
{
    PyMem_Free(nm->names);
    Py_XDECREF(nm->tuple);
}

PyDoc_STRVAR(entries_meta_doc,
"entries_meta(spec) -> status\n\n"
"One call per leaf from spec.leaves[spec.first] on, relative to spec.dfd: mkdir, unlink,\n"
"rmdir, lstat or open + close (spec.op 0-4; tolerate, flags, mode, until_ns); entry spec.n\n"
"of starts/ends is the first one written. Sets spec.n, spec.first (where it stopped) and\n"
"spec.err. (No slot: a metadata run moves no data, it has no slot memory.)");

static PyObject *
entries_meta(PyObject *module, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &SpecType)) {
        PyErr_SetString(PyExc_TypeError, "entries_meta(spec): a Spec");
        return NULL;
    }
    SpecObject *sp = (SpecObject *)arg;
    const int op = sp->op, dfd = sp->dfd, tolerate = sp->tolerate, flags = sp->flags,
              mode = sp->mode;
    const long long until_ns = sp->until_ns;
    const Py_ssize_t first = sp->first;
    Py_ssize_t n = sp->n;
    if (op < OP_MKDIR || op > OP_OPEN_CLOSE) {
        PyErr_SetString(PyExc_ValueError, "op: not a metadata call");
        return NULL;
    }
    Views v = {.count = 0};
    Names nm = {NULL, NULL, 0};
    int64_t *starts, *ends;
    Py_ssize_t n_starts, n_ends;
    if (take(&v, sp->starts, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, sp->ends, 1, 8, "ends", (void **)&ends, &n_ends) ||
        names_take(&nm, sp->leaves, first))
        goto fail;
    if (n < 0 || n > n_starts || n > n_ends || nm.count - first > n_starts - n ||
        nm.count - first > n_ends - n) {
        PyErr_SetString(PyExc_ValueError, "starts/ends: too short for the leaves");
        goto fail;
    }
    int status = ST_DONE, err = 0;
    Py_ssize_t k = first;
    Py_BEGIN_ALLOW_THREADS
    for (; k < nm.count; k++) {
        const char *name = nm.names[k];
        struct stat st;
        int rc;
        /* unlink would remove a symlink itself, which is no file of the layout: each
         * name is looked at first, untimed (gone already: unlink says so) */
        if (op == OP_UNLINK && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode)) {
            status = ST_SYMLINK;
            break;
        }
        int64_t start = now_ns();
        do {
            switch (op) {
            case OP_MKDIR:
                rc = mkdirat(dfd, name, (mode_t)mode);
                break;
            case OP_UNLINK:
                rc = unlinkat(dfd, name, 0);
                break;
            case OP_RMDIR:
                rc = unlinkat(dfd, name, AT_REMOVEDIR);
                break;
            case OP_LSTAT:
                rc = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
                break;
            default:
                rc = xopenat(dfd, name, flags, (mode_t)mode);
                if (rc >= 0)
                    rc = close(rc); /* (never retried: the fd is gone either way) */
                break;
            }
        } while (rc < 0 && errno == EINTR && op != OP_OPEN_CLOSE);
        if (rc < 0) {
            if (op == OP_MKDIR && errno == EEXIST) {
                starts[n] = start; /* Python looks at it, then records the end */
                status = ST_EXISTS;
                break;
            }
            if (!(tolerate && errno == ENOENT)) { /* --nodelerr: gone already is done */
                status = ST_ERRNO;
                err = errno;
                break;
            }
        }
        int64_t end = now_ns();
        if (op == OP_LSTAT && rc == 0 && S_ISLNK(st.st_mode)) {
            status = ST_SYMLINK; /* lstat did not follow it; not ours to stat */
            break;
        }
        starts[n] = start;
        ends[n] = end;
        n++;
        if (end > until_ns) {
            k++;
            status = ST_BUDGET;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    names_release(&nm);
    release(&v);
    sp->n = n;
    sp->first = k;
    sp->err = err;
    return PyLong_FromLong(status);
fail:
    names_release(&nm);
    release(&v);
    return NULL;
}

PyDoc_STRVAR(entries_files_doc,
"entries_files(slot, spec) -> status\n\n"
"Open + whole-file blocks + close per leaf from spec.leaves[spec.first] on, relative to\n"
"spec.dfd (flags, mode, reading, size, block, until_ns, deadline_ns, stop; stat_inline:\n"
"fstat after the open; read_inline: each block written is read back), entries\n"
"recorded in starts/ends from spec.n on, blocks in io_starts/io_ends from spec.n_io on.\n"
"Sets spec.n, n_io, first (where it stopped), and for a failure err, a, b, c.");

static PyObject *
entries_files(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    SlotObject *slot;
    SpecObject *sp;
    if (call_args("entries_files", args, nargs, &slot, &sp) < 0)
        return NULL;
    const int dfd = sp->dfd, flags = sp->flags, mode = sp->mode, writing = !sp->reading;
    const int stat_inline = sp->stat_inline, read_inline = writing && sp->read_inline;
    const long long until_ns = sp->until_ns, deadline_ns = sp->deadline_ns;
    const Py_ssize_t first = sp->first, size = sp->size, block = sp->block, at = sp->start;
    Py_ssize_t n = sp->n, n_io = sp->n_io;
    uint8_t *rmem = slot->read.buf;
    Views v = {.count = 0};
    Names nm = {NULL, NULL, 0};
    int64_t *starts, *ends, *io_starts, *io_ends;
    uint8_t *stop_mem;
    Py_ssize_t n_starts, n_ends, n_io_starts, n_io_ends, n_stop;
    if (take(&v, sp->starts, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, sp->ends, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, sp->io_starts, 1, 8, "io_starts", (void **)&io_starts, &n_io_starts) ||
        take(&v, sp->io_ends, 1, 8, "io_ends", (void **)&io_ends, &n_io_ends) ||
        take(&v, sp->stop, 0, 1, "stop", (void **)&stop_mem, &n_stop) ||
        names_take(&nm, sp->leaves, first))
        goto fail;
    Py_ssize_t io_cap = n_io_starts < n_io_ends ? n_io_starts : n_io_ends;
    Py_ssize_t blocks = size > 0 && block > 0 ? (size - 1) / block + 1 : 0;
    const char *wrong = NULL;
    if (blocks == 0)
        wrong = "size/block: a file of blocks needs both above 0 (size 0: entries_meta)";
    else if (at < 0)
        wrong = "start: a file offset, not negative";
    else if (n < 0 || n > n_starts || n > n_ends || nm.count - first > n_starts - n ||
             nm.count - first > n_ends - n)
        wrong = "starts/ends: too short for the leaves";
    else if (n_io < 0 || n_io > io_cap || blocks > io_cap)
        wrong = "io_starts/io_ends: cannot hold one file's blocks";
    else if ((!writing || read_inline) && slot->read_area < block)
        wrong = "read_mem: shorter than a block";
    if (wrong) {
        PyErr_SetString(PyExc_ValueError, wrong);
        goto fail;
    }
    Pool pool = {0};
    if (writing && pool_take(&pool, slot, block) < 0)
        goto fail;
    volatile const uint8_t *stop = n_stop ? stop_mem : NULL; /* StopEvent.flag */
    int status = ST_DONE, err = 0;
    uint64_t a = 0, b = 0, c = 0;
    Py_ssize_t k = first;
    Py_BEGIN_ALLOW_THREADS
    queue_settle(&slot->q);
    for (; k < nm.count; k++) {
        if (n_io + blocks > io_cap) {
            status = ST_FULL;
            break;
        }
        int64_t start = now_ns();
        int fd = xopenat(dfd, nm.names[k], flags, (mode_t)mode);
        if (fd < 0) {
            status = ST_ERRNO;
            err = errno;
            break;
        }
        struct stat st;
        if (stat_inline && fstat(fd, &st) < 0) { /* --statinline, in the file's timing */
            status = ST_FSTAT;
            err = errno;
            close(fd);
            break;
        }
        int cut = 0;
        for (Py_ssize_t off = 0; off < size; off += block) {
            Py_ssize_t len = size - off < block ? size - off : block;
            uint8_t *data = writing ? pool_next(&pool) : rmem;
            int64_t io_start = now_ns();
            ssize_t got = writing ? xpwrite(fd, data, (size_t)len, at + off)
                                  : xpread(fd, data, (size_t)len, at + off);
            if (read_inline && got == len) /* the block back, in its timing */
                got = xpread(fd, rmem, (size_t)len, at + off);
            int64_t io_end = now_ns();
            if (got != len) {
                if (got < 0) {
                    status = ST_BLOCK;
                    err = errno;
                }
                else {
                    status = ST_SHORT;
                    a = (uint64_t)got;
                    b = (uint64_t)len;
                }
                c = (uint64_t)(at + off);
                break;
            }
            io_starts[n_io] = io_start;
            io_ends[n_io] = io_end;
            n_io++;
            if (off + len < size && (io_end > deadline_ns || (stop && *stop))) {
                cut = 1;
                break;
            }
        }
        if (status != ST_DONE) {
            close(fd);
            break;
        }
        if (close(fd) < 0) {
            status = ST_ERRNO;
            err = errno;
            break;
        }
        if (cut) {
            status = ST_CUT;
            break;
        }
        int64_t end = now_ns();
        starts[n] = start;
        ends[n] = end;
        n++;
        if (end > until_ns) {
            k++;
            status = ST_BUDGET;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (writing)
        pool_keep(slot, &pool);
    slot->busy = 0;
    names_release(&nm);
    release(&v);
    sp->n = n;
    sp->n_io = n_io;
    sp->first = k;
    sp->err = err;
    sp->a = a;
    sp->b = b;
    sp->c = c;
    return PyLong_FromLong(status);
fail:
    slot->busy = 0;
    names_release(&nm);
    release(&v);
    return NULL;
}

/* -- offsets ------------------------------------------------------------------------- */

PyDoc_STRVAR(fill_steps_doc,
"fill_steps(out, start, step)\n\nFill the int64 buffer out with start, start + step, ...: a\n"
"sequential run's offsets (a range) as the array the calls take, without making a Python\n"
"int per operation (array('q', a_range) costs ~100x as much).");

static PyObject *
fill_steps(PyObject *module, PyObject *args)
{
    PyObject *obj;
    long long start, step;
    if (!PyArg_ParseTuple(args, "OLL:fill_steps", &obj, &start, &step))
        return NULL;
    Views v = {.count = 0};
    int64_t *out;
    Py_ssize_t n;
    if (take(&v, obj, 1, 8, "out", (void **)&out, &n) < 0) {
        release(&v);
        return NULL;
    }
    uint64_t value = (uint64_t)start; /* (unsigned: wraps where int64 would overflow) */
    for (Py_ssize_t i = 0; i < n; i++, value += (uint64_t)step)
        out[i] = (int64_t)value;
    release(&v);
    Py_RETURN_NONE;
}

/* -- the module ------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"file_run", (PyCFunction)(void (*)(void))file_run, METH_FASTCALL, file_run_doc},
    {"file_aio", (PyCFunction)(void (*)(void))file_aio, METH_FASTCALL, file_aio_doc},
    {"entries_meta", entries_meta, METH_O, entries_meta_doc},
    {"entries_files", (PyCFunction)(void (*)(void))entries_files, METH_FASTCALL,
     entries_files_doc},
    {"gate_open", gate_open, METH_VARARGS, gate_open_doc},
    {"sfc64_fill", sfc64_fill, METH_VARARGS, sfc64_fill_doc},
    {"fill_steps", fill_steps, METH_VARARGS, fill_steps_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *m)
{
    static const struct {
        const char *name;
        int value;
    } constants[] = {
        {"DONE", ST_DONE},         {"BUDGET", ST_BUDGET},     {"ERRNO", ST_ERRNO},
        {"SHORT", ST_SHORT},       {"MISMATCH", ST_MISMATCH}, {"EXISTS", ST_EXISTS},
        {"SYMLINK", ST_SYMLINK},   {"CUT", ST_CUT},           {"FULL", ST_FULL},
        {"BLOCK", ST_BLOCK},       {"SETUP", ST_SETUP},       {"FSTAT", ST_FSTAT},       {"OP_MKDIR", OP_MKDIR},    {"OP_UNLINK", OP_UNLINK},
        {"OP_RMDIR", OP_RMDIR},    {"OP_LSTAT", OP_LSTAT},    {"OP_OPEN_CLOSE", OP_OPEN_CLOSE},
        {"STAMP_SPACING", STAMP_SPACING},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0)
            return -1;
    if (PyModule_AddType(m, &SlotType) < 0 || PyModule_AddType(m, &SpecType) < 0)
        return -1;
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aiobench.engines._native",
    .m_doc = "The native engine's hot loops (see aiobench/engines/native.py).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModuleDef_Init(&module);
}
