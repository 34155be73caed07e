/* The lean paths' checks in C: fastpath.py's functions, one for one, with
 * the same arguments, results and order of what each reads or calls (the
 * Python ones are the reference: tests/test_fastpath.py holds the two
 * against each other). Built by fastpath.load() with the system's C
 * compiler against this interpreter's headers; nothing here keeps a
 * reference past its call or changes an object it is given.
 *
 * Each check reads only through the C API's generic calls (attributes,
 * calls, comparisons), so a tensor, a weak reference or a dict subclass
 * behaves as it does in Python. A refcount is read as Python's
 * sys.getrefcount(o) reads it with o a local: the callers' constants are
 * the reference's. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>

#define API_VERSION 2

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *
Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#endif

/* The lean tuple of a steady replay (hooks._steady) and the armed tuple
 * of a lean fresh call (freshq._fq_arm): the positions read, as
 * fastpath.py names them. */
enum { L_FID, L_PLAN, L_MREF, L_LOW, L_NIN, L_IN_REFS, L_IN_PTRS, L_IN_IDX, L_POLLED, L_USES,
       L_NODE_REF, L_NOUT, L_CKPT, L_OUT_REFS, L_WRAPPERS, L_LEN };
enum { A_CLS = 13, A_DT, A_SHAPE, A_STRIDE, A_DEV, A_NBYTES, A_NODE_REF = 23, A_CKPT, A_OUT_REF,
       A_TREE_REF, A_LEN };

static PyObject *s_use_count, *s_debug_ckpt, *s_outputs_weakrefs, *s_src_lasti, *s_src_of, *s_get,
    *s_class, *s_layout, *s_dtype, *s_shape, *s_stride, *s_storage_offset, *s_get_device,
    *s_untyped_storage, *s_cdata, *s_fact, *s_obj_ref, *s_nbytes, *s_wr, *s_gone, *s_f_lasti, *s_kind,
    *s_out, *s_alive, *s_sref, *s_expired;
static PyObject *zero, *one;

/* r(): a weak reference's object, or any callable's result. New reference. */
static PyObject *
deref(PyObject *r)
{
    if (PyWeakref_CheckRefExact(r)) {
#if PY_VERSION_HEX >= 0x030D0000
        PyObject *o;
        if (PyWeakref_GetRef(r, &o) < 0)
            return NULL;
        if (o == NULL)
            Py_RETURN_NONE;
        return o;
#else
        PyObject *o = PyWeakref_GetObject(r);
        if (o == NULL)
            return NULL;
        Py_INCREF(o);
        return o;
#endif
    }
    return PyObject_CallNoArgs(r);
}

/* r() is o: 1, 0, or -1 with an exception. */
static int
deref_is(PyObject *r, PyObject *o)
{
    PyObject *x = deref(r);
    if (x == NULL)
        return -1;
    int same = x == o;
    Py_DECREF(x);
    return same;
}

/* a op b, as Python's expression (no identity shortcut): 1, 0, -1. */
static int
compare(PyObject *a, PyObject *b, int op)
{
    PyObject *r = PyObject_RichCompare(a, b, op);
    if (r == NULL)
        return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* len(seq) == n for a Python int n: 1, 0, -1. */
static int
len_is(PyObject *seq, PyObject *n)
{
    Py_ssize_t k = PyObject_Length(seq);
    if (k < 0)
        return -1;
    PyObject *kk = PyLong_FromSsize_t(k);
    if (kk == NULL)
        return -1;
    int t = compare(kk, n, Py_EQ);
    Py_DECREF(kk);
    return t;
}

/* all(map(is_, map(call, refs), objs)): refs and objs in step, to the
 * shorter's end. 1, 0, -1. */
static int
all_deref_is(PyObject *refs, PyObject *objs)
{
    PyObject *rf = PySequence_Fast(refs, "not a sequence");
    if (rf == NULL)
        return -1;
    PyObject *of = PySequence_Fast(objs, "not a sequence");
    if (of == NULL) {
        Py_DECREF(rf);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rf), m = PySequence_Fast_GET_SIZE(of);
    int t = 1;
    for (Py_ssize_t i = 0; i < n && i < m && t == 1; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(of, i);
        Py_INCREF(o);
        t = deref_is(PySequence_Fast_GET_ITEM(rf, i), o);
        Py_DECREF(o);
    }
    Py_DECREF(rf);
    Py_DECREF(of);
    return t;
}

/* list(map(fn, items)) == want: 1, 0, -1. */
static int
mapped_eq(PyObject *fn, PyObject *items, PyObject *want)
{
    PyObject *it = PyObject_GetIter(items);
    if (it == NULL)
        return -1;
    PyObject *got = PyList_New(0), *x;
    if (got == NULL) {
        Py_DECREF(it);
        return -1;
    }
    while ((x = PyIter_Next(it)) != NULL) {
        PyObject *y = fn == NULL ? PyObject_CallNoArgs(x) : PyObject_CallOneArg(fn, x);
        Py_DECREF(x);
        if (y == NULL || PyList_Append(got, y) < 0) {
            Py_XDECREF(y);
            Py_DECREF(got);
            Py_DECREF(it);
            return -1;
        }
        Py_DECREF(y);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        Py_DECREF(got);
        return -1;
    }
    int t = compare(got, want, Py_EQ);
    Py_DECREF(got);
    return t;
}

/* The pointer check: ptrs_equal(inputs, full, idx) when torch has it, else
 * list(map(data_ptr, items)) == ptrs. 1, 0, -1. */
static int
ptrs_same(PyObject *ptrs_equal, PyObject *inputs, PyObject *full, PyObject *idx, PyObject *data_ptr,
          PyObject *items, PyObject *ptrs)
{
    if (ptrs_equal != Py_None) {
        PyObject *r = PyObject_CallFunctionObjArgs(ptrs_equal, inputs, full, idx, NULL);
        if (r == NULL)
            return -1;
        int t = PyObject_IsTrue(r);
        Py_DECREF(r);
        return t;
    }
    return mapped_eq(data_ptr, items, ptrs);
}

/* sys.getrefcount(o) as Python reads it with o a local (one more for the
 * local, one more for the argument), o held here by one reference. */
static Py_ssize_t
py_refcount(PyObject *o)
{
    return Py_REFCNT(o) + 1;
}

/* o._use_count() > 1: 1, 0, -1. */
static int
used_twice(PyObject *o)
{
    PyObject *u = PyObject_CallMethodNoArgs(o, s_use_count);
    if (u == NULL)
        return -1;
    int t = compare(u, one, Py_GT);
    Py_DECREF(u);
    return t;
}

static int
check_tuple(PyObject *t, Py_ssize_t n, const char *what)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < n) {
        PyErr_Format(PyExc_TypeError, "%s: a tuple of %zd items expected", what, n);
        return -1;
    }
    return 0;
}

