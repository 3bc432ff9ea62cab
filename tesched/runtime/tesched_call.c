/* tesched_call: the checked call path of compiled kernels and graph executables, in one C pass.
 *
 * A *program* is made once per kernel (or executable, or prepared call) from plain Python data:
 *   - argument specs: per argument the buffer format and item size it must have, its dimensions (a
 *     fixed extent, or -(p+1) for symbolic size p, bound from the first argument that has it), whether
 *     it is written (writable, and overlapping no other argument), and the pointer slot it fills;
 *   - fixed slots: addresses known in advance (constants, intermediate buffers of an executable);
 *   - steps: C functions to call in order, each with its arguments as slot numbers (>= 0) or symbolic
 *     sizes (-(p+1)); every function takes them as one array (its argv form), so none has an argument limit.
 * run(program, args) takes each argument through the buffer protocol (C-contiguous, format, shape,
 * writability), checks outputs against overlap, then calls every step with the GIL released. It returns
 * True when it ran, False when an argument did not pass (no exception is left set: the caller's slow path
 * says precisely what is wrong, or converts an argument that has no buffer, such as a DLPack tensor).
 *
 * A step receives an array of pointers: a slot's address, or the address of a symbolic size's int64_t
 * value. This file checks and calls; it knows nothing of how kernels are generated.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define FORMAT_LEN 8

typedef struct {
    char format[FORMAT_LEN];
    Py_ssize_t itemsize;
    int ndim;
    int64_t *dims;
    int writable;
    int slot;
} ArgSpec;

/* Every step is a function int fn(void *const *args) (the argv companion tesched generates beside each
   kernel, graph entry and external function, see tesched/codegen/argv.py): args[k] is slot k's pointer,
   or the address of a symbolic size's value. It returns 0, or a status the caller turns into an error. */
typedef int (*ArgvFunction)(void *const *);

typedef struct {
    ArgvFunction fn;
    int nargs;
    int *args;
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
    for (int k = 0; p->specs != NULL && k < p->n_args; k++) PyMem_Free(p->specs[k].dims);
    for (int k = 0; p->steps != NULL && k < p->n_steps; k++) PyMem_Free(p->steps[k].args);
    PyMem_Free(p->specs);
    PyMem_Free(p->fixed);
    PyMem_Free(p->steps);
    PyMem_Free(p);
}

/* The integers of sequence seq in a new array *out (PyMem_Free it); returns their count, or -1. */
static int parse_int_list(PyObject *seq, int64_t **out, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    *out = PyMem_Calloc(n + 1, sizeof(int64_t));
    if (*out == NULL) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        (*out)[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, k));
        if ((*out)[k] == -1 && PyErr_Occurred()) { Py_DECREF(fast); return -1; }
    }
    Py_DECREF(fast);
    return (int)n;
}

/* make(specs, fixed, steps, n_params, exclusive): specs is a sequence of (format, itemsize, dims, writable,
 * slot); fixed a sequence of n_slots addresses (0: filled by an argument); steps a sequence of (fn, args),
 * fn the address of an argv function;
 * exclusive: the program writes buffers of its own, so two threads may not run it at once. */
static PyObject *make(PyObject *self, PyObject *args) {
    PyObject *specs, *fixed, *steps;
    int n_params, exclusive;
    if (!PyArg_ParseTuple(args, "OOOip", &specs, &fixed, &steps, &n_params, &exclusive)) return NULL;
    if (n_params < 0) {
        PyErr_SetString(PyExc_ValueError, "a negative count of symbolic sizes");
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
            s->ndim = parse_int_list(dims, &s->dims, "argument dimensions");
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
        int64_t *values = NULL;
        if (item == NULL) goto fail;
        int ok = PyArg_ParseTuple(item, "OO", &fn, &step_args);
        if (ok) {
            st->fn = (ArgvFunction)PyLong_AsVoidPtr(fn);
            ok = !PyErr_Occurred() && st->fn != NULL;
            if (ok) st->nargs = parse_int_list(step_args, &values, "kernel arguments");
            ok = ok && st->nargs >= 0;
        }
        Py_DECREF(item);
        if (ok) {
            st->args = PyMem_Calloc(st->nargs + 1, sizeof(int));
            if (st->args == NULL) PyErr_NoMemory();
            ok = st->args != NULL;
        }
        for (int a = 0; ok && a < st->nargs; a++) {
            if (values[a] >= p->n_slots || values[a] < -n_params) {
                PyErr_SetString(PyExc_ValueError, "kernel argument out of range");
                ok = 0;
            } else {
                st->args[a] = (int)values[a];
            }
        }
        PyMem_Free(values);
        if (!ok) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a step needs a function address");
            goto fail;
        }
    }
    return capsule;
fail:
    Py_DECREF(capsule);
    return NULL;
}

/* Call one step; returns its status. */
static int call_step(const Step *st, void **slots, int64_t *params) {
    void *a[st->nargs > 0 ? st->nargs : 1];
    for (int k = 0; k < st->nargs; k++) {
        int v = st->args[k];
        a[k] = v >= 0 ? slots[v] : (void *)&params[-v - 1];
    }
    return st->fn(a);
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

static void release_scratch(void **slots, void **slots_local, Py_buffer *views,
                            Py_buffer *views_local, int64_t *params, int64_t *params_local, int *bound,
                            int *bound_local) {
    if (slots != slots_local) PyMem_Free(slots);
    if (views != views_local) PyMem_Free(views);
    if (params != params_local) PyMem_Free(params);
    if (bound != bound_local) PyMem_Free(bound);
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
    /* slots, buffer views, symbolic sizes and their bound flags: on the stack for small programs */
    void *slots_local[256];
    Py_buffer views_local[32];
    int64_t params_local[16];
    int bound_local[16];
    void **slots = p->n_slots <= 256 ? slots_local : PyMem_Malloc(sizeof(void *) * p->n_slots);
    Py_buffer *views = p->n_args <= 32 ? views_local : PyMem_Malloc(sizeof(Py_buffer) * p->n_args);
    int64_t *params = p->n_params <= 16 ? params_local : PyMem_Malloc(sizeof(int64_t) * p->n_params);
    int *bound = p->n_params <= 16 ? bound_local : PyMem_Malloc(sizeof(int) * p->n_params);
    if (slots == NULL || views == NULL || params == NULL || bound == NULL) {
        release_scratch(slots, slots_local, views, views_local, params, params_local, bound, bound_local);
        return PyErr_NoMemory();
    }
    memcpy(slots, p->fixed, sizeof(void *) * p->n_slots);
    memset(bound, 0, sizeof(int) * (p->n_params > 0 ? p->n_params : 0));
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
    release_scratch(slots, slots_local, views, views_local, params, params_local, bound, bound_local);
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
