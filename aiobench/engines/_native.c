/* aiobench.engines._native: the native engine's hot loops, each run of operations in one call.
 *
 * Every loop runs with the GIL released and times each operation with
 * clock_gettime(CLOCK_MONOTONIC), the clock of time.perf_counter_ns on Linux, so these
 * instants mix with Python's. Results go into int64 arrays the caller preallocated; a
 * failure comes back as numbers (status, index, errno, short count, offset, words) that
 * aiobench/engines/native.py words exactly as the Python engine (aiobench/engines/python.py) does. That
 * engine is the reference: every loop here mirrors one of its loops step by step, and the
 * order of untimed steps (stamping, pattern, refill, read back, check) is the same.
 *
 * Only Python's C API and Linux syscalls: native AIO is reached through syscall(2) with
 * <linux/aio_abi.h>, no libaio. Every size and index given is checked before the GIL is
 * released: a wrong call raises ValueError, it never touches memory it was not given.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
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
    ST_SYMLINK = 6,  /* lstat found a symlink, which aiobench never stats */
    ST_CUT = 7,      /* time limit or stop request inside a file: it stays unfinished */
    ST_FULL = 8,     /* the block arrays cannot hold the next file's blocks: grow, call again */
    ST_BLOCK = 9,    /* a block read or write of a dir-mode file failed: err, c = offset */
    ST_SETUP = 10,   /* file_aio: io_setup failed: err (nothing was submitted) */
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