#define TRY(x)                                                                                        \
    do {                                                                                              \
        int t_ = (x);                                                                                 \
        if (t_ < 0)                                                                                   \
            goto error;                                                                               \
        if (t_ == 0)                                                                                  \
            goto no;                                                                                  \
    } while (0)

static PyObject *
steady_ok(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "steady_ok takes 11 arguments");
        return NULL;
    }
    PyObject *lean = args[0], *function_id = args[1], *mgr = args[2], *new_inputs = args[3], *c = args[4],
             *mc = args[5], *left = args[6], *probed = args[7], *dead_objs = args[8],
             *ptrs_equal = args[9], *data_ptr = args[10];
    if (check_tuple(lean, L_LEN, "steady_ok: lean") < 0)
        return NULL;
    PyObject *o = NULL;
    if (function_id != PyTuple_GET_ITEM(lean, L_FID))
        goto no;
    TRY(compare(PyTuple_GET_ITEM(lean, L_LOW), c, Py_LE));
    TRY(compare(c, mc, Py_LE));
    int t = compare(left, zero, Py_GT);
    if (t < 0)
        goto error;
    if (t == 0)
        TRY(PyObject_IsTrue(probed));
    TRY(deref_is(PyTuple_GET_ITEM(lean, L_MREF), mgr));
    TRY(len_is(new_inputs, PyTuple_GET_ITEM(lean, L_NIN)));
    TRY(all_deref_is(PyTuple_GET_ITEM(lean, L_IN_REFS), new_inputs));
    TRY(ptrs_same(ptrs_equal, new_inputs, PyTuple_GET_ITEM(lean, L_IN_PTRS), PyTuple_GET_ITEM(lean, L_IN_IDX),
                  data_ptr, new_inputs, PyTuple_GET_ITEM(lean, L_IN_PTRS)));
    t = PyObject_IsTrue(dead_objs);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    PyObject *polled = PyTuple_GET_ITEM(lean, L_POLLED);
    if (polled != Py_None) {
        int uses = PyObject_IsTrue(PyTuple_GET_ITEM(lean, L_USES));
        if (uses < 0)
            goto error;
        PyObject *pf = PySequence_Fast(polled, "polled: not a sequence");
        if (pf == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(pf); i++) {
            o = deref(PySequence_Fast_GET_ITEM(pf, i));
            if (o == NULL) {
                Py_DECREF(pf);
                goto error;
            }
            Py_ssize_t n = o == Py_None ? 0 : py_refcount(o);
            int dead = n <= 3;
            if (!dead && n == 4 && uses) {
                dead = used_twice(o);
                if (dead < 0) {
                    Py_DECREF(pf);
                    goto error;
                }
            }
            Py_CLEAR(o);
            if (dead) {
                Py_DECREF(pf);
                goto no;
            }
        }
        Py_DECREF(pf);
    }
    Py_RETURN_TRUE;
no:
    Py_RETURN_FALSE;
error:
    Py_XDECREF(o);
    return NULL;
}

static PyObject *
steady_after(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "steady_after takes 6 arguments");
        return NULL;
    }
    PyObject *lean = args[0], *out = args[1], *node = args[2], *other = args[3], *mgr = args[4],
             *dead_objs = args[5];
    if (check_tuple(lean, L_LEN, "steady_after: lean") < 0)
        return NULL;
    PyObject *x = NULL;
    int t = PyObject_IsTrue(other);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    TRY(deref_is(PyTuple_GET_ITEM(lean, L_NODE_REF), node));
    if (!PyList_CheckExact(out))
        goto no;
    TRY(len_is(out, PyTuple_GET_ITEM(lean, L_NOUT)));
    x = PyObject_GetAttr(mgr, s_debug_ckpt);
    if (x == NULL)
        goto error;
    TRY(compare(x, PyTuple_GET_ITEM(lean, L_CKPT), Py_EQ));
    Py_CLEAR(x);
    t = PyObject_IsTrue(dead_objs);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    TRY(all_deref_is(PyTuple_GET_ITEM(lean, L_OUT_REFS), out));
    x = PyObject_GetAttr(node, s_outputs_weakrefs);
    if (x == NULL)
        goto error;
    TRY(compare(x, PyTuple_GET_ITEM(lean, L_WRAPPERS), Py_EQ));
    Py_CLEAR(x);
    Py_RETURN_TRUE;
no:
    Py_XDECREF(x);
    Py_RETURN_FALSE;
error:
    Py_XDECREF(x);
    return NULL;
}

/* The frame depth frames above the calling Python function's (0: its own),
 * as sys._getframe(depth) would find it there. New reference, or NULL
 * without an exception when the stack is shallower. */
static PyFrameObject *
frame_up(Py_ssize_t depth)
{
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f != NULL && depth-- > 0) {
        PyFrameObject *b = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = b;
    }
    return f;
}

/* f.f_lasti. New reference. */
static PyObject *
frame_lasti(PyFrameObject *f)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyLong_FromLong(PyFrame_GetLasti(f));
#else
    return PyObject_GetAttr((PyObject *)f, s_f_lasti);
#endif
}

/* d.get(key) (None when absent), or, with dflt, d.get(key, dflt). New
 * reference. */
static PyObject *
dict_get(PyObject *d, PyObject *key, PyObject *dflt)
{
    if (PyDict_CheckExact(d)) {
        PyObject *v = PyDict_GetItemWithError(d, key);
        if (v == NULL) {
            if (PyErr_Occurred())
                return NULL;
            v = dflt == NULL ? Py_None : dflt;
        }
        Py_INCREF(v);
        return v;
    }
    if (dflt == NULL)
        return PyObject_CallMethodOneArg(d, s_get, key);
    return PyObject_CallMethodObjArgs(d, s_get, key, dflt, NULL);
}

/* Whether f is of the code code_ref refers to: 1, 0, -1. */
static int
frame_of(PyFrameObject *f, PyObject *code_ref)
{
    PyObject *code = (PyObject *)PyFrame_GetCode(f);
    int t = deref_is(code_ref, code);
    Py_DECREF(code);
    return t;
}

