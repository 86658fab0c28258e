/* Netbench's data path: one client connection's request/response loop and one server
 * connection's answer loop, each run with the GIL released and timed per block here.
 *
 * A connection carries `total` bytes from client to server in blocks of `bs` (the last
 * one short when `total` is not a multiple of `bs`); the server answers each complete
 * block with `resp` bytes, and the client sends the next block only after the answer
 * (one block in flight, as elbencho's netbench). Both sides know total, bs and resp.
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

/* client(fd, total, bs, resp, times) -> (sent, received, blocks, err)
 * times: a writable int64 buffer with two slots per block: its latency (from the start of
 * sending it to the end of its answer) and the monotonic instant its answer ended, ns. */
static PyObject *client(PyObject *self, PyObject *args)
{
    int fd;
    long long total, bs, resp;
    Py_buffer lat;
    if (!PyArg_ParseTuple(args, "iLLLw*", &fd, &total, &bs, &resp, &lat))
        return NULL;
    long long blocks_max = bs > 0 ? (total + bs - 1) / bs : 0;
    if (bs <= 0 || resp <= 0 || total < 0 ||
        lat.len < (Py_ssize_t)(2 * blocks_max * (long long)sizeof(int64_t))) {
        PyBuffer_Release(&lat);
        PyErr_SetString(PyExc_ValueError, "client: bad sizes or latency buffer too small");
        return NULL;
    }
    size_t cap = (size_t)(bs > resp ? bs : resp);
    char *buf = malloc(cap);
    if (buf == NULL) {
        PyBuffer_Release(&lat);
        return PyErr_NoMemory();
    }
    memset(buf, 0x5a, cap);
    int64_t *out = (int64_t *)lat.buf;
    long long sent = 0, received = 0, blocks = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    while (sent < total) {
        long long len = total - sent < bs ? total - sent : bs;
        int64_t start = now_ns();
        err = send_all(fd, buf, (size_t)len);
        if (err)
            break;
        sent += len;
        err = recv_all(fd, buf, (size_t)resp);
        if (err)
            break;
        received += resp;
        int64_t end = now_ns();
        out[2 * blocks] = end - start;
        out[2 * blocks + 1] = end;
        blocks++;
    }
    Py_END_ALLOW_THREADS
    free(buf);
    PyBuffer_Release(&lat);
    return Py_BuildValue("LLLi", sent, received, blocks, err);
}

/* serve(fd, total, bs, resp) -> (received, sent, responses, err): answer each complete
 * block (and the short last one) with resp bytes, until total bytes came in. */
static PyObject *serve(PyObject *self, PyObject *args)
{
    int fd;
    long long total, bs, resp;
    if (!PyArg_ParseTuple(args, "iLLL", &fd, &total, &bs, &resp))
        return NULL;
    if (bs <= 0 || resp <= 0 || total < 0) {
        PyErr_SetString(PyExc_ValueError, "serve: bad sizes");
        return NULL;
    }
    size_t cap = (size_t)(bs > resp ? bs : resp);
    char *buf = malloc(cap);
    if (buf == NULL)
        return PyErr_NoMemory();
    memset(buf, 0xa5, cap);
    long long received = 0, sent = 0, responses = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    while (received < total) {
        long long len = total - received < bs ? total - received : bs;
        err = recv_all(fd, buf, (size_t)len);
        if (err)
            break;
        received += len;
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
    {"client", client, METH_VARARGS, "One client connection's request/response loop."},
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
