/* One kernel launch as one C call from Python (c_launch.py builds this file with the
 * system C compiler, once per machine and Python version).
 *
 * A `Launch` holds a kernel's cuLaunchKernel arguments that never change (the function,
 * the block, the shared memory, the kernelParams array over its own 8-byte slots, any
 * fixed extra parameters such as TMA descriptors). Calling it as
 *     L(grid_x, grid_y, grid_z, stream, v0, v1, ...)
 * writes each value into its slot as the kernel parameter's C type and calls the driver,
 * all without releasing the GIL: no other Python thread sees the slots between the
 * writes and the driver's copy of them, so no lock is needed. It returns the CUresult;
 * a grid extent that is not an unsigned int returns CUDA_ERROR_INVALID_VALUE (1), as the
 * ctypes path does; a value of the wrong Python type raises TypeError before any write
 * reaches the driver.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned smem, void *stream, void **params, void **extra);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_fn fn;
    void *func;
    unsigned block[3];
    unsigned smem;
    Py_ssize_t nvals;  /* values passed per call */
    char *kinds;       /* per value: a struct-module code (p pointer, b/B h/H i/I q/Q ints, ? bool, f d) */
    uint64_t *slots;   /* nvals 8-byte slots */
    void **params;     /* kernelParams: the slots' addresses, then the fixed extras */
} Launch;

#define MAX_STACK_VALUES 64

static int grid_extent(PyObject *o, unsigned *out) {
    unsigned long long v;
    if (!PyLong_Check(o)) return 0;
    v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    if (v > 0xffffffffULL) return 0;
    *out = (unsigned)v;
    return 1;
}

static int write_slot(char kind, PyObject *o, uint64_t *slot) {
    if (kind == 'f' || kind == 'd') {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        if (kind == 'f') { float f = (float)d; memcpy(slot, &f, sizeof f); }
        else memcpy(slot, &d, sizeof d);
        return 0;
    }
    if (kind == 'p') {
        void *p = PyLong_AsVoidPtr(o);
        if (p == NULL && PyErr_Occurred()) return -1;
        memcpy(slot, &p, sizeof p);
        return 0;
    }
    if (PyFloat_Check(o)) {  /* as ctypes' integer types: no silent truncation of a float */
        PyErr_SetString(PyExc_TypeError, "an integer kernel parameter got a float");
        return -1;
    }
    {
        /* wraps to the parameter's width, as ctypes' integer setters do */
        unsigned long long v = PyLong_AsUnsignedLongLongMask(o);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        switch (kind) {
        case 'b': case 'B': case '?': { uint8_t x = (uint8_t)v; if (kind == '?') x = v != 0; memcpy(slot, &x, 1); break; }
        case 'h': case 'H': { uint16_t x = (uint16_t)v; memcpy(slot, &x, 2); break; }
        case 'i': case 'I': { uint32_t x = (uint32_t)v; memcpy(slot, &x, 4); break; }
        default: memcpy(slot, &v, 8); break;
        }
    }
    return 0;
}

static PyObject *launch_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Launch *self = (Launch *)self_;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), i;
    unsigned g[3];
    void *stream;
    uint64_t local[MAX_STACK_VALUES], *tmp = local;
    int r;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "Launch takes positional arguments only");
        return NULL;
    }
    if (n != 4 + self->nvals) {
        PyErr_Format(PyExc_TypeError, "Launch takes %zd arguments (grid x, y, z, stream, %zd values), got %zd",
                     4 + self->nvals, self->nvals, n);
        return NULL;
    }
    stream = PyLong_AsVoidPtr(args[3]);
    if (stream == NULL && PyErr_Occurred()) return NULL;
    /* converted first into a local copy: a conversion may run Python code (an __index__),
     * which may let another thread launch through this object; from the copy into the
     * slots and the driver call nothing runs Python code */
    if (self->nvals > MAX_STACK_VALUES) {
        tmp = PyMem_Malloc(self->nvals * sizeof(uint64_t));
        if (tmp == NULL) return PyErr_NoMemory();
    }
    memset(tmp, 0, self->nvals * sizeof(uint64_t));
    for (i = 0; i < self->nvals; i++)
        if (write_slot(self->kinds[i], args[4 + i], &tmp[i]) < 0) goto fail;
    for (i = 0; i < 3; i++)
        if (!grid_extent(args[i], &g[i])) { r = 1; goto done; }  /* CUDA_ERROR_INVALID_VALUE */
    memcpy(self->slots, tmp, self->nvals * sizeof(uint64_t));
    r = self->fn(self->func, g[0], g[1], g[2], self->block[0], self->block[1], self->block[2], self->smem, stream,
                 self->params, NULL);