static PyObject *
frame_src(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "frame_src takes 3 arguments");
        return NULL;
    }
    Py_ssize_t depth = PyLong_AsSsize_t(args[0]);
    if (depth == -1 && PyErr_Occurred())
        return NULL;
    PyObject *code_ref = args[1], *plan = args[2], *lasti = NULL, *map = NULL, *src = NULL;
    PyFrameObject *f = frame_up(depth);
    if (f == NULL)
        Py_RETURN_NONE;
    int t = frame_of(f, code_ref);
    if (t <= 0) {
        Py_DECREF(f);
        if (t < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if ((map = PyObject_GetAttr(plan, s_src_lasti)) == NULL || (lasti = frame_lasti(f)) == NULL
        || (src = dict_get(map, lasti, NULL)) == NULL)
        goto done;
    if (src == Py_None) {
        Py_DECREF(src);
        src = PyObject_CallMethodOneArg(plan, s_src_of, (PyObject *)f);
    }
done:
    Py_DECREF(f);
    Py_XDECREF(map);
    Py_XDECREF(lasti);
    return src;
}

static PyObject *
probes_same(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "probes_same takes 2 arguments");
        return NULL;
    }
    int t = mapped_eq(NULL, args[0], args[1]);
    if (t < 0)
        return NULL;
    return PyBool_FromLong(t);
}

/* all(map(is_, map(call, refs), map(inputs.__getitem__, kept))). */
static int
kept_is(PyObject *refs, PyObject *inputs, PyObject *kept)
{
    PyObject *rf = PySequence_Fast(refs, "refs: not a sequence");
    if (rf == NULL)
        return -1;
    PyObject *kf = PySequence_Fast(kept, "kept: not a sequence");
    if (kf == NULL) {
        Py_DECREF(rf);
        return -1;
    }
    int t = 1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rf), m = PySequence_Fast_GET_SIZE(kf);
    for (Py_ssize_t i = 0; i < n && i < m && t == 1; i++) {
        PyObject *r = deref(PySequence_Fast_GET_ITEM(rf, i));
        if (r == NULL) {
            t = -1;
            break;
        }
        PyObject *v = PyObject_GetItem(inputs, PySequence_Fast_GET_ITEM(kf, i));
        if (v == NULL)
            t = -1;
        else
            t = r == v;
        Py_DECREF(r);
        Py_XDECREF(v);
    }
    Py_DECREF(rf);
    Py_DECREF(kf);
    return t;
}

static PyObject *
kept_same(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "kept_same takes 7 arguments");
        return NULL;
    }
    PyObject *refs = args[0], *inputs = args[1], *kept = args[2], *full = args[3], *ptrs = args[4],
             *ptrs_equal = args[5], *data_ptr = args[6];
    int t = kept_is(refs, inputs, kept);
    if (t < 0)
        return NULL;
    if (t == 0)
        Py_RETURN_FALSE;
    if (ptrs_equal != Py_None)
        t = ptrs_same(ptrs_equal, inputs, full, kept, NULL, NULL, NULL);
    else {
        /* list(map(data_ptr, map(inputs.__getitem__, kept))) == ptrs */
        PyObject *items = PyList_New(0);
        if (items == NULL)
            return NULL;
        PyObject *kf = PySequence_Fast(kept, "kept: not a sequence");
        if (kf == NULL) {
            Py_DECREF(items);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(kf); i++) {
            PyObject *v = PyObject_GetItem(inputs, PySequence_Fast_GET_ITEM(kf, i));
            if (v == NULL || PyList_Append(items, v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(kf);
                Py_DECREF(items);
                return NULL;
            }
            Py_DECREF(v);
        }
        Py_DECREF(kf);
        t = mapped_eq(data_ptr, items, ptrs);
        Py_DECREF(items);
    }
    if (t < 0)
        return NULL;
    return PyBool_FromLong(t);
}

static PyObject *
fresh_src(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "fresh_src takes 6 arguments");
        return NULL;
    }
    PyObject *own = args[0], *code_ref = args[2], *src_lasti = args[3], *plan = args[4], *src = args[5];
    Py_ssize_t d = PyLong_AsSsize_t(args[1]);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    PyObject *x = NULL, *lasti = NULL;
    PyFrameObject *f = frame_up(2);
    if (f == NULL) {
        PyErr_SetString(PyExc_ValueError, "call stack is not deep enough");
        return NULL;
    }
    PyCodeObject *code = PyFrame_GetCode(f);
    x = dict_get(own, code->co_filename, NULL);
    Py_DECREF(code);
    if (x == NULL)
        goto error;
    if (x != Py_False)
        goto no;
    Py_CLEAR(x);
    if (d) {
        Py_DECREF(f);
        if ((f = frame_up(2 + d)) == NULL) {
            PyErr_SetString(PyExc_ValueError, "call stack is not deep enough");
            return NULL;
        }
    }
    TRY(frame_of(f, code_ref));
    if ((lasti = frame_lasti(f)) == NULL || (x = dict_get(src_lasti, lasti, src_lasti)) == NULL)
        goto error;
    if (x == src)
        goto yes;
    Py_CLEAR(x);
    x = PyObject_CallMethodOneArg(plan, s_src_of, (PyObject *)f);
    if (x == NULL)
        goto error;
    if (x == src)
        goto yes;
no:
    Py_XDECREF(f);
    Py_XDECREF(x);
    Py_XDECREF(lasti);
    Py_RETURN_FALSE;
yes:
    Py_XDECREF(f);
    Py_XDECREF(x);
    Py_XDECREF(lasti);
    Py_RETURN_TRUE;
error:
    Py_XDECREF(f);
    Py_XDECREF(x);
    Py_XDECREF(lasti);
    return NULL;
}

/* getattr(o, name) is want: 1, 0, -1. */
static int
attr_is(PyObject *o, PyObject *name, PyObject *want)
{
    PyObject *x = PyObject_GetAttr(o, name);
    if (x == NULL)
        return -1;
    int t = x == want;
    Py_DECREF(x);
    return t;
}

/* getattr(o, name) == want (op Py_EQ), or o.name() == want (call). */
static int
attr_cmp(PyObject *o, PyObject *name, int call, PyObject *want)
{
    PyObject *x = call ? PyObject_CallMethodNoArgs(o, name) : PyObject_GetAttr(o, name);
    if (x == NULL)
        return -1;
    int t = compare(x, want, Py_NE);
    Py_DECREF(x);
    return t < 0 ? -1 : !t;
}

