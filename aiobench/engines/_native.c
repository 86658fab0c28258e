/* aiobench.engines._native: the native engine's hot loops, each run of operations in one call.
 *
 * Every entry point has one shape: (slot, spec). The slot (Slot, made once per slot by
 * SlotBuffer) holds the slot's memory and buffer state, which the loops advance in place;
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
 * before the memory goes. That is where a slot's Linux AIO context and in-flight
 * operations will live once they carry over from one native run to the next (issue #28,
 * the slot staying on one executor thread): close() then reaps them (io_destroy waits for
 * them) before it releases the memory they read into or write from. */
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

static int
sfc_set(SlotObject *s, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "sfc: cannot be deleted");
        return -1;
    }
    PyObject *seq = PySequence_Fast(value, "sfc: four 64-bit words");
    if (seq == NULL)
        return -1;
    uint64_t words[4];
    int ok = PySequence_Fast_GET_SIZE(seq) == 4;
    for (Py_ssize_t k = 0; ok && k < 4; k++) {
        PyObject *word = PyNumber_Index(PySequence_Fast_GET_ITEM(seq, k)); /* (numpy's too) */
        words[k] = word ? PyLong_AsUnsignedLongLong(word) : 0;
        ok = word != NULL && !PyErr_Occurred();
        Py_XDECREF(word);
    }
    Py_DECREF(seq);
    if (!ok) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "sfc: four 64-bit words");
        return -1;
    }
    memcpy(s->sfc, words, sizeof words);
    return 0;
}

static PyObject *
sfc_get(SlotObject *s, void *closure)
{
    return Py_BuildValue("(KKKK)", (unsigned long long)s->sfc[0], (unsigned long long)s->sfc[1],
                         (unsigned long long)s->sfc[2], (unsigned long long)s->sfc[3]);
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
    {NULL},
};

static PyGetSetDef slot_getset[] = {
    {"sfc", (getter)sfc_get, (setter)sfc_set,
     "--blockvarpct: the SFC64 generator's state (numpy's state['state']['state'])", NULL},
    {"closed", (getter)closed_get, NULL, "whether close() released the memory", NULL},
    {NULL},
};

