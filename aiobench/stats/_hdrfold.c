/* aiobench.stats._hdrfold: latencies folded into HDR histogram counts, and walks over them.
 *
 * The recorders of aiobench/stats/recorders.py keep the counts of an hdrhistogram of one
 * fixed geometry in an int64 buffer; these functions fill and read such buffers in one C
 * loop each, so that a run that records latencies needs no numpy (whose import alone costs
 * a third of a small run's start). The bucketing is hdrhistogram's: a value v lands at
 *   b = 63 - clz(v | sub_mask) - unit_magnitude - sub_half_mag
 *   index = ((b + 1) << sub_half_mag) + (v >> (b + unit_magnitude)) - sub_half_count
 * with v clamped to [0, highest]. Every buffer is C-contiguous with 8-byte items (an
 * array('q'), a numpy int64 array, a memoryview of either).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    int64_t unit_magnitude, sub_half_mag, sub_half_count, sub_mask, highest;
} Geometry;

static int
int64_buffer(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    /* (an empty array's buffer may sit anywhere: nothing is read from it) */
    if (view->itemsize != 8 || (view->len && (uintptr_t)view->buf % 8)) {
        PyErr_Format(PyExc_ValueError, "%s: needs aligned 8-byte items (got %zd-byte items)",
                     what, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int
geometry(PyObject *obj, Geometry *g)
{
    if (!PyArg_ParseTuple(obj, "LLLLL;geometry: (unit_magnitude, sub_half_mag, "
                          "sub_half_count, sub_mask, highest)", &g->unit_magnitude,
                          &g->sub_half_mag, &g->sub_half_count, &g->sub_mask, &g->highest))
        return -1;
    if (g->unit_magnitude < 0 || g->sub_half_mag < 0 || g->sub_half_mag > 62 ||
        g->sub_mask <= 0 || g->highest <= 0) {
        PyErr_SetString(PyExc_ValueError, "geometry: out of range");
        return -1;
    }
    return 0;
}

static inline int64_t
counts_index(const Geometry *g, int64_t value)
{
    uint64_t v = value < 0 ? 0 : (uint64_t)(value > g->highest ? g->highest : value);
    int64_t bucket = 63 - __builtin_clzll(v | (uint64_t)g->sub_mask) - g->unit_magnitude -
                     g->sub_half_mag;
    int64_t sub = (int64_t)(v >> (bucket + g->unit_magnitude));
    return ((bucket + 1) << g->sub_half_mag) + (sub - g->sub_half_count);
}

PyDoc_STRVAR(fold_doc,
"fold(values, counts, geometry) -> (n, min, max, sum, sum_of_squares)\n\n"
"Add each value to the HDR counts; the exact count, min, max and sum of the values (min,\n"
"max, sum 0 when there are none) and the sum of their squares as a float.");

static PyObject *
fold(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fold(values, counts, geometry)");
        return NULL;
    }
    Geometry g;
    if (geometry(args[2], &g) < 0)
        return NULL;
    Py_buffer vals, counts;
    if (int64_buffer(args[0], &vals, 0, "values") < 0)
        return NULL;
    if (int64_buffer(args[1], &counts, 1, "counts") < 0) {
        PyBuffer_Release(&vals);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = vals.len / 8, n_counts = counts.len / 8;
    const int64_t *v = vals.buf;
    int64_t *c = counts.buf;
    /* The last index any value can take: checked once, not per value. */
    if (n && counts_index(&g, g.highest) >= n_counts) {
        PyErr_SetString(PyExc_ValueError, "fold: counts is too short for the geometry");
        goto done;
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN, sum = 0;
    double squares = 0.0;
    int overflow = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = v[i];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        overflow |= __builtin_add_overflow(sum, x, &sum);
        squares += (double)x * (double)x;
        c[counts_index(&g, x)]++;
    }
    Py_END_ALLOW_THREADS
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "fold: the values' sum exceeds 64 bits");
        goto done;
    }
    if (n == 0)
        lo = hi = 0;
    result = Py_BuildValue("nLLLd", n, (long long)lo, (long long)hi, (long long)sum, squares);
done:
    PyBuffer_Release(&vals);
    PyBuffer_Release(&counts);
    return result;
}

PyDoc_STRVAR(diff_doc,
"diff(out, a, b) -> None\n\nout[i] = a[i] - b[i], all three of one length (out writable).");