/* A C-contiguous buffer of ``obj`` (None: empty), of items of ``itemsize`` bytes. */
static int
take(Views *v, PyObject *obj, int writable, Py_ssize_t itemsize, const char *what,
     void **ptr, Py_ssize_t *items)
{
    *ptr = NULL;
    *items = 0;
    if (obj == Py_None)
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

/* -- the write pool: stamped windows (SlotBuffer.next_block) -------------------------- */

typedef struct {
    uint8_t *base;
    Py_ssize_t window_bytes; /* from one window's start to the next */
    Py_ssize_t windows;
    Py_ssize_t stamps;  /* stamps per block, STAMP_SPACING apart */
    uint64_t window;    /* the next window */
    uint64_t stamp;     /* the next stamp */
} Pool;

/* The checks SlotBuffer's numbers must pass for blocks of up to ``length`` bytes. */
static int
pool_init(Pool *p, uint8_t *base, Py_ssize_t bytes, Py_ssize_t window_words,
          Py_ssize_t windows, Py_ssize_t stamps, uint64_t *state, Py_ssize_t state_items,
          Py_ssize_t length)
{
    if (base == NULL || state == NULL || state_items < 2 || windows < 1 || stamps < 1 ||
        window_words < 0 || window_words > PY_SSIZE_T_MAX / 8 / windows ||
        stamps > PY_SSIZE_T_MAX / STAMP_SPACING) {
        PyErr_SetString(PyExc_ValueError, "write pool: missing or malformed");
        return -1;
    }
    Py_ssize_t last = (windows - 1) * window_words * 8;
    Py_ssize_t stamped = (stamps - 1) * STAMP_SPACING + 8;
    Py_ssize_t reach = length > stamped ? length : stamped;
    if (reach > bytes || last > bytes - reach || state[0] >= (uint64_t)windows) {
        PyErr_Format(PyExc_ValueError,
                     "write pool: %zd windows of %zd bytes (next %llu) exceed its %zd bytes",
                     windows, reach, (unsigned long long)state[0], bytes);
        return -1;
    }
    p->base = base;
    p->window_bytes = window_words * 8;
    p->windows = windows;
    p->stamps = stamps;
    p->window = state[0];
    p->stamp = state[1];
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
pool_save(const Pool *p, uint64_t *state)
{
    state[0] = p->window;
    state[1] = p->stamp;
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

/* -- --blockvarpct: numpy's SFC64, so the refill continues the slot's generator -------- */

static inline uint64_t
sfc64_next(uint64_t *s)
{
    const uint64_t tmp = s[0] + s[1] + s[3]++;
    s[0] = s[1] ^ (s[1] >> 11);
    s[1] = s[2] + (s[2] << 3);
    s[2] = ((s[2] << 24) | (s[2] >> 40)) + tmp;
    return tmp;
}

/* -- file mode --------------------------------------------------------------------------- */

PyDoc_STRVAR(file_run_doc,
"file_run(fd, fds, offsets, length, reading, mix_pct, mix_base, ns_per_op, schedule_ns,\n"
"         first_seq, verify, salt, verify_direct, var_words, sfc, read_mem, pool,\n"
"         window_words, windows, stamps, pool_state, until_ns, starts, ends, intended)\n"
"-> (status, done, err, a, b, c)\n\n"
"One run of file-mode operations, composed as the Python engine's _composed loop.");

static PyObject *
file_run(PyObject *self, PyObject *args)
{
    int fd0, reading, mix_pct, verify, verify_direct;
    long long mix_base, schedule_ns, first_seq, until_ns;
    unsigned long long salt;
    double ns_per_op;
    Py_ssize_t length, var_words, window_words, windows, stamps;
    PyObject *fds_o, *offsets_o, *sfc_o, *rmem_o, *pool_o, *state_o, *starts_o, *ends_o, *due_o;
    PyObject *gate_o = Py_None;
    if (!PyArg_ParseTuple(args, "iOOnpiLdLLpKpnOOOnnnOLOOO|O:file_run", &fd0, &fds_o,
                          &offsets_o, &length, &reading, &mix_pct, &mix_base, &ns_per_op,
                          &schedule_ns, &first_seq, &verify, &salt, &verify_direct, &var_words,
                          &sfc_o, &rmem_o, &pool_o, &window_words, &windows, &stamps, &state_o,
                          &until_ns, &starts_o, &ends_o, &due_o, &gate_o))
        return NULL;
    Views v = {.count = 0};
    int32_t *fds;
    int64_t *offsets, *starts, *ends, *dues;
    uint64_t *sfc, *state;
    uint8_t *rmem, *pool_mem;
    int64_t *gate;
    Py_ssize_t n_fds, n, n_starts, n_ends, n_dues, n_sfc, n_state, rmem_len, pool_len, n_gate;
    if (take(&v, fds_o, 0, 4, "fds", (void **)&fds, &n_fds) ||
        take(&v, offsets_o, 0, 8, "offsets", (void **)&offsets, &n) ||
        take(&v, sfc_o, 1, 8, "sfc", (void **)&sfc, &n_sfc) ||
        take(&v, rmem_o, 1, 1, "read_mem", (void **)&rmem, &rmem_len) ||
        take(&v, pool_o, 1, 1, "pool", (void **)&pool_mem, &pool_len) ||
        take(&v, state_o, 1, 8, "pool_state", (void **)&state, &n_state) ||
        take(&v, starts_o, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, ends_o, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, due_o, 1, 8, "intended", (void **)&dues, &n_dues) ||
        take(&v, gate_o, 1, 8, "gate", (void **)&gate, &n_gate))
        goto fail;
    int pacing = ns_per_op > 0;
    int may_write = !reading || mix_pct >= 0;
    const char *wrong = NULL;
    if (length < 0)
        wrong = "length: negative";
    else if (n_fds != 0 && n_fds != n)
        wrong = "fds: one per operation, or none";
    else if (n_starts < n || n_ends < n || (pacing && n_dues < n))
        wrong = "starts/ends/intended: shorter than the run";
    else if (rmem_len < length)
        wrong = "read_mem: shorter than a block";
    else if (n_gate == 1)
        wrong = "gate: state and time limit (int64), or None";
    else if (var_words >= 0 && may_write && !verify &&
             (pool_len < length || var_words > pool_len / 8 || (var_words && n_sfc < 4)))
        wrong = "blockvar: the block, its refilled words or the SFC64 state do not fit";
    if (wrong) {
        PyErr_SetString(PyExc_ValueError, wrong);
        goto fail;
    }
    Pool pool = {0};
    int stamped = may_write && !verify && var_words < 0;
    if (stamped &&
        pool_init(&pool, pool_mem, pool_len, window_words, windows, stamps, state, n_state, length))
        goto fail;
    uint64_t s[4] = {0, 0, 0, 0};
    if (var_words > 0 && n_sfc >= 4)
        memcpy(s, sfc, sizeof s);

    int status = ST_DONE, err = 0;
    uint64_t a = 0, b = 0, c = 0;
    Py_ssize_t done = 0;
    Py_BEGIN_ALLOW_THREADS
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
        if (!read && verify && verify_direct) { /* (d) read back, then check */
            got = xpread(fd, rmem, (size_t)length, off);
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
        if (end > until_ns) {
            status = i + 1 < n ? ST_BUDGET : ST_DONE;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (stamped)
        pool_save(&pool, state);
    if (var_words > 0)
        memcpy(sfc, s, sizeof s);
    release(&v);
    return Py_BuildValue("(iniKKK)", status, done, err, (unsigned long long)a,
                         (unsigned long long)b, (unsigned long long)c);
fail:
    release(&v);
    return NULL;
}

/* -- file mode, depth N: Linux native AIO through raw syscalls ---------------------------- */

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

/* Each thread keeps its AIO context from run to run: io_destroy waits for an RCU grace
 * period, ~30 ms here, which per 50 ms run would eat most of the measurement. The context
 * goes with its thread (a pthread key's destructor); a forked child forgets its parent's. */
typedef struct {
    aio_context_t ctx;
    unsigned events;
} AioCache;

static pthread_key_t aio_key;
static pthread_once_t aio_once = PTHREAD_ONCE_INIT;
static int aio_key_error;

static void
aio_cache_free(void *cache)
{
    AioCache *c = cache;
    if (c->ctx)
        sys_io_destroy(c->ctx);
    free(c);
}

static void
aio_forget_after_fork(void)
{
    AioCache *c = pthread_getspecific(aio_key);
    if (c)
        c->ctx = 0, c->events = 0; /* the parent's context: not the child's to use */
}

static void
aio_make_key(void)
{
    aio_key_error = pthread_key_create(&aio_key, aio_cache_free);
    if (!aio_key_error)
        aio_key_error = pthread_atfork(NULL, NULL, aio_forget_after_fork);
}

/* This thread's context for ``events`` in flight (made or enlarged as needed); an errno. */
static int
aio_context(unsigned events, aio_context_t *out)
{
    pthread_once(&aio_once, aio_make_key);
    if (aio_key_error)
        return aio_key_error;
    AioCache *c = pthread_getspecific(aio_key);
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        if (c == NULL)
            return ENOMEM;
        if (pthread_setspecific(aio_key, c)) {
            free(c);
            return ENOMEM;
        }
    }
    if (c->ctx && c->events < events) {
        sys_io_destroy(c->ctx);
        c->ctx = 0;
    }
    if (!c->ctx) {
        aio_context_t ctx = 0;
        if (sys_io_setup(events, &ctx) < 0)
            return errno;
        c->ctx = ctx;
        c->events = events;
    }
    *out = c->ctx;
    return 0;
}

/* After a failed reap: the context may still hold operations; io_destroy waits for them. */
static void
aio_drop_context(void)
{
    AioCache *c = pthread_getspecific(aio_key);
    if (c && c->ctx) {
        sys_io_destroy(c->ctx);
        c->ctx = 0;
    }
}

/* What one in-flight position holds. */
typedef struct {
    struct iocb cb;
    Py_ssize_t op;      /* index of its operation in the run */
    int64_t start;      /* when it was submitted */
    Py_ssize_t window;  /* the pool window it writes from; -1: a read */
    uint64_t window_at; /* the pool's next window and stamp before it took its own */
    uint64_t stamp_at;
} Flight;

PyDoc_STRVAR(file_aio_doc,
"file_aio(fd, fds, offsets, length, reading, depth, read_mem, area_bytes, pool,\n"
"         window_words, windows, stamps, pool_state, until_ns, starts, ends)\n"
"-> (status, done, index, err, a, b)\n\n"
"One run of plain reads or stamped writes with up to depth in flight (io_submit): each\n"
"timed from its submission to the reaping of its completion, recorded in completion order.\n"
"After an operation ends past until_ns (or fails) nothing more is submitted; what is in\n"
"flight is reaped, then the call returns. index: the failing operation.");

static PyObject *
file_aio(PyObject *self, PyObject *args)
{
    int fd0, reading;
    long long until_ns;
    Py_ssize_t length, depth, area_bytes, window_words, windows, stamps;
    PyObject *fds_o, *offsets_o, *rmem_o, *pool_o, *state_o, *starts_o, *ends_o;
    PyObject *gate_o = Py_None;
    if (!PyArg_ParseTuple(args, "iOOnpnOnOnnnOLOO|O:file_aio", &fd0, &fds_o, &offsets_o,
                          &length, &reading, &depth, &rmem_o, &area_bytes, &pool_o,
                          &window_words, &windows, &stamps, &state_o, &until_ns, &starts_o,
                          &ends_o, &gate_o))
        return NULL;
    Views v = {.count = 0};
    int32_t *fds;
    int64_t *offsets, *starts, *ends;
    uint64_t *state;
    uint8_t *rmem, *pool_mem;
    int64_t *gate;
    Py_ssize_t n_fds, n, n_starts, n_ends, n_state, rmem_len, pool_len, n_gate;
    Flight *flights = NULL;
    struct iocb **batch = NULL;
    struct io_event *events = NULL;
    Py_ssize_t *free_slots = NULL, *busy = NULL;
    if (take(&v, fds_o, 0, 4, "fds", (void **)&fds, &n_fds) ||
        take(&v, offsets_o, 0, 8, "offsets", (void **)&offsets, &n) ||
        take(&v, rmem_o, 1, 1, "read_mem", (void **)&rmem, &rmem_len) ||
        take(&v, pool_o, 1, 1, "pool", (void **)&pool_mem, &pool_len) ||
        take(&v, state_o, 1, 8, "pool_state", (void **)&state, &n_state) ||
        take(&v, starts_o, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, ends_o, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, gate_o, 1, 8, "gate", (void **)&gate, &n_gate))
        goto fail;
    const char *wrong = NULL;
    if (depth < 1 || depth > 65536)
        wrong = "depth: between 1 and 65536";
    else if (length < 0 || length > area_bytes)
        wrong = "length: negative, or more than a read area";
    else if (n_fds != 0 && n_fds != n)
        wrong = "fds: one per operation, or none";
    else if (n_starts < n || n_ends < n)
        wrong = "starts/ends: shorter than the run";
    else if (reading && (area_bytes < 0 || area_bytes > rmem_len / depth))
        wrong = "read_mem: shorter than depth areas";
    else if (n_gate == 1)
        wrong = "gate: state and time limit (int64), or None";
    if (wrong) {
        PyErr_SetString(PyExc_ValueError, wrong);
        goto fail;
    }
    Pool pool = {0};
    if (!reading &&
        pool_init(&pool, pool_mem, pool_len, window_words, windows, stamps, state, n_state, length))
        goto fail;
    flights = PyMem_Calloc((size_t)depth, sizeof *flights);
    batch = PyMem_Calloc((size_t)depth, sizeof *batch);
    events = PyMem_Calloc((size_t)depth, sizeof *events);
    free_slots = PyMem_Calloc((size_t)depth, sizeof *free_slots);
    busy = PyMem_Calloc(reading ? 1 : (size_t)windows, sizeof *busy); /* in-flight writes */
    if (!flights || !batch || !events || !free_slots || !busy) {
        PyErr_NoMemory();
        goto fail;
    }
    int status = ST_DONE, err = 0, failed = 0, stop = 0;
    uint64_t a = 0, b = 0;
    Py_ssize_t done = 0, index = -1;
    Py_BEGIN_ALLOW_THREADS
    if (n_gate && !gate_pass(gate, until_ns, &until_ns)) /* (gated: until_ns is the budget) */
        n = 0;
    aio_context_t ctx = 0;
    Py_ssize_t next = 0, inflight = 0, n_free = depth;
    for (Py_ssize_t j = 0; j < depth; j++)
        free_slots[j] = depth - 1 - j;
    if (n > 0 && (err = aio_context((unsigned)depth, &ctx))) {
        status = ST_SETUP;
        n = 0; /* (the loop below has nothing to do) */
    }
    while (n > 0) {
        /* Fill the free positions; a write waits while its window is still in flight. */
        long count = 0;
        while (!stop && next + count < n && n_free > 0) {
            Py_ssize_t i = next + count, slot = free_slots[n_free - 1];
            Flight *f = &flights[slot];
            uint8_t *data;
            if (reading) {
                data = rmem + slot * area_bytes;
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
            f->cb.aio_data = (uint64_t)slot;
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
            long took;
            do
                took = sys_io_submit(ctx, count, batch);
            while (took < 0 && errno == EINTR);
            if (took < 0) {
                if (errno != EAGAIN || inflight == 0) { /* EAGAIN: reap first, then again */
                    if (!failed) {
                        failed = 1;
                        status = ST_ERRNO;
                        err = errno;
                        index = next;
                    }
                    stop = 1;
                }
                took = 0;
            }
            for (long j = 0; j < count; j++) {
                Flight *f = &flights[batch[j]->aio_data];
                if (j < took) {
                    f->start = submitted;
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
        if (inflight == 0)
            break; /* all done, or nothing more may start */
        long got;
        do
            got = sys_io_getevents(ctx, 1, inflight, events);
        while (got < 0 && errno == EINTR);
        if (got < 0) {
            if (!failed) {
                failed = 1;
                status = ST_ERRNO;
                err = errno;
                index = next;
            }
            aio_drop_context(); /* waits for what is still in flight: its memory is ours */
            break;
        }
        int64_t reaped = now_ns();
        for (long e = 0; e < got; e++) {
            Py_ssize_t slot = (Py_ssize_t)events[e].data;
            Flight *f = &flights[slot];
            int64_t res = events[e].res;
            if (f->window >= 0)
                busy[f->window]--;
            free_slots[n_free++] = slot;
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
                continue;
            }
            starts[done] = f->start;
            ends[done] = reaped;
            done++;
            if (reaped > until_ns)
                stop = 1;
        }
    }
    if (!failed && status == ST_DONE && next < n)
        status = ST_BUDGET;
    Py_END_ALLOW_THREADS
    if (!reading)
        pool_save(&pool, state);
    PyMem_Free(flights);
    PyMem_Free(batch);
    PyMem_Free(events);
    PyMem_Free(free_slots);
    PyMem_Free(busy);
    release(&v);
    return Py_BuildValue("(inniKK)", status, done, index, err, (unsigned long long)a,
                         (unsigned long long)b);
fail:
    PyMem_Free(flights);
    PyMem_Free(batch);
    PyMem_Free(events);
    PyMem_Free(free_slots);
    PyMem_Free(busy);
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
    nm->tuple = PySequence_Tuple(leaves);
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
"entries_meta(op, dfd, leaves, first, until_ns, starts, ends, n, tolerate_enoent, flags, mode)\n"
"-> (status, n, index, err)\n\n"
"One call per leaf from leaves[first] on, relative to dfd: mkdir, unlink, rmdir, lstat or\n"
"open + close (op 0-4); entry n of the run's starts/ends is the first one written.");

static PyObject *
entries_meta(PyObject *self, PyObject *args)
{
    int op, dfd, tolerate, flags, mode;
    long long until_ns;
    Py_ssize_t first, n;
    PyObject *leaves, *starts_o, *ends_o;
    if (!PyArg_ParseTuple(args, "iiOnLOOnpii:entries_meta", &op, &dfd, &leaves, &first,
                          &until_ns, &starts_o, &ends_o, &n, &tolerate, &flags, &mode))
        return NULL;
    if (op < OP_MKDIR || op > OP_OPEN_CLOSE) {
        PyErr_SetString(PyExc_ValueError, "op: not a metadata call");
        return NULL;
    }
    Views v = {.count = 0};
    Names nm = {NULL, NULL, 0};
    int64_t *starts, *ends;
    Py_ssize_t n_starts, n_ends;
    if (take(&v, starts_o, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, ends_o, 1, 8, "ends", (void **)&ends, &n_ends) || names_take(&nm, leaves, first))
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
    return Py_BuildValue("(inni)", status, n, k, err);
fail:
    names_release(&nm);
    release(&v);
    return NULL;
}

PyDoc_STRVAR(entries_files_doc,
"entries_files(dfd, leaves, first, until_ns, starts, ends, n, flags, mode, writing, size,\n"
"              block, io_starts, io_ends, n_io, read_mem, pool, window_words, windows,\n"
"              stamps, pool_state, deadline_ns, stop)\n"
"-> (status, n, n_io, index, err, a, b, c)\n\n"
"Open + whole-file blocks + close per leaf from leaves[first] on, relative to dfd.");

static PyObject *
entries_files(PyObject *self, PyObject *args)
{
    int dfd, flags, mode, writing;
    long long until_ns, deadline_ns;
    Py_ssize_t first, n, size, block, n_io, window_words, windows, stamps;
    PyObject *leaves, *starts_o, *ends_o, *io_starts_o, *io_ends_o, *rmem_o, *pool_o;
    PyObject *state_o, *stop_o;
    if (!PyArg_ParseTuple(args, "iOnLOOniipnnOOnOOnnnOLO:entries_files", &dfd, &leaves, &first,
                          &until_ns, &starts_o, &ends_o, &n, &flags, &mode, &writing, &size,
                          &block, &io_starts_o, &io_ends_o, &n_io, &rmem_o, &pool_o,
                          &window_words, &windows, &stamps, &state_o, &deadline_ns, &stop_o))
        return NULL;
    Views v = {.count = 0};
    Names nm = {NULL, NULL, 0};
    int64_t *starts, *ends, *io_starts, *io_ends;
    uint64_t *state;
    uint8_t *rmem, *pool_mem, *stop_mem;
    Py_ssize_t n_starts, n_ends, n_io_starts, n_io_ends, rmem_len, pool_len, n_state, n_stop;
    if (take(&v, starts_o, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, ends_o, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, io_starts_o, 1, 8, "io_starts", (void **)&io_starts, &n_io_starts) ||
        take(&v, io_ends_o, 1, 8, "io_ends", (void **)&io_ends, &n_io_ends) ||
        take(&v, rmem_o, 1, 1, "read_mem", (void **)&rmem, &rmem_len) ||
        take(&v, pool_o, 1, 1, "pool", (void **)&pool_mem, &pool_len) ||
        take(&v, state_o, 1, 8, "pool_state", (void **)&state, &n_state) ||
        take(&v, stop_o, 0, 1, "stop", (void **)&stop_mem, &n_stop) ||
        names_take(&nm, leaves, first))
        goto fail;
    Py_ssize_t io_cap = n_io_starts < n_io_ends ? n_io_starts : n_io_ends;
    Py_ssize_t blocks = size > 0 && block > 0 ? (size - 1) / block + 1 : 0;
    const char *wrong = NULL;
    if (blocks == 0)
        wrong = "size/block: a file of blocks needs both above 0 (size 0: entries_meta)";
    else if (n < 0 || n > n_starts || n > n_ends || nm.count - first > n_starts - n ||
             nm.count - first > n_ends - n)
        wrong = "starts/ends: too short for the leaves";
    else if (n_io < 0 || n_io > io_cap || blocks > io_cap)
        wrong = "io_starts/io_ends: cannot hold one file's blocks";
    else if (!writing && rmem_len < block)
        wrong = "read_mem: shorter than a block";
    if (wrong) {
        PyErr_SetString(PyExc_ValueError, wrong);
        goto fail;
    }
    Pool pool = {0};
    if (writing &&
        pool_init(&pool, pool_mem, pool_len, window_words, windows, stamps, state, n_state, block))
        goto fail;
    volatile const uint8_t *stop = n_stop ? stop_mem : NULL; /* StopEvent.flag */
    int status = ST_DONE, err = 0;
    uint64_t a = 0, b = 0, c = 0;
    Py_ssize_t k = first;
    Py_BEGIN_ALLOW_THREADS
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
        int cut = 0;
        for (Py_ssize_t off = 0; off < size; off += block) {
            Py_ssize_t len = size - off < block ? size - off : block;
            uint8_t *data = writing ? pool_next(&pool) : rmem;
            int64_t io_start = now_ns();
            ssize_t got = writing ? xpwrite(fd, data, (size_t)len, off)
                                  : xpread(fd, data, (size_t)len, off);
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
                c = (uint64_t)off;
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
        pool_save(&pool, state);
    names_release(&nm);
    release(&v);
    return Py_BuildValue("(innniKKK)", status, n, n_io, k, err, (unsigned long long)a,
                         (unsigned long long)b, (unsigned long long)c);
fail:
    names_release(&nm);
    release(&v);
    return NULL;
}

/* -- the module ------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"file_run", file_run, METH_VARARGS, file_run_doc},
    {"file_aio", file_aio, METH_VARARGS, file_aio_doc},
    {"entries_meta", entries_meta, METH_VARARGS, entries_meta_doc},
    {"entries_files", entries_files, METH_VARARGS, entries_files_doc},
    {"gate_open", gate_open, METH_VARARGS, gate_open_doc},
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
        {"BLOCK", ST_BLOCK},       {"SETUP", ST_SETUP},       {"OP_MKDIR", OP_MKDIR},    {"OP_UNLINK", OP_UNLINK},
        {"OP_RMDIR", OP_RMDIR},    {"OP_LSTAT", OP_LSTAT},    {"OP_OPEN_CLOSE", OP_OPEN_CLOSE},
        {"STAMP_SPACING", STAMP_SPACING},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0)
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
