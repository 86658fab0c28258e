/* The S3 engine's native request loop: a run of requests (PUTs of whole objects or of a
 * multipart upload's parts, or GETs) of one benchmark thread, up to one per connection in
 * flight, with the GIL released.
 *
 * Python makes and keeps the keep-alive connections (their fds are handed over), signs
 * every request head before the call, and words the errors; this loop sends each head
 * (with its body, for a PUT), reads each answer's head, parses its status line,
 * Content-Length, Transfer-Encoding and Connection, receives a GET's body straight into
 * its connection's area of the thread's read buffer, and times each request (start, end,
 * first byte) on CLOCK_MONOTONIC, perf_counter_ns's clock. One exchange at a time per
 * connection (no pipelining).
 *
 * run(fds, heads, bodies, into, area, want, times, status, done, alive, first, until_ns,
 *     deadline_ns, stop, timeout_ns, min_progress[, etags]) -> (issued, err)
 *
 *   fds      connections (a sequence of int); alive[c] (uint8, in and out) 1 while
 *            connection c may be used: this loop clears it for one that broke, was cut
 *            off, said "Connection: close", or holds bytes nobody asked for.
 *   heads    each request's head (bytes), requests first .. len(heads) - 1 are run;
 *   bodies   each PUT's body (buffers), or None for GETs, whose bodies go to
 *            into[c * area :][:want] (into: a writable buffer);
 *   times    int64 [3 * n]: start, end, time to first byte (ns) of each request done;
 *   status   int64 [n]: its answer's status; done: uint8 [n]: 1 once it completed;
 *   until_ns no request is started after one ended past it, or once stop[0] is set
 *            (those in flight finish); deadline_ns (0: none): those in flight then are
 *            cut off, not counted;
 *   timeout_ns, min_progress: a request must end or move min_progress bytes (sent and
 *            received) every timeout_ns;
 *   etags    (PUTs of parts) a writable buffer of ETAG_MAX bytes per request: each answer's
 *            ETag value there, NUL-terminated, as the Python path reads it (trimmed,
 *            repeated ones joined by ", "); an answer without one fails (KIND_ETAG), one
 *            whose value does not fit is handed back.
 *
 * Returns how many requests were started (from first) and None, or the first failure
 * as (kind, index, a, b, data): see the KIND_ constants.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* A non-2xx answer: a = status, data = reason phrase + "\n" + the first body bytes. */
#define KIND_STATUS 1
/* The connection broke: a = errno, b = body bytes received (-1: before the answer). */
#define KIND_BROKEN 2
/* A stall (--s3timeout): a = bytes moved in all, b = 1 if none in the last window. */
#define KIND_STALLED 3
/* A GET answer of another length than asked: a = its Content-Length. */
#define KIND_LENGTH 4
/* An answer this loop does not frame (chunked, or no Content-Length): the request is
 * handed back to Python (the others in flight finish first; its connection is dropped). */
#define KIND_HANDBACK 5
/* An answer that is not HTTP/1.x: data = what is wrong. */
#define KIND_MALFORMED 6
/* A part's 200 answer without an ETag (its completion needs one): a = status. */
#define KIND_ETAG 7

/* A part's ETag slot: the value and its NUL (S3's are 34 bytes, a quoted MD5 and a part
 * count at most; a longer one is handed back to the Python path). */
#define ETAG_MAX 256

/* Response head plus an error body's first bytes (the Python path reads up to this). */
#define ERROR_BODY_MAX (64 * 1024)
#define HEAD_MAX (16 * 1024)
#define SCRATCH (HEAD_MAX + ERROR_BODY_MAX)

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