static PyObject *
diff(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "diff(out, a, b)");
        return NULL;
    }
    Py_buffer out, a, b;
    if (int64_buffer(args[0], &out, 1, "out") < 0)
        return NULL;
    if (int64_buffer(args[1], &a, 0, "a") < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    if (int64_buffer(args[2], &b, 0, "b") < 0) {
        PyBuffer_Release(&out);
        PyBuffer_Release(&a);
        return NULL;
    }
    PyObject *result = NULL;
    if (a.len != out.len || b.len != out.len) {
        PyErr_SetString(PyExc_ValueError, "diff: the buffers differ in length");
    } else {
        int64_t *o = out.buf;
        const int64_t *x = a.buf, *y = b.buf;
        for (Py_ssize_t i = 0; i < out.len / 8; i++)
            o[i] = x[i] - y[i];
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return result;
}

PyDoc_STRVAR(add_doc, "add(counts, other) -> None\n\ncounts[i] += other[i] (one length).");

static PyObject *
add(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add(counts, other)");
        return NULL;
    }
    Py_buffer dst, src;
    if (int64_buffer(args[0], &dst, 1, "counts") < 0)
        return NULL;
    if (int64_buffer(args[1], &src, 0, "other") < 0) {
        PyBuffer_Release(&dst);
        return NULL;
    }
    PyObject *result = NULL;
    if (dst.len != src.len) {
        PyErr_SetString(PyExc_ValueError, "add: the counts differ in length");
    } else {
        int64_t *d = dst.buf;
        const int64_t *s = src.buf;
        for (Py_ssize_t i = 0; i < dst.len / 8; i++)
            d[i] += s[i];
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    return result;
}

PyDoc_STRVAR(reach_doc,
"reach(counts, targets) -> list[int]\n\n"
"For each of the ascending targets, the first index at which the running sum of counts\n"
"reaches it (len(counts) when it never does): numpy's searchsorted(cumsum(counts), t).");

static PyObject *
reach(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "reach(counts, targets)");
        return NULL;
    }
    Py_buffer counts;
    if (int64_buffer(args[0], &counts, 0, "counts") < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(args[1], "reach: targets must be a sequence");
    PyObject *out = NULL;
    if (seq == NULL)
        goto done;
    Py_ssize_t n_targets = PySequence_Fast_GET_SIZE(seq), n = counts.len / 8, at = 0;
    const int64_t *c = counts.buf;
    int64_t running = n ? c[0] : 0, previous = INT64_MIN;
    out = PyList_New(n_targets);
    for (Py_ssize_t k = 0; out && k < n_targets; k++) {
        long long target = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
        if (target == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
            break;
        }
        if (target < previous) {
            PyErr_SetString(PyExc_ValueError, "reach: targets must ascend");
            Py_CLEAR(out);
            break;
        }
        previous = target;
        while (at < n && running < target) {
            at++;
            running += at < n ? c[at] : 0;
        }
        PyObject *index = PyLong_FromSsize_t(at);
        if (index == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, k, index);
    }
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&counts);
    return out;
}

PyDoc_STRVAR(nonzero_doc,
"nonzero(counts) -> list[int]\n\nThe indices of the counts that are not 0, ascending.");

static PyObject *
nonzero(PyObject *module, PyObject *arg)
{
    Py_buffer counts;
    if (int64_buffer(arg, &counts, 0, "counts") < 0)
        return NULL;
    const int64_t *c = counts.buf;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < counts.len / 8; i++) {
        if (!c[i])
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(out, index) < 0)
            Py_CLEAR(out);
        Py_XDECREF(index);
    }
    PyBuffer_Release(&counts);
    return out;
}

static PyMethodDef methods[] = {
    {"fold", (PyCFunction)(void (*)(void))fold, METH_FASTCALL, fold_doc},
    {"diff", (PyCFunction)(void (*)(void))diff, METH_FASTCALL, diff_doc},
    {"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL, add_doc},
    {"reach", (PyCFunction)(void (*)(void))reach, METH_FASTCALL, reach_doc},
    {"nonzero", nonzero, METH_O, nonzero_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "aiobench.stats._hdrfold",
    .m_doc = "HDR histogram counts filled and read in C (see aiobench/stats/recorders.py).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__hdrfold(void)
{
    return PyModuleDef_Init(&module);
}