static PyMethodDef slot_methods[] = {
    {"close", (PyCFunction)slot_close, METH_NOARGS,
     "close()\n\nRelease the slot's memory (BufferError while a call is using it)."},
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
    char reading, verify, verify_direct, tolerate;
    Py_ssize_t length, depth, var_words, size, block, first, n, n_io, done, index;
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
    SPEC_FIELD(var_words, T_PYSSIZET, 0, "--blockvarpct: words refilled per write; -1: none"),
    SPEC_FIELD(depth, T_PYSSIZET, 0, "file_aio: operations in flight at most"),
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
    SPEC_FIELD(io_starts, T_OBJECT, 0, "entries_files: int64 array, each block's start"),
    SPEC_FIELD(io_ends, T_OBJECT, 0, "entries_files: int64 array, each block's end"),
    SPEC_FIELD(n_io, T_PYSSIZET, 0, "in and out: blocks recorded in io_starts/io_ends"),
    SPEC_FIELD(deadline_ns, T_LONGLONG, 0, "entries_files: a file's blocks stop past it"),
    SPEC_FIELD(stop, T_OBJECT, 0, "entries_files: StopEvent.flag, or None"),
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
"file_run(slot, spec) -> status\n\n"
"One run of file-mode operations, composed as the Python engine's _composed loop: spec's\n"
"fd/fds, offsets, length, reading, mix_pct/mix_base, ns_per_op/schedule_ns/first_seq,\n"
"verify/salt/verify_direct, var_words, until_ns, gate; starts, ends and intended filled.\n"
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
    Py_ssize_t n_fds, n, n_starts, n_ends, n_dues, n_gate;
    if (take(&v, sp->fds, 0, 4, "fds", (void **)&fds, &n_fds) ||
        take(&v, sp->offsets, 0, 8, "offsets", (void **)&offsets, &n) ||
        take(&v, sp->starts, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, sp->ends, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, sp->intended, 1, 8, "intended", (void **)&dues, &n_dues) ||
        take(&v, sp->gate, 1, 8, "gate", (void **)&gate, &n_gate))
        goto fail;
    const int fd0 = sp->fd, reading = sp->reading, mix_pct = sp->mix_pct, verify = sp->verify,
              verify_direct = sp->verify_direct;
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
 * goes with its thread (a pthread key's destructor); a forked child forgets its parent's.
 * (Once operations stay in flight from one run to the next, issue #28, the context and its
 * Flight positions belong to the slot instead: see SlotObject.) */
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
"file_aio(slot, spec) -> status\n\n"
"One run of plain reads or stamped writes with up to spec.depth in flight (io_submit): each\n"
"timed from its submission to the reaping of its completion, recorded in completion order\n"
"(spec's fd/fds, offsets, length, reading, until_ns, gate; starts and ends filled).\n"
"After an operation ends past until_ns (or fails) nothing more is submitted; what is in\n"
"flight is reaped, then the call returns. Sets spec.done, and for a failure spec.index\n"
"(the failing operation), err, a, b.");

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
    Flight *flights = NULL;
    struct iocb **batch = NULL;
    struct io_event *events = NULL;
    Py_ssize_t *free_slots = NULL, *busy = NULL;
    if (take(&v, sp->fds, 0, 4, "fds", (void **)&fds, &n_fds) ||
        take(&v, sp->offsets, 0, 8, "offsets", (void **)&offsets, &n) ||
        take(&v, sp->starts, 1, 8, "starts", (void **)&starts, &n_starts) ||
        take(&v, sp->ends, 1, 8, "ends", (void **)&ends, &n_ends) ||
        take(&v, sp->gate, 1, 8, "gate", (void **)&gate, &n_gate))
        goto fail;
    const int fd0 = sp->fd, reading = sp->reading;
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
    flights = PyMem_Calloc((size_t)depth, sizeof *flights);
    batch = PyMem_Calloc((size_t)depth, sizeof *batch);
    events = PyMem_Calloc((size_t)depth, sizeof *events);
    free_slots = PyMem_Calloc((size_t)depth, sizeof *free_slots);
    busy = PyMem_Calloc(reading ? 1 : (size_t)pool.windows, sizeof *busy); /* in-flight writes */
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
            Py_ssize_t pos = (Py_ssize_t)events[e].data;
            Flight *f = &flights[pos];
            int64_t res = events[e].res;
            if (f->window >= 0)
                busy[f->window]--;
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
        pool_keep(slot, &pool);
    slot->busy = 0;
    PyMem_Free(flights);
    PyMem_Free(batch);
    PyMem_Free(events);
    PyMem_Free(free_slots);
    PyMem_Free(busy);
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
"spec.dfd (flags, mode, reading, size, block, until_ns, deadline_ns, stop), entries\n"
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
    const long long until_ns = sp->until_ns, deadline_ns = sp->deadline_ns;
    const Py_ssize_t first = sp->first, size = sp->size, block = sp->block;
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
    else if (n < 0 || n > n_starts || n > n_ends || nm.count - first > n_starts - n ||
             nm.count - first > n_ends - n)
        wrong = "starts/ends: too short for the leaves";
    else if (n_io < 0 || n_io > io_cap || blocks > io_cap)
        wrong = "io_starts/io_ends: cannot hold one file's blocks";
    else if (!writing && slot->read_area < block)
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

/* -- the module ------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"file_run", (PyCFunction)(void (*)(void))file_run, METH_FASTCALL, file_run_doc},
    {"file_aio", (PyCFunction)(void (*)(void))file_aio, METH_FASTCALL, file_aio_doc},
    {"entries_meta", entries_meta, METH_O, entries_meta_doc},
    {"entries_files", (PyCFunction)(void (*)(void))entries_files, METH_FASTCALL,
     entries_files_doc},
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