static PyObject *
fresh_input(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fresh_input takes 3 arguments");
        return NULL;
    }
    PyObject *v = args[0], *a = args[1], *maps = args[2];
    if (check_tuple(a, A_LEN, "fresh_input: a") < 0 || check_tuple(maps, 8, "fresh_input: maps") < 0)
        return NULL;
    PyObject *strided = PyTuple_GET_ITEM(maps, 0), *by_obj_entry = PyTuple_GET_ITEM(maps, 1),
             *by_view = PyTuple_GET_ITEM(maps, 2), *entries = PyTuple_GET_ITEM(maps, 3),
             *dead_cached = PyTuple_GET_ITEM(maps, 4), *by_storage = PyTuple_GET_ITEM(maps, 5),
             *fq_ids = PyTuple_GET_ITEM(maps, 6), *fq_stor = PyTuple_GET_ITEM(maps, 7);
    PyObject *shape = PyTuple_GET_ITEM(a, A_SHAPE), *stride = PyTuple_GET_ITEM(a, A_STRIDE);
    PyObject *stor = NULL, *cd = NULL, *oid = NULL, *e = NULL, *x = NULL, *vk = NULL;
    TRY(attr_is(v, s_class, PyTuple_GET_ITEM(a, A_CLS)));
    TRY(attr_is(v, s_layout, strided));
    TRY(attr_is(v, s_dtype, PyTuple_GET_ITEM(a, A_DT)));
    TRY(attr_cmp(v, s_shape, 0, shape));
    TRY(attr_cmp(v, s_stride, 1, stride));
    TRY(attr_cmp(v, s_storage_offset, 1, zero));
    TRY(attr_cmp(v, s_get_device, 1, PyTuple_GET_ITEM(a, A_DEV)));
    if ((stor = PyObject_CallMethodNoArgs(v, s_untyped_storage)) == NULL
        || (cd = PyObject_GetAttr(stor, s_cdata)) == NULL || (oid = PyLong_FromVoidPtr(v)) == NULL
        || (e = dict_get(by_obj_entry, oid, NULL)) == NULL)
        goto error;
    if (e != Py_None) {
        /* e.fact.obj_ref is not None and e.fact.obj_ref() is v */
        PyObject *fact = PyObject_GetAttr(e, s_fact);
        if (fact == NULL)
            goto error;
        x = PyObject_GetAttr(fact, s_obj_ref);
        Py_DECREF(fact);
        if (x == NULL)
            goto error;
        if (x != Py_None) {
            int t = deref_is(x, v);
            if (t < 0)
                goto error;
            if (t)
                goto no;
        }
        Py_CLEAR(x);
    }
    Py_CLEAR(e);
    TRY(attr_cmp(stor, s_nbytes, 1, PyTuple_GET_ITEM(a, A_NBYTES)));
    if ((vk = PyTuple_Pack(4, cd, zero, shape, stride)) == NULL || (x = dict_get(by_view, vk, NULL)) == NULL)
        goto error;
    int t = PySequence_Contains(entries, x);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    Py_CLEAR(x);
    t = PySequence_Contains(dead_cached, vk);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    if ((x = dict_get(by_storage, cd, NULL)) == NULL)
        goto error;
    t = PyObject_IsTrue(x);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    Py_CLEAR(x);
    if ((e = dict_get(fq_ids, oid, NULL)) == NULL)
        goto error;
    if (e != Py_None) {
        /* e.wr() is v */
        if ((x = PyObject_GetAttr(e, s_wr)) == NULL)
            goto error;
        t = deref_is(x, v);
        if (t < 0)
            goto error;
        if (t)
            goto no;
        Py_CLEAR(x);
    }
    Py_CLEAR(e);
    if ((e = dict_get(fq_stor, cd, NULL)) == NULL)
        goto error;
    if (e != Py_None) {
        /* not e.gone */
        if ((x = PyObject_GetAttr(e, s_gone)) == NULL)
            goto error;
        t = PyObject_IsTrue(x);
        if (t < 0)
            goto error;
        if (!t)
            goto no;
        Py_CLEAR(x);
    }
    Py_XDECREF(e);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(vk);
    return stor;
no:
    Py_XDECREF(stor);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(e);
    Py_XDECREF(x);
    Py_XDECREF(vk);
    Py_RETURN_NONE;
error:
    Py_XDECREF(stor);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(e);
    Py_XDECREF(x);
    Py_XDECREF(vk);
    return NULL;
}

static PyObject *
polled_alive(PyObject *self, PyObject *polled)
{
    PyObject *pf = PySequence_Fast(polled, "polled: not a sequence");
    if (pf == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(pf); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(pf, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_ValueError, "polled: (ref, uses, alive) expected");
            goto error;
        }
        PyObject *r = PyTuple_GET_ITEM(item, 0), *uses = PyTuple_GET_ITEM(item, 1),
                 *alive = PyTuple_GET_ITEM(item, 2);
        if (r != Py_None) {
            PyObject *o = deref(r);
            if (o == NULL)
                goto error;
            Py_ssize_t n = o == Py_None ? 0 : py_refcount(o);
            Py_DECREF(o);
            if (n > 4)
                continue;
            if (n == 4) {
                /* alive for sure unless (uses and r()._use_count() > 1) */
                int u = PyObject_IsTrue(uses);
                if (u < 0)
                    goto error;
                if (!u)
                    continue;
                PyObject *o2 = deref(r);
                if (o2 == NULL)
                    goto error;
                int t = used_twice(o2);
                Py_DECREF(o2);
                if (t < 0)
                    goto error;
                if (!t)
                    continue;
            }
        }
        PyObject *res = PyObject_CallNoArgs(alive);
        if (res == NULL)
            goto error;
        int t = PyObject_IsTrue(res);
        Py_DECREF(res);
        if (t < 0)
            goto error;
        if (!t) {
            Py_DECREF(pf);
            Py_RETURN_FALSE;
        }
    }
    Py_DECREF(pf);
    Py_RETURN_TRUE;
error:
    Py_DECREF(pf);
    return NULL;
}

/* One death of fresh_deaths: the queued call or entry wr's death may be
 * written as, or Py_None (a new reference either way; NULL: an error). */
static PyObject *
death_of(PyObject *wr, PyObject *idw, PyObject *fq_wrs, PyObject *held, PyObject *entries)
{
    PyObject *e = dict_get(fq_wrs, idw, NULL), *x = NULL;
    int t;
    if (e == NULL)
        return NULL;
    if (e == Py_None) {
        /* e = entries.get(held.get(id(wr))); e is None or e.wr is not wr
         * or e.kind == "out" or e.fact.alive(): declined */
        Py_DECREF(e);
        PyObject *name = dict_get(held, idw, NULL);
        if (name == NULL)
            return NULL;
        e = dict_get(entries, name, NULL);
        Py_DECREF(name);
        if (e == NULL || e == Py_None)
            return e;
        if ((t = attr_is(e, s_wr, wr)) <= 0)
            goto done;
        if ((x = PyObject_GetAttr(e, s_kind)) == NULL)
            goto error;
        if ((t = compare(x, s_out, Py_EQ)) != 0)
            goto done_not;
        Py_CLEAR(x);
        PyObject *fact = PyObject_GetAttr(e, s_fact);
        if (fact == NULL)
            goto error;
        x = PyObject_CallMethodNoArgs(fact, s_alive);
        Py_DECREF(fact);
        if (x == NULL)
            goto error;
        if ((t = PyObject_IsTrue(x)) != 0)
            goto done_not;
        Py_CLEAR(x);
        return e;
    }
    /* e.gone or id(wr) in held or not e.sref.expired(): declined */
    if ((x = PyObject_GetAttr(e, s_gone)) == NULL)
        goto error;
    if ((t = PyObject_IsTrue(x)) != 0)
        goto done_not;
    Py_CLEAR(x);
    if ((t = PySequence_Contains(held, idw)) != 0)
        goto done_not;
    PyObject *sref = PyObject_GetAttr(e, s_sref);
    if (sref == NULL)
        goto error;
    x = PyObject_CallMethodNoArgs(sref, s_expired);
    Py_DECREF(sref);
    if (x == NULL)
        goto error;
    t = PyObject_IsTrue(x);
    Py_CLEAR(x);
    if (t <= 0)
        goto done;
    return e;
done_not: /* t: 1 declines, -1 an error */
    t = t < 0 ? -1 : 0;
done: /* t: 0 declines, -1 an error */
    Py_XDECREF(x);
    Py_DECREF(e);
    if (t < 0)
        return NULL;
    Py_RETURN_NONE;
error:
    Py_XDECREF(x);
    Py_DECREF(e);
    return NULL;
}