typedef struct {
    int fd;
    int busy;          /* a request is in flight on it */
    Py_ssize_t req;    /* its index */
    const char *head;
    size_t head_len;
    const char *body;
    size_t body_len;
    size_t sent;       /* of head_len + body_len */
    int want_out;      /* EPOLLOUT asked for */
    char *scratch;     /* the answer's head (and a body that is not a GET's) */
    size_t used;       /* bytes in scratch */
    int head_done;
    int status;
    int close_after;
    int64_t clen;      /* Content-Length */
    char *dst;         /* where the body goes */
    size_t need;       /* body bytes to read into dst */
    size_t got;        /* ... read so far */
    int into;          /* dst is the caller's area */
    int64_t since;     /* the stall window's start */
    int64_t seen;      /* bytes moved at its start */
    int64_t moved;     /* bytes sent and received */
    int64_t first_byte;
    size_t etag_len;   /* bytes in the request's ETag slot */
    int etag_seen;     /* ETag headers seen */
    int etag_over;     /* ... more than its slot holds */
    char reason[128];
} Conn;

typedef struct {
    int kind;
    Py_ssize_t index;
    int64_t a, b;
    char *data; /* malloc'd, or NULL */
    size_t data_len;
} Failure;

typedef struct {
    Conn *conns;
    int nconns;
    int ep;
    const char **heads;
    size_t *head_lens;
    const char **bodies;
    size_t *body_lens;
    char *into;
    Py_ssize_t area;
    int64_t want;
    int64_t *times;
    int64_t *status;
    uint8_t *done;
    uint8_t *alive;
    char *etags; /* ETAG_MAX bytes per request, or NULL: no ETags asked for */
    Failure fail;
    Py_ssize_t handback;
    int stopping;
    int64_t until_ns;
    volatile uint8_t *stop;
} Loop;

static void set_fail(Loop *L, int kind, Py_ssize_t index, int64_t a, int64_t b, const char *data,
                     size_t len)
{
    if (L->fail.kind)
        return;
    L->fail.kind = kind;
    L->fail.index = index;
    L->fail.a = a;
    L->fail.b = b;
    if (data != NULL && len > 0) {
        L->fail.data = malloc(len);
        if (L->fail.data != NULL) {
            memcpy(L->fail.data, data, len);
            L->fail.data_len = len;
        }
    }
}

static void drop(Loop *L, int c)
{
    Conn *conn = &L->conns[c];
    if (L->alive[c]) {
        epoll_ctl(L->ep, EPOLL_CTL_DEL, conn->fd, NULL);
        L->alive[c] = 0;
    }
    conn->busy = 0;
}

static void interest(Loop *L, int c, int out)
{
    Conn *conn = &L->conns[c];
    if (conn->want_out == out)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.u32 = (uint32_t)c};
    epoll_ctl(L->ep, EPOLL_CTL_MOD, conn->fd, &ev);
    conn->want_out = out;
}

/* A request's head and body out as far as the socket takes them; 0, or an errno. */
static int push(Loop *L, int c)
{
    Conn *conn = &L->conns[c];
    size_t total = conn->head_len + conn->body_len;
    while (conn->sent < total) {
        struct iovec iov[2];
        int n = 0;
        if (conn->sent < conn->head_len) {
            iov[n].iov_base = (void *)(conn->head + conn->sent);
            iov[n++].iov_len = conn->head_len - conn->sent;
            if (conn->body_len) {
                iov[n].iov_base = (void *)conn->body;
                iov[n++].iov_len = conn->body_len;
            }
        } else {
            size_t at = conn->sent - conn->head_len;
            iov[n].iov_base = (void *)(conn->body + at);
            iov[n++].iov_len = conn->body_len - at;
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                interest(L, c, 1);
                return 0;
            }
            return errno;
        }
        /* (a request's body bytes count as moved, not its head's: as the Python path) */
        size_t before = conn->sent > conn->head_len ? conn->sent - conn->head_len : 0;
        conn->sent += (size_t)w;
        size_t after = conn->sent > conn->head_len ? conn->sent - conn->head_len : 0;
        conn->moved += (int64_t)(after - before);
    }
    interest(L, c, 0);
    return 0;
}