done:
    if (tmp != local) PyMem_Free(tmp);
    return PyLong_FromLong(r);
fail:
    if (tmp != local) PyMem_Free(tmp);
    return NULL;
}

static void launch_dealloc(PyObject *self_) {
    Launch *self = (Launch *)self_;
    PyMem_Free(self->kinds);
    PyMem_Free(self->slots);
    PyMem_Free(self->params);
    Py_TYPE(self_)->tp_free(self_);
}

static int launch_init(PyObject *self_, PyObject *args, PyObject *kw) {
    /* Launch(fn address, function handle, bx, by, bz, smem, kinds, extras: tuple of addresses) */
    Launch *self = (Launch *)self_;
    unsigned long long fn, func;
    unsigned bx, by, bz, smem;
    const char *kinds;
    PyObject *extras;
    Py_ssize_t nk, ne, i;
    if (!PyArg_ParseTuple(args, "KKIIIIsO!", &fn, &func, &bx, &by, &bz, &smem, &kinds, &PyTuple_Type, &extras))
        return -1;
    if (fn == 0) {
        PyErr_SetString(PyExc_ValueError, "Launch: the launch function's address is 0");
        return -1;
    }
    nk = (Py_ssize_t)strlen(kinds);
    for (i = 0; i < nk; i++)
        if (!strchr("pbBhHiIqQ?fd", kinds[i])) {
            PyErr_Format(PyExc_ValueError, "Launch: unknown parameter kind '%c'", kinds[i]);
            return -1;
        }
    ne = PyTuple_GET_SIZE(extras);
    PyMem_Free(self->kinds); PyMem_Free(self->slots); PyMem_Free(self->params);  /* __init__ called again */
    self->kinds = NULL; self->slots = NULL; self->params = NULL;
    self->fn = (launch_fn)(uintptr_t)fn;
    self->func = (void *)(uintptr_t)func;
    self->block[0] = bx; self->block[1] = by; self->block[2] = bz;
    self->smem = smem;
    self->nvals = nk;
    self->kinds = PyMem_Malloc(nk + 1);
    self->slots = PyMem_Calloc(nk ? nk : 1, sizeof(uint64_t));
    self->params = PyMem_Calloc(nk + ne ? nk + ne : 1, sizeof(void *));
    if (!self->kinds || !self->slots || !self->params) { PyErr_NoMemory(); return -1; }
    memcpy(self->kinds, kinds, nk + 1);
    for (i = 0; i < nk; i++) self->params[i] = &self->slots[i];
    for (i = 0; i < ne; i++) {
        void *p = PyLong_AsVoidPtr(PyTuple_GET_ITEM(extras, i));
        if (p == NULL && PyErr_Occurred()) return -1;
        self->params[nk + i] = p;
    }
    self->vectorcall = launch_vectorcall;
    return 0;
}

static PyObject *launch_params(PyObject *self_, PyObject *unused) {
    /* the kernelParams array's address (for tests) */
    return PyLong_FromVoidPtr(((Launch *)self_)->params);
}

static PyMethodDef launch_methods[] = {
    {"params_address", launch_params, METH_NOARGS, "the kernelParams array's address"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tl_c_launch.Launch",
    .tp_basicsize = sizeof(Launch),
    .tp_dealloc = launch_dealloc,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "a kernel launch: Launch(fn, func, bx, by, bz, smem, kinds, extras)(gx, gy, gz, stream, *values)",
    .tp_methods = launch_methods,
    .tp_init = launch_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tl_c_launch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__tl_c_launch(void) {
    PyObject *m;
    if (PyType_Ready(&LaunchType) < 0) return NULL;
    m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&LaunchType);
    if (PyModule_AddObject(m, "Launch", (PyObject *)&LaunchType) < 0) {
        Py_DECREF(&LaunchType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