static PyObject *
fresh_deaths(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "fresh_deaths takes 7 arguments");
        return NULL;
    }
    PyObject *dead_objs = args[0], *fq_wrs = args[2], *held = args[3], *entries = args[4], *mc = args[5],
             *steps = args[6];
    Py_ssize_t k = PyLong_AsSsize_t(args[1]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    PyObject *head = PySequence_GetSlice(dead_objs, 0, k), *groups = NULL, *pf = NULL;
    if (head == NULL)
        return NULL;
    if ((pf = PySequence_Fast(head, "dead_objs: not a sequence")) == NULL || (groups = PyDict_New()) == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(pf); i++) {
        PyObject *item = PySequence_Fast(PySequence_Fast_GET_ITEM(pf, i), "a death: not a pair");
        if (item == NULL)
            goto error;
        if (PySequence_Fast_GET_SIZE(item) != 2) {
            Py_DECREF(item);
            PyErr_SetString(PyExc_ValueError, "a death: (weak reference, step) expected");
            goto error;
        }
        PyObject *wr = PySequence_Fast_GET_ITEM(item, 0), *when = PySequence_Fast_GET_ITEM(item, 1);
        PyObject *idw = PyLong_FromVoidPtr(wr), *e = NULL, *j = NULL, *pair = NULL;
        if (idw == NULL || (e = death_of(wr, idw, fq_wrs, held, entries)) == NULL) {
            Py_XDECREF(idw);
            Py_DECREF(item);
            goto error;
        }
        Py_DECREF(idw);
        if (e == Py_None) {
            Py_DECREF(e);
            Py_DECREF(item);
            Py_DECREF(pf);
            Py_DECREF(groups);
            Py_DECREF(head);
            Py_RETURN_NONE;
        }
        /* j = min(max(0, mc - when), steps), as the builtins compare */
        int t;
        if ((j = PyNumber_Subtract(mc, when)) == NULL || (t = PyObject_RichCompareBool(j, zero, Py_GT)) < 0)
            goto error_item;
        if (!t)
            Py_SETREF(j, Py_NewRef(zero));
        if ((t = PyObject_RichCompareBool(steps, j, Py_LT)) < 0)
            goto error_item;
        if (t)
            Py_SETREF(j, Py_NewRef(steps));
        if ((pair = PyTuple_Pack(2, wr, e)) == NULL)
            goto error_item;
        PyObject *g = PyDict_GetItemWithError(groups, j);
        if (g == NULL) {
            if (PyErr_Occurred())
                goto error_item;
            PyObject *l = PyList_New(1);
            if (l == NULL)
                goto error_item;
            PyList_SET_ITEM(l, 0, Py_NewRef(pair));
            t = PyDict_SetItem(groups, j, l);
            Py_DECREF(l);
        } else
            t = PyList_Append(g, pair);
        if (t < 0)
            goto error_item;
        Py_DECREF(pair);
        Py_DECREF(j);
        Py_DECREF(e);
        Py_DECREF(item);
        continue;
    error_item:
        Py_XDECREF(pair);
        Py_XDECREF(j);
        Py_DECREF(e);
        Py_DECREF(item);
        goto error;
    }
    Py_DECREF(pf);
    Py_DECREF(head);
    return groups;
error:
    Py_XDECREF(pf);
    Py_XDECREF(groups);
    Py_DECREF(head);
    return NULL;
}

static PyObject *
fresh_after(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "fresh_after takes 6 arguments");
        return NULL;
    }
    PyObject *a = args[0], *node = args[1], *other = args[2], *out = args[3], *mgr = args[4],
             *dead_objs = args[5];
    if (check_tuple(a, A_LEN, "fresh_after: a") < 0)
        return NULL;
    PyObject *x = NULL;
    int t = PyObject_IsTrue(other);
    if (t < 0)
        goto error;
    if (t || node == Py_None)
        goto no;
    TRY(deref_is(PyTuple_GET_ITEM(a, A_NODE_REF), node));
    if (!PyList_CheckExact(out) || PyList_GET_SIZE(out) != 1)
        goto no;
    TRY(attr_cmp(mgr, s_debug_ckpt, 0, PyTuple_GET_ITEM(a, A_CKPT)));
    t = PyObject_IsTrue(dead_objs);
    if (t < 0)
        goto error;
    if (t)
        goto no;
    if ((x = PyObject_GetAttr(node, s_outputs_weakrefs)) == NULL)
        goto error;
    TRY(PyObject_Length(x) == 1 ? 1 : (PyErr_Occurred() ? -1 : 0));
    TRY(deref_is(PyTuple_GET_ITEM(a, A_OUT_REF), PyList_GET_ITEM(out, 0)));
    PyObject *w0 = PySequence_GetItem(x, 0);
    if (w0 == NULL)
        goto error;
    t = w0 == PyTuple_GET_ITEM(a, A_TREE_REF);
    Py_DECREF(w0);
    if (!t)
        goto no;
    Py_DECREF(x);
    Py_RETURN_TRUE;
no:
    Py_XDECREF(x);
    Py_RETURN_FALSE;
error:
    Py_XDECREF(x);
    return NULL;
}

/* -- The Runner: hooks._run's whole body (its Python version, the
 * reference, is hooks._lean_run's _run), called by a _run of one line so
 * that the frames above it are the ones the Python _run has: every depth
 * the recorder counts from its _run frame holds. -- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    /* the fields, in runner_fields' order (runner_slots: from hot on) */
    PyObject *hot, *armed, *acquire, *owned, *release, *orig_run, *box, *gen, *dead_objs, *pend,
        *ptrs_equal, *data_ptr, *fresh_run, *steady, *rec, *declined, *watch_alive;
} Runner;

