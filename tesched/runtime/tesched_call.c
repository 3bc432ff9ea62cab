/* tesched_call: the checked call path of compiled kernels and graph executables, in one C pass.
 *
 * A *program* is made once per kernel (or executable, or prepared call) from plain Python data:
 *   - argument specs: per argument the buffer format and item size it must have, its dimensions (a
 *     fixed extent, or -(p+1) for symbolic size p, bound from the first argument that has it), whether
 *     it is written (writable, and overlapping no other argument), and the pointer slot it fills;
 *   - fixed slots: addresses known in advance (constants, intermediate buffers of an executable);
 *   - steps: C functions to call in order, each with its arguments as slot numbers (>= 0) or symbolic
 *     sizes (-(p+1)).
 * run(program, args) takes each argument through the buffer protocol (C-contiguous, format, shape,
 * writability), checks outputs against overlap, then calls every step with the GIL released. It returns
 * True when it ran, False when an argument did not pass (no exception is left set: the caller's slow path
 * says precisely what is wrong, or converts an argument that has no buffer, such as a DLPack tensor).
 *
 * Every pointer and symbolic size is passed as one machine word: on the x86-64 and AArch64 calling
 * conventions a kernel taking (float *, ..., int64_t, ...) receives the same registers and stack slots.
 * This file checks and calls; it knows nothing of how kernels are generated.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_ARGS 64
#define MAX_DIMS 16
#define MAX_PARAMS 16
#define MAX_STEP_ARGS 24
#define FORMAT_LEN 8

typedef struct {
    char format[FORMAT_LEN];
    Py_ssize_t itemsize;
    int ndim;
    int64_t dims[MAX_DIMS];
    int writable;
    int slot;
} ArgSpec;

typedef struct {
    intptr_t fn;
    int checked;      /* the function returns an int status (a tesched kernel: 0, or a failed allocation) */
    int nargs;
    int args[MAX_STEP_ARGS];
} Step;

typedef struct {
    int n_args, n_slots, n_params, n_steps;
    int exclusive, busy;
    ArgSpec *specs;
    void **fixed;     /* n_slots entries; NULL where an argument fills the slot */
    Step *steps;
} Program;

static const char *CAPSULE = "tesched.program";

static void program_free(PyObject *capsule) {
    Program *p = (Program *)PyCapsule_GetPointer(capsule, CAPSULE);
    if (p == NULL) return;
    PyMem_Free(p->specs);
    PyMem_Free(p->fixed);
    PyMem_Free(p->steps);
    PyMem_Free(p);
}

static int parse_int_list(PyObject *seq, int64_t *out, int max, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > max) {
        PyErr_Format(PyExc_ValueError, "%s: %zd entries, at most %d are supported", what, n, max);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        out[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, k));
        if (out[k] == -1 && PyErr_Occurred()) { Py_DECREF(fast); return -1; }
    }
    Py_DECREF(fast);
    return (int)n;
}

/* make(specs, fixed, steps, n_params, exclusive): specs is a sequence of (format, itemsize, dims, writable,
 * slot); fixed a sequence of n_slots addresses (0: filled by an argument); steps a sequence of (fn, args);
 * exclusive: the program writes buffers of its own, so two threads may not run it at once. */