static void start(Loop *L, int c, Py_ssize_t i, int64_t now)
{
    Conn *conn = &L->conns[c];
    conn->busy = 1;
    conn->req = i;
    conn->head = L->heads[i];
    conn->head_len = L->head_lens[i];
    conn->body = L->bodies != NULL ? L->bodies[i] : NULL;
    conn->body_len = L->bodies != NULL ? L->body_lens[i] : 0;
    conn->sent = 0;
    conn->used = 0;
    conn->head_done = 0;
    conn->status = 0;
    conn->close_after = 0;
    conn->clen = -1;
    conn->dst = NULL;
    conn->need = conn->got = 0;
    conn->into = 0;
    conn->since = now;
    conn->seen = conn->moved = 0;
    conn->first_byte = 0;
    conn->etag_len = 0;
    conn->etag_seen = conn->etag_over = 0;
    if (L->etags != NULL)
        L->etags[i * ETAG_MAX] = 0;
    conn->reason[0] = 0;
    L->times[3 * i] = now;
    int err = push(L, c);
    if (err) {
        set_fail(L, KIND_BROKEN, i, err, -1, NULL, 0);
        drop(L, c);
    }
}

static void complete(Loop *L, int c)
{
    Conn *conn = &L->conns[c];
    Py_ssize_t i = conn->req;
    int64_t end = now_ns();
    conn->busy = 0;
    if (conn->close_after || conn->sent < conn->head_len + conn->body_len)
        drop(L, c);
    int ok = L->into != NULL ? (conn->status == 200 || conn->status == 206) : conn->status == 200;
    if (!ok) {
        /* the reason phrase and the body's first bytes, for Python's S3Error */
        size_t rlen = strlen(conn->reason);
        size_t len = rlen + 1 + conn->got;
        char *text = malloc(len);
        if (text != NULL) {
            memcpy(text, conn->reason, rlen);
            text[rlen] = '\n';
            memcpy(text + rlen + 1, conn->dst, conn->got);
        }
        set_fail(L, KIND_STATUS, i, conn->status, 0, text, text != NULL ? len : 0);
        free(text);
        return;
    }
    if (L->into != NULL && conn->clen != L->want) {
        set_fail(L, KIND_LENGTH, i, conn->clen, conn->status, NULL, 0);
        return;
    }
    if (L->etags != NULL && conn->etag_over) {
        /* (the connection is still good: the answer was read whole) */
        if (L->handback < 0 || i < L->handback)
            L->handback = i;
        L->stopping = 1;
        return;
    }
    if (L->etags != NULL && conn->etag_len == 0) {
        set_fail(L, KIND_ETAG, i, conn->status, 0, NULL, 0);
        return;
    }
    L->times[3 * i + 1] = end;
    L->times[3 * i + 2] = (conn->first_byte ? conn->first_byte : end) - L->times[3 * i];
    L->status[i] = conn->status;
    L->done[i] = 1;
    if (end > L->until_ns || L->stop[0])
        L->stopping = 1;
}

static int find_ci(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

static int contains_ci(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t k = 0; k + n <= len; k++)
        if (strncasecmp(s + k, word, n) == 0)
            return 1;
    return 0;
}

/* What Python's str.strip() takes off a latin-1 text (the Python path strips headers so). */
static int py_space(unsigned char ch)
{
    return ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f) || ch == 0x85 ||
           ch == 0xa0;
}

/* An ETag header's value (v .. e) into the request's slot: trimmed, after ", " where one
 * came before. */
static void add_etag(Loop *L, Conn *conn, const char *v, const char *e)
{
    while (v < e && py_space((unsigned char)*v))
        v++;
    while (e > v && py_space((unsigned char)e[-1]))
        e--;
    size_t len = (size_t)(e - v);
    size_t sep = conn->etag_seen++ ? 2 : 0;
    if (conn->etag_over || conn->etag_len + sep + len >= ETAG_MAX) {
        conn->etag_over = 1;
        return;
    }
    char *slot = L->etags + conn->req * ETAG_MAX;
    memcpy(slot + conn->etag_len, ", ", sep);
    memcpy(slot + conn->etag_len + sep, v, len);
    conn->etag_len += sep + len;
    slot[conn->etag_len] = 0;
}

/* The head is whole in scratch[0 .. end) (end after the blank line): parse it, and set up
 * the body. Returns 0 to go on, -1 once the request is failed, handed back or done. */