static const char *runner_fields[] = {"hot", "armed", "acquire", "owned", "release", "orig_run", "box", "gen",
                                      "dead_objs", "pend", "ptrs_equal", "data_ptr", "fresh_run", "steady",
                                      "rec", "declined", "watch_alive", NULL};
#define RUNNER_NFIELDS 17

static PyObject *runner_call(Runner *r, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject **
runner_slots(Runner *r)
{
    return &r->hot;
}

static void
runner_dealloc(Runner *r)
{
    PyObject_GC_UnTrack(r);
    PyObject **f = runner_slots(r);
    for (int i = 0; i < RUNNER_NFIELDS; i++)
        Py_CLEAR(f[i]);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static int
runner_traverse(Runner *r, visitproc visit, void *arg)
{
    PyObject **f = runner_slots(r);
    for (int i = 0; i < RUNNER_NFIELDS; i++)
        Py_VISIT(f[i]);
    return 0;
}

static int
runner_clear(Runner *r)
{
    PyObject **f = runner_slots(r);
    for (int i = 0; i < RUNNER_NFIELDS; i++)
        Py_CLEAR(f[i]);
    return 0;
}

static PyObject *
runner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || kwargs == NULL || PyDict_GET_SIZE(kwargs) != RUNNER_NFIELDS) {
        PyErr_Format(PyExc_TypeError, "Runner takes its %d fields by name", RUNNER_NFIELDS);
        return NULL;
    }
    Runner *r = (Runner *)type->tp_alloc(type, 0);
    if (r == NULL)
        return NULL;
    PyObject **f = runner_slots(r);
    for (int i = 0; i < RUNNER_NFIELDS; i++) {
        PyObject *v = PyDict_GetItemString(kwargs, runner_fields[i]);
        if (v == NULL) {
            PyErr_Format(PyExc_TypeError, "Runner: %s missing", runner_fields[i]);
            Py_DECREF(r);
            return NULL;
        }
        f[i] = Py_NewRef(v);
    }
    r->vectorcall = (vectorcallfunc)runner_call;
    return (PyObject *)r;
}

static PyObject *s_steady, *s_lean, *s_lfid, *s_mark_counter, *s_left, *s_node, *s_other, *s_fql, *s_off,
    *s_generation, *s_mark_step_counter, *s_src_code, *s_src_d, *s_tls, *s_depth, *s_fid_cache, *s_fresh_tok,
    *s_fail, *s_on_run, *s_steady_raised, *s_steady_other, *s_fresh_call, *s_via_run, *s_before_call,
    *s_after_call;

/* o.name, truth: 1, 0, -1. */
static int
attr_true(PyObject *o, PyObject *name)
{
    PyObject *x = PyObject_GetAttr(o, name);
    if (x == NULL)
        return -1;
    int t = PyObject_IsTrue(x);
    Py_DECREF(x);
    return t;
}

static PyObject *
call3(PyObject *fn, PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *args[3] = {a, b, c};
    return PyObject_Vectorcall(fn, args, 3, NULL);
}

/* rec._fail(stage, the exception being handled): the recorder's own error,
 * the call going on as `except Exception as e: rec._fail(stage, e)` goes
 * on. 0, or -1 when the exception is not an Exception (it propagates, as
 * from the Python) or _fail raised. */
static int
recorder_failed(Runner *r, PyObject *stage)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *res = PyObject_CallMethodObjArgs(r->rec, s_fail, stage, value ? value : Py_None, NULL);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* The branch of an unarmed call (the lock held): see hooks._run. */
static PyObject *
runner_unarmed(Runner *r, PyObject *mgr, PyObject *new_inputs, PyObject *function_id)
{
    PyObject *tls = PyObject_GetAttr(r->rec, s_tls);
    if (tls == NULL)
        return NULL;
    int t = attr_true(tls, s_depth);
    Py_DECREF(tls);
    if (t < 0)
        return NULL;
    if (t)
        return call3(r->orig_run, mgr, new_inputs, function_id);
    PyObject *fl = PyObject_GetAttr(r->hot, s_fql);
    if (fl == NULL)
        return NULL;
    if (fl != Py_None) {
        PyObject *f0 = PySequence_GetItem(fl, 0);
        if (f0 == NULL) {
            Py_DECREF(fl);
            return NULL;
        }
        t = f0 == function_id;
        Py_DECREF(f0);
        if (t) {
            t = attr_true(r->hot, s_off);
            if (t < 0) {
                Py_DECREF(fl);
                return NULL;
            }
            t = !t;
        }
        if (t) {
            PyObject *args[4] = {mgr, new_inputs, function_id, fl};
            PyObject *out = PyObject_Vectorcall(r->fresh_run, args, 4, NULL);
            Py_DECREF(fl);
            if (out == NULL || out != r->declined)
                return out;
            Py_DECREF(out);
            fl = NULL;
        }
    }
    Py_XDECREF(fl);
    PyObject *cache = PyObject_GetAttr(r->rec, s_fid_cache), *got = NULL;
    if (cache == NULL)
        return NULL;
    PyObject *key = PyLong_FromVoidPtr(function_id);
    if (key == NULL) {
        Py_DECREF(cache);
        return NULL;
    }
    got = dict_get(cache, key, NULL);
    Py_DECREF(cache);
    Py_DECREF(key);
    if (got == NULL)
        return NULL;
    t = 0;
    if (got != Py_None) {
        PyObject *fs = PySequence_GetItem(got, 3);
        if (fs == NULL)
            goto error;
        PyObject *tok = PyObject_GetAttr(fs, s_fresh_tok);
        Py_DECREF(fs);
        if (tok == NULL)
            goto error;
        t = tok != Py_None;
        Py_DECREF(tok);
        if (t) {
            t = attr_true(r->hot, s_off);
            if (t < 0)
                goto error;
            t = !t;
        }
    }
    if (t) {
        PyObject *args[6] = {r->rec, r->orig_run, mgr, new_inputs, function_id, got};
        PyObject *out = PyObject_VectorcallMethod(s_fresh_call, args, 6, NULL);
        Py_DECREF(got);
        if (out == NULL || out != r->declined)
            return out;
        Py_DECREF(out);
        if (PyObject_SetAttr(r->rec, s_via_run, Py_True) < 0)
            return NULL;
        PyObject *args2[5] = {r->rec, r->orig_run, mgr, new_inputs, function_id};
        out = PyObject_VectorcallMethod(s_on_run, args2, 5, NULL);
        /* finally: rec._via_run = False (the call's own error kept) */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyObject_SetAttr(r->rec, s_via_run, Py_False) < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            Py_XDECREF(out);
            return NULL;
        }
        PyErr_Restore(type, value, tb);
        return out;
    }
    Py_DECREF(got);
    return call3(r->steady, mgr, new_inputs, function_id);