static PyObject *make(PyObject *self, PyObject *args) {
    PyObject *specs, *fixed, *steps;
    int n_params, exclusive;
    if (!PyArg_ParseTuple(args, "OOOip", &specs, &fixed, &steps, &n_params, &exclusive)) return NULL;
    if (n_params < 0 || n_params > MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "at most %d symbolic sizes are supported", MAX_PARAMS);
        return NULL;
    }
    Program *p = PyMem_Calloc(1, sizeof(Program));
    if (p == NULL) return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(p, CAPSULE, program_free);
    if (capsule == NULL) { PyMem_Free(p); return NULL; }
    p->n_params = n_params;
    p->exclusive = exclusive;
    p->n_args = (int)PySequence_Size(specs);
    p->n_slots = (int)PySequence_Size(fixed);
    p->n_steps = (int)PySequence_Size(steps);
    if (p->n_args < 0 || p->n_slots < 0 || p->n_steps < 0) goto fail;
    if (p->n_args > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "at most %d arguments are supported", MAX_ARGS);
        goto fail;
    }
    p->specs = PyMem_Calloc(p->n_args + 1, sizeof(ArgSpec));
    p->fixed = PyMem_Calloc(p->n_slots + 1, sizeof(void *));
    p->steps = PyMem_Calloc(p->n_steps + 1, sizeof(Step));
    if (!p->specs || !p->fixed || !p->steps) { PyErr_NoMemory(); goto fail; }
    for (int k = 0; k < p->n_args; k++) {
        ArgSpec *s = &p->specs[k];
        PyObject *item = PySequence_GetItem(specs, k), *dims;
        const char *format;
        if (item == NULL) goto fail;
        int ok = PyArg_ParseTuple(item, "snOii", &format, &s->itemsize, &dims, &s->writable, &s->slot);
        if (ok && strlen(format) >= FORMAT_LEN) {
            PyErr_SetString(PyExc_ValueError, "buffer format too long");
            ok = 0;
        }
        if (ok) {
            strcpy(s->format, format);
            s->ndim = parse_int_list(dims, s->dims, MAX_DIMS, "argument dimensions");
            ok = s->ndim >= 0;
        }
        Py_DECREF(item);
        if (!ok) goto fail;
        if (s->slot < 0 || s->slot >= p->n_slots) {
            PyErr_SetString(PyExc_ValueError, "argument slot out of range");
            goto fail;
        }
        for (int d = 0; d < s->ndim; d++) {
            if (s->dims[d] < -n_params) {
                PyErr_SetString(PyExc_ValueError, "symbolic size out of range");
                goto fail;
            }
        }
    }
    for (int k = 0; k < p->n_slots; k++) {
        PyObject *item = PySequence_GetItem(fixed, k);
        if (item == NULL) goto fail;
        p->fixed[k] = PyLong_AsVoidPtr(item);
        Py_DECREF(item);
        if (PyErr_Occurred()) goto fail;
    }
    for (int k = 0; k < p->n_steps; k++) {
        Step *st = &p->steps[k];
        PyObject *item = PySequence_GetItem(steps, k), *fn, *step_args;
        int64_t values[MAX_STEP_ARGS];
        if (item == NULL) goto fail;
        int ok = PyArg_ParseTuple(item, "OOp", &fn, &step_args, &st->checked);
        if (ok) {
            st->fn = (intptr_t)PyLong_AsVoidPtr(fn);
            ok = !PyErr_Occurred() && st->fn != 0;
            if (ok) st->nargs = parse_int_list(step_args, values, MAX_STEP_ARGS, "kernel arguments");
            ok = ok && st->nargs >= 0;
        }
        Py_DECREF(item);
        if (!ok) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a step needs a function address");
            goto fail;
        }
        for (int a = 0; a < st->nargs; a++) {
            if (values[a] >= p->n_slots || values[a] < -n_params) {
                PyErr_SetString(PyExc_ValueError, "kernel argument out of range");
                goto fail;
            }
            st->args[a] = (int)values[a];
        }
    }
    return capsule;
fail:
    Py_DECREF(capsule);
    return NULL;
}

typedef intptr_t W;

#define CALL_CASES \
    switch (st->nargs) { \
    case 0: R F(void)(); break; \
    case 1: R F(W)(a[0]); break; \
    case 2: R F(W, W)(a[0], a[1]); break; \
    case 3: R F(W, W, W)(a[0], a[1], a[2]); break; \
    case 4: R F(W, W, W, W)(a[0], a[1], a[2], a[3]); break; \
    case 5: R F(W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4]); break; \
    case 6: R F(W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5]); break; \
    case 7: R F(W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break; \
    case 8: R F(W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break; \
    case 9: R F(W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break; \
    case 10: R F(W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break; \
    case 11: R F(W, W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); \
        break; \
    case 12: R F(W, W, W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], \
                                                  a[11]); break; \
    case 13: R F(W, W, W, W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], \
                                                     a[10], a[11], a[12]); break; \
    case 14: R F(W, W, W, W, W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], \
                                                        a[10], a[11], a[12], a[13]); break; \
    case 15: R F(W, W, W, W, W, W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], \
                                                           a[9], a[10], a[11], a[12], a[13], a[14]); break; \
    case 16: R F(W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], \
                                                              a[9], a[10], a[11], a[12], a[13], a[14], a[15]); break; \
    default: { \
        /* 17 to MAX_STEP_ARGS words: pass all of them; a callee ignores the trailing ones */ \
        for (int k = st->nargs; k < MAX_STEP_ARGS; k++) a[k] = 0; \
        R F(W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W, W)( \
            a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], \
            a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23]); \
    } \
    }