static int parse_head(Loop *L, int c, size_t end)
{
    Conn *conn = &L->conns[c];
    Py_ssize_t i = conn->req;
    const char *s = conn->scratch;
    const char *eol = memchr(s, '\r', end);
    size_t first = (size_t)(eol - s);
    if (first < 12 || strncmp(s, "HTTP/1.", 7) != 0 || s[8] != ' ' || s[9] < '0' || s[9] > '9' ||
        s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
        (first > 12 && s[12] != ' ')) {
        static const char what[] = "a malformed answer: not an HTTP/1.x status line";
        set_fail(L, KIND_MALFORMED, i, 0, 0, what, sizeof what - 1);
        drop(L, c);
        return -1;
    }
    int status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    if (status < 200) { /* an interim answer: the real one follows */
        memmove(conn->scratch, conn->scratch + end, conn->used - end);
        conn->used -= end;
        return 1;
    }
    conn->status = status;
    if (s[7] == '0')
        conn->close_after = 1;
    size_t rl = first > 13 ? first - 13 : 0;
    if (rl >= sizeof conn->reason)
        rl = sizeof conn->reason - 1;
    memcpy(conn->reason, s + 13, rl);
    conn->reason[rl] = 0;
    int chunked = 0;
    const char *p = s + first + 2;
    const char *stop = s + end - 2;
    while (p < stop) {
        const char *q = memchr(p, '\r', (size_t)(stop - p));
        size_t len = q != NULL ? (size_t)(q - p) : (size_t)(stop - p);
        if (find_ci(p, len, "content-length")) {
            const char *v = p + 15;
            const char *e = p + len;
            int64_t n = 0;
            int digits = 0;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (v < e && *v >= '0' && *v <= '9' && n < (INT64_MAX / 10 - 9)) {
                n = n * 10 + (*v++ - '0');
                digits++;
            }
            if (digits)
                conn->clen = n;
        } else if (find_ci(p, len, "transfer-encoding")) {
            chunked = 1;
        } else if (find_ci(p, len, "connection") && contains_ci(p + 11, len - 11, "close")) {
            conn->close_after = 1;
        } else if (L->etags != NULL && find_ci(p, len, "etag")) {
            add_etag(L, conn, p + 5, p + len);
        }
        p += len + 2;
    }
    if (status == 204 || status == 304)
        conn->clen = 0;
    if (chunked || conn->clen < 0) {
        if (L->handback < 0 || i < L->handback)
            L->handback = i;
        L->stopping = 1;
        drop(L, c);
        return -1;
    }
    size_t extra = conn->used - end;
    int into = L->into != NULL && (status == 200 || status == 206);
    if (into && conn->clen > L->want) {
        set_fail(L, KIND_LENGTH, i, conn->clen, conn->status, NULL, 0);
        drop(L, c);
        return -1;
    }
    conn->head_done = 1;
    if (into) {
        conn->dst = L->into + (Py_ssize_t)c * L->area;
        conn->need = (size_t)conn->clen;
        conn->into = 1;
    } else {
        conn->dst = conn->scratch;
        conn->need = conn->clen > ERROR_BODY_MAX ? ERROR_BODY_MAX : (size_t)conn->clen;
        if ((size_t)conn->clen > conn->need)
            conn->close_after = 1; /* the rest is never read */
    }
    size_t take = extra < conn->need ? extra : conn->need;
    if (take && !conn->first_byte)
        conn->first_byte = now_ns();
    memmove(conn->dst, conn->scratch + end, take);
    conn->got = take;
    if (extra > take)
        conn->close_after = 1; /* bytes nobody asked for */
    if (conn->got >= conn->need) {
        complete(L, c);
        return -1;
    }
    return 0;
}