error:
    Py_DECREF(got);
    return NULL;
}

/* The armed call (the lock held): see hooks._run. */
static PyObject *
runner_armed(Runner *r, PyObject *lean, PyObject *mgr, PyObject *new_inputs, PyObject *function_id, int probed)
{
    PyObject *c = NULL, *mc = NULL, *left = NULL, *plan = NULL, *src = NULL, *x = NULL, *out = NULL, *inv = NULL,
             *steps = NULL;
    int ok;
    if ((c = PyObject_GetAttr(r->box, s_mark_step_counter)) == NULL
        || (mc = PyObject_GetAttr(r->hot, s_mark_counter)) == NULL || (left = PyObject_GetAttr(r->hot, s_left)) == NULL)
        goto error;
    {
        PyObject *args[11] = {lean, function_id, mgr, new_inputs, c, mc, left, probed ? Py_True : Py_False,
                              r->dead_objs, r->ptrs_equal, r->data_ptr};
        x = steady_ok(NULL, args, 11);
    }
    if (x != NULL) {
        ok = x == Py_True;
        Py_CLEAR(x);
        if (ok && PyTuple_GET_ITEM(lean, L_POLLED) == Py_None) {
            if ((x = PyObject_CallNoArgs(r->watch_alive)) == NULL)
                ok = -1;
            else
                ok = PyObject_IsTrue(x);
            Py_CLEAR(x);
        }
    } else
        ok = -1;
    if (ok < 0) {
        if (recorder_failed(r, s_before_call) < 0)
            goto error;
        ok = 0;
    }
    plan = Py_NewRef(PyTuple_GET_ITEM(lean, L_PLAN));
    if (ok) {
        PyObject *code = PyObject_GetAttr(plan, s_src_code);
        if (code == NULL)
            goto error;
        if (code != Py_None) {
            PyObject *d = PyObject_GetAttr(plan, s_src_d), *depth = NULL;
            if (d != NULL) {
                PyObject *k = PyLong_FromLong(probed ? 3 : 1);
                if (k != NULL)
                    depth = PyNumber_Add(d, k);
                Py_XDECREF(k);
                Py_DECREF(d);
            }
            if (depth != NULL) {
                PyObject *args[3] = {depth, code, plan};
                src = frame_src(NULL, args, 3);
                Py_DECREF(depth);
            }
            if (src == NULL) {
                if (recorder_failed(r, s_before_call) < 0) {
                    Py_DECREF(code);
                    goto error;
                }
                src = Py_NewRef(Py_None);
            }
            ok = src != Py_None;
        }
        Py_DECREF(code);
    }
    if (src == NULL)
        src = Py_NewRef(Py_None);
    if (!ok) {
        if (probed) {
            PyObject *args[5] = {r->rec, r->orig_run, mgr, new_inputs, function_id};
            out = PyObject_VectorcallMethod(s_on_run, args, 5, NULL);
        } else
            out = call3(r->steady, mgr, new_inputs, function_id);
        goto done;
    }
    /* hot.left = left - 1; hot.mark_counter = c; inv = gen.generation;
     * hot.steady = True */
    if ((x = PyNumber_Subtract(left, one)) == NULL || PyObject_SetAttr(r->hot, s_left, x) < 0
        || PyObject_SetAttr(r->hot, s_mark_counter, c) < 0 || (inv = PyObject_GetAttr(r->gen, s_generation)) == NULL
        || (steps = PyNumber_Subtract(mc, c)) == NULL || PyObject_SetAttr(r->hot, s_steady, Py_True) < 0)
        goto error;
    Py_CLEAR(x);
    out = call3(r->orig_run, mgr, new_inputs, function_id);
    if (out == NULL) {
        /* except BaseException as err: rec._steady_raised(...); raise */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL && value != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *args[7] = {r->rec, plan, steps, inv, mgr, value ? value : Py_None, src};
        PyObject *res = PyObject_VectorcallMethod(s_steady_raised, args, 7, NULL);
        if (res == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            goto error;
        }
        Py_DECREF(res);
        PyErr_Restore(type, value, tb);
        goto error;
    }
    /* hot.steady = False; node = hot.node; hot.node = None */
    PyObject *node = NULL;
    if (PyObject_SetAttr(r->hot, s_steady, Py_False) < 0 || (node = PyObject_GetAttr(r->hot, s_node)) == NULL
        || PyObject_SetAttr(r->hot, s_node, Py_None) < 0) {
        Py_XDECREF(node);
        Py_CLEAR(out);
        goto error;
    }
    PyObject *other = PyObject_GetAttr(r->hot, s_other);
    if (other != NULL) {
        PyObject *args[6] = {lean, out, node, other, mgr, r->dead_objs};
        x = steady_after(NULL, args, 6);
        Py_DECREF(other);
    }
    if (x != NULL) {
        PyObject *res;
        if (x == Py_True) {
            PyObject *tok = PyTuple_Pack(4, plan, steps, inv, src);
            res = tok == NULL ? NULL : PyObject_CallOneArg(r->pend, tok);
            Py_XDECREF(tok);
        } else {
            PyObject *args[8] = {r->rec, plan, steps, inv, mgr, out, node, src};
            res = PyObject_VectorcallMethod(s_steady_other, args, 8, NULL);
        }
        Py_CLEAR(x);
        if (res == NULL)
            x = NULL;
        else {
            Py_DECREF(res);
            x = Py_NewRef(Py_None);
        }
    }
    Py_DECREF(node);
    if (x == NULL) {
        if (recorder_failed(r, s_after_call) < 0) {
            Py_CLEAR(out);
            goto error;
        }
    }
    Py_CLEAR(x);
done:
    Py_XDECREF(c);
    Py_XDECREF(mc);
    Py_XDECREF(left);
    Py_XDECREF(plan);
    Py_XDECREF(src);
    Py_XDECREF(inv);
    Py_XDECREF(steps);
    return out;
error:
    Py_XDECREF(x);
    out = NULL;
    goto done;
}