/* Call one step; returns its status (0 for a function that returns none). */
static int call_step(const Step *st, void **slots, const int64_t *params) {
    W a[MAX_STEP_ARGS];
    for (int k = 0; k < st->nargs; k++) {
        int v = st->args[k];
        a[k] = v >= 0 ? (W)slots[v] : (W)params[-v - 1];
    }
    int status = 0;
    if (st->checked) {
#define F(...) ((int (*)(__VA_ARGS__))st->fn)
#define R status =
        CALL_CASES
#undef R
#undef F
    } else {
#define F(...) ((void (*)(__VA_ARGS__))st->fn)
#define R
        CALL_CASES
#undef R
#undef F
    }
    return status;
}

/* Whether argument k's buffer matches its spec; binds symbolic sizes on first sight. */
static int matches(const ArgSpec *s, const Py_buffer *b, int64_t *params, int *bound) {
    if (b->itemsize != s->itemsize || b->ndim != s->ndim || b->format == NULL || strcmp(b->format, s->format) != 0)
        return 0;
    for (int d = 0; d < s->ndim; d++) {
        int64_t want = s->dims[d], got = (int64_t)b->shape[d];
        if (want >= 0) {
            if (got != want) return 0;
        } else {
            int q = (int)(-want - 1);
            if (bound[q] && params[q] != got) return 0;
            if (got < 1) return 0;
            params[q] = got;
            bound[q] = 1;
        }
    }
    return 1;
}

static int overlaps(const Py_buffer *a, const Py_buffer *b) {
    if (a->len == 0 || b->len == 0) return 0;
    const char *a0 = a->buf, *b0 = b->buf;
    return a0 < b0 + b->len && b0 < a0 + a->len;
}

/* run(program, args) -> True (ran), False (an argument did not pass the checks), or (step, status) when a
   step returned a nonzero status (the steps after it did not run) */
static PyObject *run(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 2 || !PyTuple_Check(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "run(program, args: tuple)");
        return NULL;
    }
    Program *p = (Program *)PyCapsule_GetPointer(argv[0], CAPSULE);
    if (p == NULL) return NULL;
    PyObject *args = argv[1];
    if (PyTuple_GET_SIZE(args) != p->n_args) Py_RETURN_FALSE;
    if (p->exclusive && p->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this kernel program is already running in another thread; an "
                                            "executable reuses its buffers, so build one per thread");
        return NULL;
    }
    Py_buffer views[MAX_ARGS];
    void *slots_local[256];
    void **slots = p->n_slots <= 256 ? slots_local : PyMem_Malloc(sizeof(void *) * p->n_slots);
    if (slots == NULL) return PyErr_NoMemory();
    memcpy(slots, p->fixed, sizeof(void *) * p->n_slots);
    int64_t params[MAX_PARAMS];
    int bound[MAX_PARAMS] = {0};
    int taken = 0, ok = 1;
    for (int k = 0; k < p->n_args && ok; k++) {
        const ArgSpec *s = &p->specs[k];
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (s->writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, k), &views[k], flags) != 0) {
            PyErr_Clear();
            ok = 0;
            break;
        }
        taken = k + 1;
        ok = matches(s, &views[k], params, bound);
        slots[s->slot] = views[k].buf;
    }
    for (int q = 0; q < p->n_params && ok; q++) ok = bound[q];
    for (int k = 0; k < p->n_args && ok; k++) {
        if (!p->specs[k].writable) continue;
        for (int j = 0; j < p->n_args && ok; j++) {
            if (j != k && overlaps(&views[k], &views[j])) ok = 0;
        }
    }
    int failed_step = -1, status = 0;
    if (ok) {
        p->busy = p->exclusive;
        Py_BEGIN_ALLOW_THREADS
        for (int k = 0; k < p->n_steps && status == 0; k++) {
            status = call_step(&p->steps[k], slots, params);
            if (status != 0) failed_step = k;
        }
        Py_END_ALLOW_THREADS
        p->busy = 0;
    }
    for (int k = 0; k < taken; k++) PyBuffer_Release(&views[k]);
    if (slots != slots_local) PyMem_Free(slots);
    if (failed_step >= 0) return Py_BuildValue("(ii)", failed_step, status);
    if (ok) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "make(specs, fixed, steps, n_params, exclusive) -> program"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL, "run(program, args) -> bool"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tesched_call", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tesched_call(void) { return PyModule_Create(&module); }