static void readable(Loop *L, int c)
{
    Conn *conn = &L->conns[c];
    if (!conn->busy) {
        /* an idle connection: closed by the server, or bytes nobody asked for */
        drop(L, c);
        return;
    }
    char *at;
    size_t room;
    if (!conn->head_done) {
        at = conn->scratch + conn->used;
        room = SCRATCH - conn->used;
    } else {
        at = conn->dst + conn->got;
        room = conn->need - conn->got;
    }
    ssize_t n = recv(conn->fd, at, room, 0);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        set_fail(L, KIND_BROKEN, conn->req, errno, conn->status ? (int64_t)conn->got : -1, NULL, 0);
        drop(L, c);
        return;
    }
    if (n == 0) {
        set_fail(L, KIND_BROKEN, conn->req, ECONNRESET, conn->status ? (int64_t)conn->got : -1,
                 NULL, 0);
        drop(L, c);
        return;
    }
    conn->moved += n;
    if (conn->head_done) {
        if (!conn->first_byte)
            conn->first_byte = now_ns();
        conn->got += (size_t)n;
        if (conn->got >= conn->need)
            complete(L, c);
        return;
    }
    size_t from = conn->used >= 3 ? conn->used - 3 : 0;
    conn->used += (size_t)n;
    for (;;) {
        char *s = conn->scratch;
        char *end = NULL;
        for (size_t k = from; k + 4 <= conn->used; k++) {
            if (s[k] == '\r' && s[k + 1] == '\n' && s[k + 2] == '\r' && s[k + 3] == '\n') {
                end = s + k + 4;
                break;
            }
        }
        if (end == NULL) {
            if (conn->used >= HEAD_MAX) {
                static const char what[] = "a malformed answer: a response head over 16 KiB";
                set_fail(L, KIND_MALFORMED, conn->req, 0, 0, what, sizeof what - 1);
                drop(L, c);
            }
            return;
        }
        int r = parse_head(L, c, (size_t)(end - s));
        if (r <= 0)
            return;
        from = 0; /* an interim answer was taken off: the next head */
    }
}

static void sweep_stalls(Loop *L, int64_t now, int64_t timeout, int64_t min_progress)
{
    for (int c = 0; c < L->nconns; c++) {
        Conn *conn = &L->conns[c];
        if (!conn->busy || now - conn->since < timeout)
            continue;
        if (conn->moved - conn->seen >= min_progress) {
            conn->seen = conn->moved;
            conn->since = now;
            continue;
        }
        set_fail(L, KIND_STALLED, conn->req, conn->moved, conn->moved == conn->seen, NULL, 0);
        drop(L, c);
        return;
    }
}

static int busy_count(Loop *L)
{
    int n = 0;
    for (int c = 0; c < L->nconns; c++)
        n += L->conns[c].busy;
    return n;
}

static Py_ssize_t loop(Loop *L, Py_ssize_t first, Py_ssize_t n, int64_t deadline, int64_t timeout,
                       int64_t min_progress)
{
    Py_ssize_t next = first;
    struct epoll_event evs[64];
    for (;;) {
        int64_t now = now_ns();
        if (deadline && now >= deadline)
            break; /* the time limit: what is in flight is cut off */
        if (!L->stopping && L->stop[0] && next > first)
            L->stopping = 1;
        for (int c = 0; c < L->nconns && next < n && !L->stopping && !L->fail.kind; c++) {
            if (L->alive[c] && !L->conns[c].busy)
                start(L, c, next++, now);
        }
        if (L->fail.kind)
            break;
        if (!busy_count(L))
            break;
        int64_t wake = now + timeout;
        for (int c = 0; c < L->nconns; c++)
            if (L->conns[c].busy && L->conns[c].since + timeout < wake)
                wake = L->conns[c].since + timeout;
        if (deadline && deadline < wake)
            wake = deadline;
        int64_t wait = wake - now;
        int ms = wait <= 0 ? 0 : (int)((wait + 999999) / 1000000);
        int got = epoll_wait(L->ep, evs, 64, ms);
        if (got < 0 && errno != EINTR) {
            set_fail(L, KIND_BROKEN, next > first ? next - 1 : first, errno, -1, NULL, 0);
            break;
        }
        for (int k = 0; k < got && !L->fail.kind; k++) {
            int c = (int)evs[k].data.u32;
            Conn *conn = &L->conns[c];
            if (!L->alive[c])
                continue;
            if ((evs[k].events & EPOLLOUT) && conn->busy) {
                int err = push(L, c);
                if (err) {
                    set_fail(L, KIND_BROKEN, conn->req, err, -1, NULL, 0);
                    drop(L, c);
                    continue;
                }
            }
            if (evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                readable(L, c);
        }
        if (L->fail.kind)
            break;
        sweep_stalls(L, now_ns(), timeout, min_progress);
        if (L->fail.kind)
            break;
    }
    /* what is still in flight (cut off, or beside a failure) leaves its connection unusable */
    for (int c = 0; c < L->nconns; c++)
        if (L->conns[c].busy)
            drop(L, c);
    return next - first;
}

static int int64_buffer(Py_buffer *b, Py_ssize_t count, const char *what)
{
    if (b->len < count * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "%s is too small", what);
        return -1;
    }
    return 0;
}