static PyObject *
runner_call(Runner *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((nargs != 3 && nargs != 4) || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "Runner(mgr, new_inputs, function_id, probed=False)");
        return NULL;
    }
    PyObject *mgr = args[0], *new_inputs = args[1], *function_id = args[2];
    int probed = 0;
    if (nargs == 4 && (probed = PyObject_IsTrue(args[3])) < 0)
        return NULL;
    /* A call re-entering the tree's _run inside a steady call: passed
     * through in this thread; another thread's waits in _steady. */
    int t = attr_true(r->hot, s_steady);
    if (t < 0)
        return NULL;
    if (t) {
        PyObject *o = PyObject_CallNoArgs(r->owned);
        if (o == NULL)
            return NULL;
        t = PyObject_IsTrue(o);
        Py_DECREF(o);
        if (t < 0)
            return NULL;
        return call3(t ? r->orig_run : r->steady, mgr, new_inputs, function_id);
    }
    PyObject *got = PyObject_CallOneArg(r->acquire, Py_False);
    if (got == NULL)
        return NULL;
    t = PyObject_IsTrue(got);
    Py_DECREF(got);
    if (t < 0)
        return NULL;
    if (!t)
        return call3(r->steady, mgr, new_inputs, function_id);
    PyObject *out = NULL, *lean = NULL, *lfid = PyObject_GetAttr(r->hot, s_lfid);
    if (lfid != NULL) {
        if (lfid == function_id)
            lean = PyObject_GetAttr(r->hot, s_lean);
        else {
            PyObject *key = PyLong_FromVoidPtr(function_id);
            if (key != NULL) {
                lean = dict_get(r->armed, key, NULL);
                Py_DECREF(key);
            }
        }
        Py_DECREF(lfid);
    }
    if (lean != NULL) {
        if (lean == Py_None)
            out = runner_unarmed(r, mgr, new_inputs, function_id);
        else if (check_tuple(lean, L_LEN, "the lean tuple") == 0)
            out = runner_armed(r, lean, mgr, new_inputs, function_id, probed);
        Py_DECREF(lean);
    }
    /* finally: release() (its own error replaces the call's, as Python's) */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *res = PyObject_CallNoArgs(r->release);
    if (res == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        Py_XDECREF(out);
        return NULL;
    }
    Py_DECREF(res);
    PyErr_Restore(type, value, tb);
    return out;
}

static PyObject *
runner_tp_call(Runner *r, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call((PyObject *)r, args, kwargs);
}

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.Runner",
    .tp_basicsize = sizeof(Runner),
    .tp_vectorcall_offset = offsetof(Runner, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "hooks._run's body in C: Runner(**fields)(mgr, new_inputs, function_id, probed=False).",
    .tp_new = runner_new,
    .tp_dealloc = (destructor)runner_dealloc,
    .tp_traverse = (traverseproc)runner_traverse,
    .tp_clear = (inquiry)runner_clear,
    .tp_call = (ternaryfunc)runner_tp_call,
};

static PyMethodDef methods[] = {
    {"steady_ok", (PyCFunction)(void (*)(void))steady_ok, METH_FASTCALL, "fastpath.steady_ok, in C."},
    {"steady_after", (PyCFunction)(void (*)(void))steady_after, METH_FASTCALL, "fastpath.steady_after, in C."},
    {"frame_src", (PyCFunction)(void (*)(void))frame_src, METH_FASTCALL, "fastpath.frame_src, in C."},
    {"probes_same", (PyCFunction)(void (*)(void))probes_same, METH_FASTCALL, "fastpath.probes_same, in C."},
    {"kept_same", (PyCFunction)(void (*)(void))kept_same, METH_FASTCALL, "fastpath.kept_same, in C."},
    {"fresh_src", (PyCFunction)(void (*)(void))fresh_src, METH_FASTCALL, "fastpath.fresh_src, in C."},
    {"fresh_input", (PyCFunction)(void (*)(void))fresh_input, METH_FASTCALL, "fastpath.fresh_input, in C."},
    {"polled_alive", polled_alive, METH_O, "fastpath.polled_alive, in C."},
    {"fresh_deaths", (PyCFunction)(void (*)(void))fresh_deaths, METH_FASTCALL, "fastpath.fresh_deaths, in C."},
    {"fresh_after", (PyCFunction)(void (*)(void))fresh_after, METH_FASTCALL, "fastpath.fresh_after, in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cgtrace_fastpath",
    "cgtrace's lean-path checks in C (fastpath.py holds the reference and the loader).", -1, methods,
    NULL, NULL, NULL, NULL,
};

#define INTERN(var, text)                                                                             \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                             \
        return NULL;

PyMODINIT_FUNC
PyInit__cgtrace_fastpath(void)
{
    INTERN(s_use_count, "_use_count");
    INTERN(s_debug_ckpt, "debug_checkpointing_counter");
    INTERN(s_outputs_weakrefs, "outputs_weakrefs");
    INTERN(s_src_lasti, "src_lasti");
    INTERN(s_src_of, "src_of");
    INTERN(s_get, "get");
    INTERN(s_class, "__class__");
    INTERN(s_layout, "layout");
    INTERN(s_dtype, "dtype");
    INTERN(s_shape, "shape");
    INTERN(s_stride, "stride");
    INTERN(s_storage_offset, "storage_offset");
    INTERN(s_get_device, "get_device");
    INTERN(s_untyped_storage, "untyped_storage");
    INTERN(s_cdata, "_cdata");
    INTERN(s_fact, "fact");
    INTERN(s_obj_ref, "obj_ref");
    INTERN(s_nbytes, "nbytes");
    INTERN(s_wr, "wr");
    INTERN(s_gone, "gone");
    INTERN(s_f_lasti, "f_lasti");
    INTERN(s_kind, "kind");
    INTERN(s_out, "out");
    INTERN(s_alive, "alive");
    INTERN(s_sref, "sref");
    INTERN(s_expired, "expired");
    INTERN(s_steady, "steady");
    INTERN(s_lean, "lean");
    INTERN(s_lfid, "lfid");
    INTERN(s_mark_counter, "mark_counter");
    INTERN(s_left, "left");
    INTERN(s_node, "node");
    INTERN(s_other, "other");
    INTERN(s_fql, "fql");
    INTERN(s_off, "off");
    INTERN(s_generation, "generation");
    INTERN(s_mark_step_counter, "mark_step_counter");
    INTERN(s_src_code, "src_code");
    INTERN(s_src_d, "src_d");
    INTERN(s_tls, "tls");
    INTERN(s_depth, "depth");
    INTERN(s_fid_cache, "_fid_cache");
    INTERN(s_fresh_tok, "fresh_tok");
    INTERN(s_fail, "_fail");
    INTERN(s_on_run, "_on_run");
    INTERN(s_steady_raised, "_steady_raised");
    INTERN(s_steady_other, "_steady_other");
    INTERN(s_fresh_call, "_fresh_call");
    INTERN(s_via_run, "_via_run");
    INTERN(s_before_call, "before a call");
    INTERN(s_after_call, "after a call");
    if ((zero = PyLong_FromLong(0)) == NULL || (one = PyLong_FromLong(1)) == NULL)
        return NULL;
    if (PyType_Ready(&RunnerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RunnerType);
    if (PyModule_AddObject(m, "Runner", (PyObject *)&RunnerType) < 0) {
        Py_DECREF(&RunnerType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "API", API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
