/* Netbench's data path: one client connection's request/response loop and one server
 * connection's answer loop, each run with the GIL released and timed per block here.
 *
 * A client thread sends its -s (`total`) bytes in blocks of `bs` over its connection (the
 * last one short when `total` is not a multiple of `bs`), pass after pass with --infloop,
 * in runs that the harness hands over; the server answers each block with `resp` bytes,
 * and the client sends the next block only after the answer (one block in flight, as
 * elbencho's netbench). Both sides know total, bs and resp.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* All of len bytes out; 0 or an errno. */
static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* All of len bytes in; 0, an errno, or -1 when the peer closed first. */
static int recv_all(int fd, char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = recv(fd, buf, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* client_run(fd, count, len, resp, until_ns, stop, starts, ends) -> (done, err)
 * One run of a client connection: up to `count` blocks of `len` bytes, each answered with
 * `resp` bytes before the next goes out; it ends early after a block whose answer came
 * past `until_ns` (CLOCK_MONOTONIC, as perf_counter_ns; 0: no limit) or once the one-byte
 * `stop` flag is set (seen between blocks). starts/ends: writable int64 buffers of `count`
 * slots each, the instants each block started being sent and its answer ended. */
static PyObject *client_run(PyObject *self, PyObject *args)
{
    int fd;
    long long count, len, resp, until;
    Py_buffer stop, starts, ends;
    if (!PyArg_ParseTuple(args, "iLLLLw*w*w*", &fd, &count, &len, &resp, &until, &stop,
                          &starts, &ends))
        return NULL;
    Py_ssize_t need = (Py_ssize_t)(count * (long long)sizeof(int64_t));
    if (len <= 0 || resp <= 0 || count < 0 || stop.len < 1 || starts.len < need ||
        ends.len < need) {
        PyBuffer_Release(&stop);
        PyBuffer_Release(&starts);
        PyBuffer_Release(&ends);
        PyErr_SetString(PyExc_ValueError, "client_run: bad sizes or buffers too small");
        return NULL;
    }
    size_t cap = (size_t)(len > resp ? len : resp);
    char *buf = malloc(cap);
    if (buf == NULL) {
        PyBuffer_Release(&stop);
        PyBuffer_Release(&starts);
        PyBuffer_Release(&ends);
        return PyErr_NoMemory();
    }
    memset(buf, 0x5a, cap);
    volatile const unsigned char *flag = (volatile const unsigned char *)stop.buf;
    int64_t *out_start = (int64_t *)starts.buf, *out_end = (int64_t *)ends.buf;
    long long done = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    while (done < count && !*flag) {
        int64_t start = now_ns();
        err = send_all(fd, buf, (size_t)len);
        if (err)
            break;
        err = recv_all(fd, buf, (size_t)resp);
        if (err)
            break;
        int64_t end = now_ns();
        out_start[done] = start;
        out_end[done] = end;
        done++;
        if (until && end > until)
            break;
    }
    Py_END_ALLOW_THREADS
    free(buf);
    PyBuffer_Release(&stop);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    return Py_BuildValue("Li", done, err);
}

/* serve(fd, total, bs, resp) -> (received, sent, responses, err): answer each block with
 * resp bytes. The client sends passes of `total` bytes in blocks of `bs` (the last one
 * of a pass short when total is no multiple of bs), as many as its phases take; the loop
 * ends when the client closes the connection between blocks (err 0), and reports a close
 * inside a block as -1. */
static PyObject *serve(PyObject *self, PyObject *args)
{
    int fd;
    long long total, bs, resp;
    if (!PyArg_ParseTuple(args, "iLLL", &fd, &total, &bs, &resp))
        return NULL;
    if (bs <= 0 || resp <= 0 || total <= 0) {
        PyErr_SetString(PyExc_ValueError, "serve: bad sizes");
        return NULL;
    }
    size_t cap = (size_t)(bs > resp ? bs : resp);
    char *buf = malloc(cap);
    if (buf == NULL)
        return PyErr_NoMemory();
    memset(buf, 0xa5, cap);
    long long received = 0, sent = 0, responses = 0, in_pass = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        size_t len = (size_t)(total - in_pass < bs ? total - in_pass : bs);
        /* The block's first bytes: a close before them is the client's end. */
        ssize_t n;
        do
            n = recv(fd, buf, len, 0);
        while (n < 0 && errno == EINTR);
        if (n == 0)
            break;
        if (n < 0) {
            err = errno;
            break;
        }
        err = recv_all(fd, buf + n, len - (size_t)n);
        if (err)
            break;
        received += (long long)len;
        in_pass = (in_pass + (long long)len) % total;
        err = send_all(fd, buf, (size_t)resp);
        if (err)
            break;
        sent += resp;
        responses++;
    }
    Py_END_ALLOW_THREADS
    free(buf);
    return Py_BuildValue("LLLi", received, sent, responses, err);
}

static PyMethodDef methods[] = {
    {"client_run", client_run, METH_VARARGS, "One run of a client connection's blocks."},
    {"serve", serve, METH_VARARGS, "One server connection's answer loop."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_netnative",
    .m_doc = "Netbench's native data path.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__netnative(void)
{
    return PyModule_Create(&module);
}