static PyObject *run(PyObject *self, PyObject *args)
{
    PyObject *fds_obj, *heads, *bodies, *into_obj, *etags_obj = Py_None;
    Py_ssize_t area, first;
    long long want, until_ns, deadline_ns, timeout_ns, min_progress;
    Py_buffer times, status, done, alive, stop;
    if (!PyArg_ParseTuple(args, "OO!OOnLw*w*w*w*nLLy*LL|O", &fds_obj, &PyList_Type, &heads,
                          &bodies, &into_obj, &area, &want, &times, &status, &done, &alive,
                          &first, &until_ns, &deadline_ns, &stop, &timeout_ns, &min_progress,
                          &etags_obj))
        return NULL;
    PyObject *result = NULL;
    Loop L;
    memset(&L, 0, sizeof L);
    L.ep = -1;
    L.handback = -1;
    Py_buffer into = {0};
    Py_buffer etags = {0};
    Py_buffer *body_bufs = NULL;
    Py_ssize_t nbodies = 0;
    Py_ssize_t n = PyList_GET_SIZE(heads);
    PyObject *fds = PySequence_Fast(fds_obj, "fds must be a sequence");
    if (fds == NULL)
        goto out;
    int nconns = (int)PySequence_Fast_GET_SIZE(fds);
    if (nconns < 1 || nconns > 4096 || alive.len < nconns || done.len < n || stop.len < 1 ||
        first < 0 || first > n || timeout_ns <= 0) {
        PyErr_SetString(PyExc_ValueError, "bad arguments");
        goto out;
    }
    if (int64_buffer(&times, 3 * n, "times") || int64_buffer(&status, n, "status"))
        goto out;
    L.conns = calloc((size_t)nconns, sizeof(Conn));
    L.heads = calloc((size_t)n + 1, sizeof(char *));
    L.head_lens = calloc((size_t)n + 1, sizeof(size_t));
    if (L.conns == NULL || L.heads == NULL || L.head_lens == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    L.nconns = nconns;
    for (int c = 0; c < nconns; c++) {
        long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(fds, c));
        if (fd == -1 && PyErr_Occurred())
            goto out;
        L.conns[c].fd = (int)fd;
        L.conns[c].scratch = malloc(SCRATCH);
        if (L.conns[c].scratch == NULL) {
            PyErr_NoMemory();
            goto out;
        }
    }
    for (Py_ssize_t i = first; i < n; i++) {
        PyObject *h = PyList_GET_ITEM(heads, i);
        if (!PyBytes_Check(h)) {
            PyErr_SetString(PyExc_TypeError, "heads must be bytes");
            goto out;
        }
        L.heads[i] = PyBytes_AS_STRING(h);
        L.head_lens[i] = (size_t)PyBytes_GET_SIZE(h);
    }
    if (bodies != Py_None) {
        if (!PyList_Check(bodies) || PyList_GET_SIZE(bodies) != n) {
            PyErr_SetString(PyExc_ValueError, "bodies: one per head");
            goto out;
        }
        body_bufs = calloc((size_t)n + 1, sizeof(Py_buffer));
        L.bodies = calloc((size_t)n + 1, sizeof(char *));
        L.body_lens = calloc((size_t)n + 1, sizeof(size_t));
        if (body_bufs == NULL || L.bodies == NULL || L.body_lens == NULL) {
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = first; i < n; i++) {
            if (PyObject_GetBuffer(PyList_GET_ITEM(bodies, i), &body_bufs[i], PyBUF_C_CONTIGUOUS))
                goto out;
            nbodies = i + 1;
            L.bodies[i] = body_bufs[i].buf;
            L.body_lens[i] = (size_t)body_bufs[i].len;
        }
    } else {
        if (into_obj == Py_None) {
            PyErr_SetString(PyExc_ValueError, "a GET needs a buffer to read into");
            goto out;
        }
        if (PyObject_GetBuffer(into_obj, &into, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS))
            goto out;
        if (want < 0 || area < want || into.len < area * nconns) {
            PyErr_SetString(PyExc_ValueError, "the read buffer is too small");
            goto out;
        }
        L.into = into.buf;
        L.area = area;
        L.want = want;
    }
    if (etags_obj != Py_None) {
        if (bodies == Py_None) {
            PyErr_SetString(PyExc_ValueError, "ETags come with PUTs");
            goto out;
        }
        if (PyObject_GetBuffer(etags_obj, &etags, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS))
            goto out;
        if (etags.len < n * ETAG_MAX) {
            PyErr_SetString(PyExc_ValueError, "etags is too small");
            goto out;
        }
        L.etags = etags.buf;
    }
    L.times = times.buf;
    L.status = status.buf;
    L.done = done.buf;
    L.alive = alive.buf;
    L.stop = stop.buf;
    L.until_ns = until_ns;
    Py_ssize_t issued;
    Py_BEGIN_ALLOW_THREADS
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    if (L.ep >= 0) {
        for (int c = 0; c < nconns; c++) {
            if (!L.alive[c])
                continue;
            /* a connection the server closed while idle, or one holding stray bytes */
            char peek;
            ssize_t r = recv(L.conns[c].fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)c};
            if ((r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || r >= 0 ||
                epoll_ctl(L.ep, EPOLL_CTL_ADD, L.conns[c].fd, &ev) < 0)
                L.alive[c] = 0;
        }
        issued = loop(&L, first, n, deadline_ns, timeout_ns, min_progress);
    } else {
        issued = 0;
    }
    Py_END_ALLOW_THREADS
    if (L.ep < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto out;
    }
    if (!L.fail.kind && L.handback >= 0)
        L.fail.kind = KIND_HANDBACK, L.fail.index = L.handback;
    if (L.fail.kind) {
        result = Py_BuildValue("n(inLLy#)", issued, L.fail.kind, L.fail.index, (long long)L.fail.a,
                               (long long)L.fail.b, L.fail.data != NULL ? L.fail.data : "",
                               (Py_ssize_t)L.fail.data_len);
    } else {
        result = Py_BuildValue("nO", issued, Py_None);
    }
out:
    if (L.ep >= 0)
        close(L.ep);
    if (L.conns != NULL)
        for (int c = 0; c < L.nconns; c++)
            free(L.conns[c].scratch);
    free(L.conns);
    free(L.fail.data);
    free(L.heads);
    free(L.head_lens);
    free(L.bodies);
    free(L.body_lens);
    for (Py_ssize_t i = first; i < nbodies; i++)
        PyBuffer_Release(&body_bufs[i]);
    free(body_bufs);
    if (into.obj != NULL)
        PyBuffer_Release(&into);
    if (etags.obj != NULL)
        PyBuffer_Release(&etags);
    Py_XDECREF(fds);
    PyBuffer_Release(&times);
    PyBuffer_Release(&status);
    PyBuffer_Release(&done);
    PyBuffer_Release(&alive);
    PyBuffer_Release(&stop);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, "A run of small-object S3 requests (see _s3native.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_s3native",
    .m_doc = "The S3 engine's native request loop.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__s3native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "ETAG_MAX", ETAG_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
