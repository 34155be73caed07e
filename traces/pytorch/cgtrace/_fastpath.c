/* The lean paths' checks in C: fastpath.py's functions, one for one, with
 * the same arguments, results and order of what each reads or calls (the
 * Python ones are the reference: tests/test_fastpath.py holds the two
 * against each other). Built by fastpath.load() with the system's C
 * compiler against this interpreter's headers; nothing here keeps a
 * reference past its call or changes an object it is given.
 *
 * Each check reads only through the C API's generic calls (attributes,
 * calls, comparisons), so a tensor, a weak reference or a dict subclass
 * behaves as it does in Python; the slots of the recorder's own classes
 * are read and written at their offsets, as Python's bytecode does (sget,
 * sset: with the generic calls' results). A refcount is read as Python's
 * sys.getrefcount(o) reads it with o a local: the callers' constants are
 * the reference's. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

#define API_VERSION 11

/* The frames of the calling thread's stack, walked as PyFrame_GetBack
 * walks them but without making a frame object of each (3.11 to 3.13):
 * from 3.11 a frame runs without one, and PyEval_GetFrame and
 * PyFrame_GetBack make one for each frame they pass (an allocation, then
 * a deallocation as the frame ends), a dozen at every lean call on a GPU
 * host (the tree's frame, torch's wrappers, the user's: BENCHMARKS.md,
 * session 23). The walk reads the interpreter's own frames through its
 * internal header, with its inline functions (so it follows the version
 * it is built against); another version, or -DCGT_NO_FAST_FRAMES, walks
 * the frame objects. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(CGT_NO_FAST_FRAMES)                 \
    && !defined(Py_GIL_DISABLED) && defined(__has_include)
#if __has_include(<internal/pycore_frame.h>) /* (a Python installed without its internal headers: the objects) */
#define CGT_FAST_FRAMES 1
#endif
#endif
#ifdef CGT_FAST_FRAMES
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#define CGT_UNDEF_BUILD_CORE
#endif
#include <internal/pycore_frame.h>
#ifdef CGT_UNDEF_BUILD_CORE
#undef Py_BUILD_CORE
#endif
#endif

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
enum { A_PLAN = 2, A_CLS = 13, A_DT, A_SHAPE, A_STRIDE, A_DEV, A_NBYTES, A_NODE_REF = 23, A_CKPT, A_OUT_REF,
       A_TREE_REF, A_LEN };

static PyObject *s_use_count, *s_debug_ckpt, *s_outputs_weakrefs, *s_src_lasti, *s_src_of, *s_get,
    *s_class, *s_layout, *s_dtype, *s_shape, *s_stride, *s_storage_offset, *s_get_device,
    *s_untyped_storage, *s_cdata, *s_fact, *s_obj_ref, *s_nbytes, *s_wr, *s_gone, *s_f_lasti, *s_kind,
    *s_out, *s_alive, *s_sref, *s_expired;
static PyObject *s_steady, *s_lean, *s_lfid, *s_mark_counter, *s_left, *s_node, *s_other, *s_fql, *s_off,
    *s_generation, *s_mark_step_counter, *s_src_code, *s_src_d, *s_depth, *s_fid_cache, *s_fresh_tok,
    *s_fail, *s_on_run, *s_steady_raised, *s_steady_other, *s_fresh_call, *s_via_run, *s_before_call,
    *s_after_call;
static PyObject *s_fq_call_raised, *s_fq_bound, *s_fq_due, *s_fq_other, *s_unwritten, *s_flush, *s_due;
/* Noter's. */
static PyObject *s_general_noting, *s_actions, *s_replay, *s_append;
static PyObject *s_steps, *s_tmpl, *s_src, *s_inv, *s_oid, *s_ptr, *s_cd, *s_spec, *s_groups,
    *s_data_ptr;
static PyObject *s_name, *s_order, *s_devices, *s_fresh, *s_fmt_inv_src, *s_fmt_inv, *s_probes, *s_probe_vals,
    *s_moved, *s_getattribute, *s_setattr;
/* watch_dead's: the attributes of a polled name it reads. */
static PyObject *s_fact, *s_probe, *s_tree_ref, *s_extra_ref_check, *s_check, *s_rule, *s_wr, *s_alive;
/* bind_all's and forget_all's: an entry's and a Fact's slots. */
static PyObject *s_obj_id, *s_in_memo, *s_storage, *s_view_key, *s_held;

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

/* The truth of r, a new reference this takes (NULL: the error raised
 * making it): 1, 0, -1. */
static int
truth(PyObject *r)
{
    if (r == NULL)
        return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* -- Slots read and written at their offsets. --
 *
 * PyObject_GetAttr on an object of a __slots__ class (the recorder's _Hot
 * and _Queued) looks the name up in the class (its method cache's entry,
 * then the member descriptor and its definition) before it reads the
 * slot: three or four cache lines a read, each a miss in the middle of
 * torch's call, where Python's own bytecode, specialised, reads the slot
 * at an offset it keeps (BENCHMARKS.md, session 19: a type lookup was
 * the largest of a lean call's data misses). sget and sset do what the
 * bytecode does: a slot's offset, found once a name and class and kept in
 * the slots array below, used while the class is the same one unchanged
 * (its version tag); anything else (no slot of that
 * name, a class with its own __getattribute__ or __setattr__, an empty
 * slot, a free-threaded build) takes PyObject_GetAttr's way. */

/* What was found for a name in the class it was last looked up in: the
 * class (and its version tag) and the slot's offset there (0: not a plain
 * slot, the generic way). One a name and class it is read on (wr on two:
 * _Queued's and _Entry's), sixteen bytes each, all of them in one array
 * in the order a call reads them: a few cache lines, not one a name. */
typedef struct {
    PyTypeObject *tp;
    uint32_t tag;
    int32_t off;
} Slot;

#define SLOT_NAMES(X)                                                                                 \
    X(steady) X(lfid) X(lean) X(mark_counter) X(left) X(node) X(other) X(src_code) X(src_d)              \
    X(src_lasti) X(fql) X(off) X(gone) X(wr) X(sref) X(steps) X(tmpl) X(src) X(inv) X(oid)             \
    X(ptr) X(cd) X(spec) X(groups) X(name) X(order) X(fact) X(obj_ref) X(kind) X(alive) X(entry_wr)     \
    X(b_name) X(b_fact) X(b_kind) X(b_order) X(b_obj_id) X(b_wr) X(b_in_memo) X(b_storage) X(b_view_key) \
    X(b_obj_ref) X(b_held) X(due) X(unwritten)
#define SLOT_ENUM(n) SL_##n,
enum { SLOT_NAMES(SLOT_ENUM) SLOT_COUNT };
static Slot slots[SLOT_COUNT];
static PyObject *object_getattribute, *object_setattr;

/* slot_offset where sl does not hold o's class as it is: the lookup. */
static Py_ssize_t slot_lookup(PyObject *o, Slot *sl, PyObject *name);

/* name's offset in o's class (> 0), or 0 for the generic way; sl: what
 * was found for it. (Inline: a call's twenty-odd slot reads each a
 * comparison of what sl holds, the lookup out of the way.) */
static inline Py_ssize_t
slot_offset(PyObject *o, Slot *sl, PyObject *name)
{
#ifdef Py_GIL_DISABLED
    return 0;
#else
    PyTypeObject *tp = Py_TYPE(o);
    /* (A class changed since gets another tag, and a tag is never given
     * twice: PyType_Modified zeroes it, a lookup assigns the next one.) */
    if (sl->tp == tp && sl->tag != 0 && tp->tp_version_tag == sl->tag)
        return sl->off;
    return slot_lookup(o, sl, name);
#endif
}

static Py_ssize_t
slot_lookup(PyObject *o, Slot *sl, PyObject *name)
{
#ifdef Py_GIL_DISABLED
    return 0;
#else
    PyTypeObject *tp = Py_TYPE(o);
    Py_ssize_t off = 0;
    PyObject *d = PyObject_GetAttr((PyObject *)tp, name); /* (the member descriptor itself) */
    PyObject *ga = d == NULL ? NULL : PyObject_GetAttr((PyObject *)tp, s_getattribute);
    PyObject *sa = ga == NULL ? NULL : PyObject_GetAttr((PyObject *)tp, s_setattr);
    if (sa != NULL && ga == object_getattribute && sa == object_setattr && Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == Py_T_OBJECT_EX && !(m->flags & Py_READONLY) && m->offset > 0 && m->offset <= INT32_MAX
            && PyObject_TypeCheck(o, ((PyDescrObject *)d)->d_type))
            off = m->offset;
    }
    Py_XDECREF(d);
    Py_XDECREF(ga);
    Py_XDECREF(sa);
    PyErr_Clear();
    /* (the lookups above gave the class a valid tag, when it can have one) */
    sl->tp = tp;
    sl->tag = PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG) ? tp->tp_version_tag : 0;
    sl->off = (int32_t)off;
    return off;
#endif
}

/* The names of SLOT_NAMES read and written so: SGET(o, steady) is
 * o.steady, SSET(o, steady, v) and SSTEAL(o, steady, v) set it (v
 * borrowed, v stolen), STRUE(o, steady) its truth. */
#define SGET(o, n) sget((o), &slots[SL_##n], s_##n)
#define SSET(o, n, v) sset((o), &slots[SL_##n], s_##n, (v))
#define SSTEAL(o, n, v) ssteal((o), &slots[SL_##n], s_##n, (v))
#define STRUE(o, n) sattr_true((o), &slots[SL_##n], s_##n)

/* o.name (PyObject_GetAttr's result). New reference. */
static PyObject *
sget(PyObject *o, Slot *sl, PyObject *name)
{
    Py_ssize_t off = slot_offset(o, sl, name);
    if (off > 0) {
        PyObject *v = *(PyObject **)((char *)o + off);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(o, name);
}

/* o.name = v (v borrowed): 0, -1. */
static int
sset(PyObject *o, Slot *sl, PyObject *name, PyObject *v)
{
    Py_ssize_t off = slot_offset(o, sl, name);
    if (off > 0) {
        PyObject **p = (PyObject **)((char *)o + off), *old = *p;
        *p = Py_NewRef(v);
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(o, name, v);
}

/* o.name = v, v's reference taken (stolen; NULL: the error raised making
 * it): 0, -1. */
static int
ssteal(PyObject *o, Slot *sl, PyObject *name, PyObject *v)
{
    if (v == NULL)
        return -1;
    int t = sset(o, sl, name, v);
    Py_DECREF(v);
    return t;
}

/* o.name, truth: 1, 0, -1. */
static int
sattr_true(PyObject *o, Slot *sl, PyObject *name)
{
    return truth(sget(o, sl, name));
}

/* a op b, as Python's expression (no identity shortcut): 1, 0, -1. */
static int
compare(PyObject *a, PyObject *b, int op)
{
    return truth(PyObject_RichCompare(a, b, op));
}

/* a op b for a, a new reference this takes (NULL: the error raised making
 * it): 1, 0, -1. */
static int
compared(PyObject *a, PyObject *b, int op)
{
    if (a == NULL)
        return -1;
    int t = compare(a, b, op);
    Py_DECREF(a);
    return t;
}

/* del seq[:k]: a list's items let go in place (PyList_SetSlice), with
 * no slice object made as PySequence_DelSlice makes one. 0, -1. */
static int
del_head(PyObject *seq, Py_ssize_t k)
{
    return PyList_CheckExact(seq) ? PyList_SetSlice(seq, 0, k, NULL) : PySequence_DelSlice(seq, 0, k);
}

/* The exception being raised, taken (as `except ... as value:` has it:
 * normalized, its traceback set). */
static void
fetch_exception(PyObject **type, PyObject **value, PyObject **tb)
{
    PyErr_Fetch(type, value, tb);
    PyErr_NormalizeException(type, value, tb);
    if (*tb != NULL && *value != NULL)
        PyException_SetTraceback(*value, *tb);
}

/* rec._fail(stage, the exception being handled): the recorder's own error,
 * the call going on as `except Exception as e: rec._fail(stage, e)` goes
 * on. 0, or -1 when the exception is not an Exception (it propagates, as
 * from the Python) or _fail raised. */
static int
recorder_failed(PyObject *rec, PyObject *stage)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyObject *type, *value, *tb;
    fetch_exception(&type, &value, &tb);
    PyObject *res = PyObject_CallMethodObjArgs(rec, s_fail, stage, value ? value : Py_None, NULL);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* len(seq) == n for a Python int n: 1, 0, -1. */
static int
len_is(PyObject *seq, PyObject *n)
{
    Py_ssize_t k = PyObject_Length(seq);
    if (k < 0)
        return -1;
    return compared(PyLong_FromSsize_t(k), n, Py_EQ);
}

/* all(map(is_, map(call, refs), objs)), refs and objs in step to the
 * shorter's end; or, given idx, with map(objs.__getitem__, idx) for objs
 * (each r() called before its object is fetched, as map does). 1, 0, -1. */
static int
refs_are(PyObject *refs, PyObject *objs, PyObject *idx)
{
    PyObject *rf = PySequence_Fast(refs, "refs: not a sequence");
    if (rf == NULL)
        return -1;
    PyObject *sf = PySequence_Fast(idx != NULL ? idx : objs, "not a sequence");
    if (sf == NULL) {
        Py_DECREF(rf);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rf), m = PySequence_Fast_GET_SIZE(sf);
    int t = 1;
    for (Py_ssize_t i = 0; i < n && i < m && t == 1; i++) {
        PyObject *r = deref(PySequence_Fast_GET_ITEM(rf, i));
        if (r == NULL) {
            t = -1;
            break;
        }
        PyObject *o, *j = idx != NULL ? PySequence_Fast_GET_ITEM(sf, i) : NULL;
        Py_ssize_t k;
        if (j == NULL)
            o = Py_NewRef(PySequence_Fast_GET_ITEM(sf, i));
        else if (PyList_CheckExact(objs) && PyLong_CheckExact(j) && (k = PyLong_AsSsize_t(j)) >= 0
                 && k < PyList_GET_SIZE(objs))
            /* (objs[j] where a list's item is read in place: the kept
             * inputs are a model's parameters, hundreds a call, and
             * PyObject_GetItem's way through the list's subscript and the
             * index's conversion was most of this check's time at 292) */
            o = Py_NewRef(PyList_GET_ITEM(objs, k));
        else {
            if (PyErr_Occurred())
                PyErr_Clear(); /* (an index past a C ssize_t: PyObject_GetItem says) */
            o = PyObject_GetItem(objs, j);
        }
        t = o == NULL ? -1 : r == o;
        Py_DECREF(r);
        Py_XDECREF(o);
    }
    Py_DECREF(rf);
    Py_DECREF(sf);
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
    return compared(got, want, Py_EQ);
}

/* The pointer check: ptrs_equal(inputs, full, idx) when torch has it, else
 * list(map(data_ptr, items)) == ptrs. 1, 0, -1. */
static int
ptrs_same(PyObject *ptrs_equal, PyObject *inputs, PyObject *full, PyObject *idx, PyObject *data_ptr,
          PyObject *items, PyObject *ptrs)
{
    if (ptrs_equal != Py_None)
        return truth(PyObject_CallFunctionObjArgs(ptrs_equal, inputs, full, idx, NULL));
    return mapped_eq(data_ptr, items, ptrs);
}

/* sys.getrefcount(o) as Python reads it with o a local (one more for the
 * local, one more for the argument), o held here by one reference. */
static Py_ssize_t
py_refcount(PyObject *o)
{
    return Py_REFCNT(o) + 1;
}

/* _cpp.cpp's FNS capsule: the weak storage handles' functions and a
 * tensor's use count in C (the same struct there, its size first). */
typedef struct {
    size_t size;
    void *(*weak_make)(PyObject *t);  /* NULL with an error */
    int (*weak_expired)(void *h);
    void (*weak_free)(void *h);
    Py_ssize_t (*use_count)(PyObject *t);  /* -1 with an error */
    /* new_input's checks and reads (v, dtype, shape, stride, device,
     * nbytes): 1 with the storage and the data pointer set, 0, -1 */
    int (*new_input)(PyObject *v, PyObject *dt, PyObject *shape, PyObject *stride, PyObject *dev, PyObject *nbytes,
                     void **storage, void **data);
} CppFns;

/* The C++ module's functions where use_cpp gave them (cpp.py's module is
 * loaded once a process), with the class whose _use_count use_count is
 * (torch.Tensor: another class may define its own). */
static const CppFns *cpp_fns;
static PyObject *cpp_tensor_type;
/* (and the module's Python new_input, which fresh_input_impl calls
 * through cpp_fns when the maps name it) */
static PyObject *cpp_new_input;

/* fns (the FNS capsule) as a CppFns, or NULL with an error. */
static const CppFns *
cpp_fns_of(PyObject *fns)
{
    const CppFns *f = (const CppFns *)PyCapsule_GetPointer(fns, "_cgtrace_cpp.fns");
    if (f != NULL && f->size != sizeof(CppFns)) {
        PyErr_SetString(PyExc_ValueError, "FNS: a CppFns of another size (another _cpp.cpp)");
        return NULL;
    }
    return f;
}

/* fastpath.use_cpp(fns, tensor_type[, new_input]): used_twice asks
 * fns's use_count of an object of tensor_type instead of calling its
 * _use_count(), and a lean fresh call whose maps name new_input (the
 * module's Python function) asks fns's new_input instead of calling it;
 * use_cpp(None, None) stops both. */
static PyObject *
use_cpp(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "use_cpp(fns, tensor_type[, new_input]) takes 2 or 3 arguments");
        return NULL;
    }
    const CppFns *f = NULL;
    if (args[0] != Py_None) {
        if ((f = cpp_fns_of(args[0])) == NULL)
            return NULL;
        if (!PyType_Check(args[1])) {
            PyErr_SetString(PyExc_TypeError, "use_cpp: tensor_type not a class");
            return NULL;
        }
    }
    cpp_fns = f;
    Py_XSETREF(cpp_tensor_type, f != NULL ? Py_NewRef(args[1]) : NULL);
    Py_XSETREF(cpp_new_input, f != NULL && nargs == 3 && args[2] != Py_None ? Py_NewRef(args[2]) : NULL);
    Py_RETURN_NONE;
}

/* o._use_count() > 1: 1, 0, -1. */
static int
used_twice(PyObject *o)
{
    if (cpp_fns != NULL && (PyObject *)Py_TYPE(o) == cpp_tensor_type) {
        Py_ssize_t n = cpp_fns->use_count(o);
        return n < 0 ? -1 : n > 1;
    }
    return compared(PyObject_CallMethodNoArgs(o, s_use_count), one, Py_GT);
}

/* Whether a cached output o (held here by one reference) is alive for
 * sure by its count, as its tree wrapper's refcount check would find it
 * (_Probe.alive's first branch): something besides the tree's cache and
 * the two references of the look holds it, or with uses (USE_COUNT: the
 * check counts c10's reference too) c10 does not hold it besides. 1, 0
 * (not for sure: the tree is asked), -1. */
static int
count_says_alive(PyObject *o, int uses)
{
    Py_ssize_t n = py_refcount(o);
    if (n != 4)
        return n > 4;
    if (!uses)
        return 1;
    int t = used_twice(o);
    return t < 0 ? -1 : !t;
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

/* A METH_FASTCALL function's count of arguments, checked. */
#define NARGS(n, name)                                                                                \
    do {                                                                                              \
        if (nargs != (n)) {                                                                           \
            PyErr_SetString(PyExc_TypeError, name " takes " #n " arguments");                         \
            return NULL;                                                                              \
        }                                                                                             \
    } while (0)

#define TRY(x)                                                                                        \
    do {                                                                                              \
        int t_ = (x);                                                                                 \
        if (t_ < 0)                                                                                   \
            goto error;                                                                               \
        if (t_ == 0)                                                                                  \
            goto no;                                                                                  \
    } while (0)

/* A new-input call cut short, to time what is left of it: built with
 * -DCGT_CUT=n (tools/gpu/recorder-overhead.py --baseline cut:NAME builds
 * such a copy in a folder of its own and times it beside the whole
 * recorder), the lean fresh call stops at one point, and what it leaves
 * undone is never done (the trace loses those calls: a measure, not a
 * recorder). 1, wrapper: the Runner's body calls the tree at once; 2,
 * entry: the Runner's way to the lean fresh path, then the tree;
 * 3, floor: that, the guards and probes, the new input's reads, a weak
 * reference to it kept (64 at most) and the step counter, then the
 * tree (no kept, src or polled check, the deaths dropped unread,
 * nothing queued or written); 4, checks: every check before and after
 * the tree's call as the recorder makes them, the queued inputs' deaths
 * found among the kept weak references (a scan of 64 pointers), then
 * only the weak reference kept, as 3 (no _Queued, no maps, nothing
 * queued or written: what a queue of a few words a call in C would
 * leave); 5, queue: the whole recorder's call, its queue dropped at its
 * bound instead of written (its last call kept: cut_drop), and never
 * written at the journal's time (what the writing costs, beside the
 * whole recorder). 3 and 4 call the tree as the recorder does, its
 * re-entry of _run passed through (hot.steady). In the recorder's own
 * build CUT is 0 and none of it is compiled. */
#ifndef CGT_CUT
#define CGT_CUT 0
#endif
#if CGT_CUT == 3 || CGT_CUT == 4
static PyObject *cut_refs[64];
static unsigned cut_next;
#endif
#if CGT_CUT == 4
/* dead_objs less its (wr, when) pairs whose wr is a kept one: a cut
 * call's inputs, which no map knows. 0, or -1 with an error. */
static int
cut_deaths(PyObject *dead_objs)
{
    if (!PyList_CheckExact(dead_objs))
        return 0;
    for (Py_ssize_t i = PyList_GET_SIZE(dead_objs) - 1; i >= 0; i--) {
        PyObject *pair = PyList_GET_ITEM(dead_objs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
            continue;
        PyObject *wr = PyTuple_GET_ITEM(pair, 0);
        for (int j = 0; j < 64; j++)
            if (cut_refs[j] == wr) {
                if (PySequence_DelItem(dead_objs, i) < 0)
                    return -1;
                break;
            }
    }
    return 0;
}
#endif
#if CGT_CUT == 5
/* The queue at its bound dropped, not written: its last call kept, in
 * the list and the three maps (ctx's fq_ids, fq_wrs, fq_stor), as the
 * bound's writing keeps it (its input's death is then the next call's,
 * found as the recorder finds it). 0, or -1 with an error. */
static int
cut_drop(PyObject *fq, PyObject *ctx)
{
    Py_ssize_t n = PyList_GET_SIZE(fq);
    if (n == 0)
        return 0;
    PyObject *t = Py_NewRef(PyList_GET_ITEM(fq, n - 1)), *oid = NULL, *wr = NULL, *cd = NULL, *idw = NULL;
    PyObject *fq_ids = PyTuple_GET_ITEM(ctx, 9), *fq_wrs = PyTuple_GET_ITEM(ctx, 10),
             *fq_stor = PyTuple_GET_ITEM(ctx, 11);
    int rc = -1;
    if (del_head(fq, n) < 0)
        goto done;
    PyDict_Clear(fq_ids);
    PyDict_Clear(fq_wrs);
    PyDict_Clear(fq_stor);
    /* (its deaths were the dropped calls': let go with them) */
    if (PyList_Append(fq, t) < 0 || SSET(t, groups, Py_None) < 0 || (oid = SGET(t, oid)) == NULL
        || (wr = SGET(t, wr)) == NULL
        || (cd = SGET(t, cd)) == NULL || (idw = PyLong_FromVoidPtr(wr)) == NULL
        || PyObject_SetItem(fq_ids, oid, t) < 0 || PyObject_SetItem(fq_wrs, idw, t) < 0
        || PyObject_SetItem(fq_stor, cd, t) < 0)
        goto done;
    rc = 0;
done:
    Py_DECREF(t);
    Py_XDECREF(oid);
    Py_XDECREF(wr);
    Py_XDECREF(cd);
    Py_XDECREF(idw);
    return rc;
}
#endif

/* Where a lean call's time goes, part by part: built with -DCGT_PARTS
 * (tools/gpu/recorder-overhead.py --parts builds such a copy in a
 * folder of its own), each part's nanoseconds and count are summed and
 * parts() answers them; in the recorder's own build the marks are
 * nothing. A
 * mark reads the monotonic clock (tens of ns), so the sum of the parts
 * is a little over the calls' own time. steady_tree and fq_tree are not
 * the recorder's: the tree's own call, timed where the Runner makes it
 * (against the unrecorded call: what the recorder's footprint costs
 * torch's code). run_all (the Runner's whole call, the tree's in it)
 * and fq_bound (the lean fresh path's queue written at its bound: the
 * recorder's Python, fq_write in it) hold other parts: the sum leaves
 * them out too. */
#define PARTS(X)                                                                                      \
    X(run_lock) X(run_lookup) X(run_release) X(steady_checks) X(steady_src) X(steady_before)          \
    X(steady_after) X(fq_counter) X(fq_guards) X(fq_probes) X(fq_kept) X(fq_src) X(fq_input)          \
    X(fq_polled) X(fq_deaths) X(fq_queued) X(fq_maps) X(fresh_after) X(fq_post) X(fq_write) X(steady_tree)      \
    X(fq_tree) X(run_all) X(fq_bound)
#define PART_ENUM(n) P_##n,
enum { PARTS(PART_ENUM) P_COUNT };
#ifdef CGT_PARTS
#include <time.h>
#define PART_NAME(n) #n,
static const char *part_names[] = {PARTS(PART_NAME)};
static unsigned long long part_ns[P_COUNT], part_n[P_COUNT];

static inline unsigned long long
part_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* Part p took from *t0 to now; *t0 becomes now (the next part's start). */
static inline void
part_add(int p, unsigned long long *t0)
{
    unsigned long long t = part_now();
    part_ns[p] += t - *t0;
    part_n[p]++;
    *t0 = t;
}

/* fresh_queue's clock, which fresh_checks' marks go on with (neither
 * re-enters: nothing they call runs the tree). */
static unsigned long long part_t;

#define PART_CLOCK(v) unsigned long long v = part_now()
#define PART(p, v) part_add(P_##p, &(v))
#define PART_START() (part_t = part_now())
#define PART_AT(p) part_add(P_##p, &part_t)
#else
#define PART_CLOCK(v) int v = 0
#define PART(p, v) ((void)(v))
#define PART_START() ((void)0)
#define PART_AT(p) ((void)0)
#endif

/* (below: kept_same's check, of weak references or a KeptSet) */
static int kept_check(PyObject *refs, PyObject *inputs, PyObject *kept, PyObject *full, PyObject *ptrs,
                      PyObject *ptrs_equal, PyObject *data_ptr);

static PyObject *
steady_ok(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(11, "steady_ok");
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
    /* (every input kept, at its own position: the plan's in_idx; its
     * in_ptrs every position's pointer) */
    TRY(kept_check(PyTuple_GET_ITEM(lean, L_IN_REFS), new_inputs, PyTuple_GET_ITEM(lean, L_IN_IDX),
                   PyTuple_GET_ITEM(lean, L_IN_PTRS), PyTuple_GET_ITEM(lean, L_IN_PTRS), ptrs_equal, data_ptr));
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
            int alive = o == Py_None ? 0 : count_says_alive(o, uses);
            if (alive < 0) {
                Py_DECREF(pf);
                goto error;
            }
            Py_CLEAR(o);
            if (!alive) {
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

/* What both lean paths ask of the tree's call before its outputs: nothing
 * else done (other), the node node_ref names replayed (not None, with
 * not_none), a list of nout outputs, no checkpoint taken, nothing died.
 * 1, 0, -1. */
static int
tree_did_only(PyObject *other, PyObject *node, int not_none, PyObject *node_ref, PyObject *out, PyObject *nout,
              PyObject *mgr, PyObject *ckpt, PyObject *dead_objs)
{
    int t = PyObject_IsTrue(other);
    if (t != 0)
        return t < 0 ? -1 : 0;
    if (not_none && node == Py_None)
        return 0;
    if ((t = deref_is(node_ref, node)) <= 0)
        return t;
    if (!PyList_CheckExact(out))
        return 0;
    if ((t = len_is(out, nout)) <= 0)
        return t;
    if ((t = compared(PyObject_GetAttr(mgr, s_debug_ckpt), ckpt, Py_EQ)) <= 0)
        return t;
    t = PyObject_IsTrue(dead_objs);
    return t < 0 ? -1 : !t;
}

static PyObject *
steady_after(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(6, "steady_after");
    PyObject *lean = args[0], *out = args[1], *node = args[2], *other = args[3], *mgr = args[4],
             *dead_objs = args[5];
    if (check_tuple(lean, L_LEN, "steady_after: lean") < 0)
        return NULL;
    TRY(tree_did_only(other, node, 0, PyTuple_GET_ITEM(lean, L_NODE_REF), out, PyTuple_GET_ITEM(lean, L_NOUT), mgr,
                      PyTuple_GET_ITEM(lean, L_CKPT), dead_objs));
    TRY(refs_are(PyTuple_GET_ITEM(lean, L_OUT_REFS), out, NULL));
    TRY(compared(PyObject_GetAttr(node, s_outputs_weakrefs), PyTuple_GET_ITEM(lean, L_WRAPPERS), Py_EQ));
    Py_RETURN_TRUE;
no:
    Py_RETURN_FALSE;
error:
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

/* A frame of the calling thread's stack, depth frames above the calling
 * Python function's, walked up one at a time (frame_at, frame_back) as
 * PyFrame_GetBack walks: with CGT_FAST_FRAMES the interpreter's own frame
 * (i), whose object (f) is made only when asked for (frame_object: src_of,
 * a line not seen yet); else the frame object itself. frame_done lets go
 * of the object. */
typedef struct {
#ifdef CGT_FAST_FRAMES
    _PyInterpreterFrame *i;
#endif
    PyFrameObject *f;
    Py_ssize_t depth;
} Frame;

#ifdef CGT_FAST_FRAMES
/* The first complete frame from i on (PyFrame_GetBack's skip). */
static inline _PyInterpreterFrame *
iframe_complete(_PyInterpreterFrame *i)
{
    while (i != NULL && _PyFrame_IsIncomplete(i))
        i = i->previous;
    return i;
}
#endif

/* 1 found, 0 the stack is shallower. */
static int
frame_at(Frame *fr, Py_ssize_t depth)
{
    fr->f = NULL;
    fr->depth = depth;
#ifdef CGT_FAST_FRAMES
    PyThreadState *ts = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *i = iframe_complete(ts->current_frame);
#else
    _PyInterpreterFrame *i = iframe_complete(ts->cframe->current_frame);
#endif
    while (i != NULL && depth-- > 0)
        i = iframe_complete(i->previous);
    fr->i = i;
    return i != NULL;
#else
    fr->f = frame_up(depth);
    return fr->f != NULL;
#endif
}

/* One frame up: 1, 0 past the stack's top. */
static int
frame_back(Frame *fr)
{
    fr->depth++;
#ifdef CGT_FAST_FRAMES
    fr->i = iframe_complete(fr->i->previous);
    return fr->i != NULL;
#else
    PyFrameObject *b = PyFrame_GetBack(fr->f);
    Py_DECREF(fr->f);
    fr->f = b;
    return b != NULL;
#endif
}

/* Its code, borrowed (the frame holds it). */
static PyCodeObject *
frame_code(Frame *fr)
{
#ifdef CGT_FAST_FRAMES
#if PY_VERSION_HEX >= 0x030D0000
    return _PyFrame_GetCode(fr->i);
#else
    return fr->i->f_code;
#endif
#else
    PyCodeObject *code = PyFrame_GetCode(fr->f);
    Py_DECREF(code);
    return code;
#endif
}

/* Its f_lasti (new reference), as PyFrame_GetLasti answers. */
static PyObject *
frame_at_lasti(Frame *fr)
{
#ifdef CGT_FAST_FRAMES
    int lasti = _PyInterpreterFrame_LASTI(fr->i);
    return PyLong_FromLong(lasti < 0 ? -1 : lasti * (int)sizeof(_Py_CODEUNIT));
#elif PY_VERSION_HEX >= 0x030B0000
    return PyLong_FromLong(PyFrame_GetLasti(fr->f));
#else
    return PyObject_GetAttr((PyObject *)fr->f, s_f_lasti);
#endif
}

/* Its frame object, borrowed (NULL with an exception: not made). */
static PyObject *
frame_object(Frame *fr)
{
    if (fr->f == NULL && (fr->f = frame_up(fr->depth)) == NULL)
        PyErr_SetString(PyExc_SystemError, "frame_object: the frame is gone");
    return (PyObject *)fr->f;
}

static void
frame_done(Frame *fr)
{
    Py_CLEAR(fr->f);
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

/* fastpath.frame_src with depth a C integer (new reference, or NULL). */
static PyObject *
frame_src_impl(Py_ssize_t depth, PyObject *code_ref, PyObject *plan)
{
    PyObject *lasti = NULL, *map = NULL, *src = NULL, *f;
    Frame fr;
    if (!frame_at(&fr, depth))
        Py_RETURN_NONE;
    int t = deref_is(code_ref, (PyObject *)frame_code(&fr));
    if (t <= 0) {
        frame_done(&fr);
        if (t < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if ((map = SGET(plan, src_lasti)) == NULL || (lasti = frame_at_lasti(&fr)) == NULL
        || (src = dict_get(map, lasti, NULL)) == NULL)
        goto done;
    if (src == Py_None) {
        Py_DECREF(src);
        src = (f = frame_object(&fr)) == NULL ? NULL : PyObject_CallMethodOneArg(plan, s_src_of, f);
    }
done:
    frame_done(&fr);
    Py_XDECREF(map);
    Py_XDECREF(lasti);
    return src;
}

static PyObject *
frame_src(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "frame_src");
    Py_ssize_t depth = PyLong_AsSsize_t(args[0]);
    if (depth == -1 && PyErr_Occurred())
        return NULL;
    return frame_src_impl(depth, args[1], args[2]);
}

static PyObject *
probes_same(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "probes_same");
    int t = mapped_eq(NULL, args[0], args[1]);
    if (t < 0)
        return NULL;
    return PyBool_FromLong(t);
}

/* The kept inputs' pointers: ptrs_same's check, or without torch's C
 * check list(map(data_ptr, map(inputs.__getitem__, kept))) == ptrs. 1, 0,
 * -1. */
static int
kept_ptrs(PyObject *inputs, PyObject *kept, PyObject *full, PyObject *ptrs, PyObject *ptrs_equal,
          PyObject *data_ptr)
{
    if (ptrs_equal != Py_None)
        return ptrs_same(ptrs_equal, inputs, full, kept, NULL, NULL, NULL);
    PyObject *items = PyList_New(0);
    if (items == NULL)
        return -1;
    PyObject *kf = PySequence_Fast(kept, "kept: not a sequence");
    if (kf == NULL) {
        Py_DECREF(items);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(kf); i++) {
        PyObject *v = PyObject_GetItem(inputs, PySequence_Fast_GET_ITEM(kf, i));
        if (v == NULL || PyList_Append(items, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(kf);
            Py_DECREF(items);
            return -1;
        }
        Py_DECREF(v);
    }
    Py_DECREF(kf);
    int t = mapped_eq(data_ptr, items, ptrs);
    Py_DECREF(items);
    return t;
}

static PyObject *
kept_same(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "kept_same");
    int t = kept_check(args[0], args[1], args[2], args[3], args[4], args[5], args[6]);
    if (t < 0)
        return NULL;
    return PyBool_FromLong(t);
}

/* -- KeptSet: the kept inputs of a lean fresh call, by address --
 *
 * KeptSet(refs, kept, ptrs, ptrs_are=None) stands for the armed tuple's
 * weak references to the kept inputs (a model's parameters: hundreds a
 * call at real size): each object's address, its position in the call's
 * inputs and its data pointer, in three C arrays, and a weak reference
 * of its own to each object whose callback (the KeptSet) sets dead. So
 * the check at a call compares the inputs list's items with the
 * addresses, none of the weak references read (a cold line each at a
 * real program's call): an address another object took after the kept
 * one died is never taken for it, since its death set dead first (the
 * callbacks run in the object's deallocation, before its memory is
 * free, and the KeptSet, alive while armed, keeps its weak references
 * alive). The pointers are then asked of the C++ module's ptrs_are
 * (cpp.py's PTRS_ARE capsule) where given, else as kept_same asks them.
 * One a queue's kept inputs, and one a function's steady replays (every
 * input kept), each kept while its lists are the same (Recorder._kept_set). */

static int no_keywords(PyObject *kwds, const char *what);

typedef int (*ptrs_are_fn)(PyObject *const *objs, Py_ssize_t n, void *const *want);

typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall; /* (the weak references' callback) */
    int dead;
    Py_ssize_t n;
    ptrs_are_fn ptrs_are;
    PyObject *wrs;     /* its weak references (a tuple), with itself as callback */
    PyObject *reader;  /* the capsule ptrs_are came from, or None */
    Py_ssize_t *idx;   /* each object's position among a call's inputs */
    PyObject **obj;    /* its address (borrowed: never dereferenced while dead) */
    void **ptr;        /* its data pointer */
} KeptSet;

static PyTypeObject KeptSetType;

static PyObject *
kept_set_died(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ((KeptSet *)self)->dead = 1;
    Py_RETURN_NONE;
}

static PyObject *
kept_set_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *refs, *kept, *ptrs, *reader = Py_None;
    if (!no_keywords(kwds, "KeptSet") || !PyArg_ParseTuple(args, "OOO|O:KeptSet", &refs, &kept, &ptrs, &reader))
        return NULL;
    ptrs_are_fn fn = NULL;
    if (reader != Py_None && (fn = (ptrs_are_fn)PyCapsule_GetPointer(reader, "_cgtrace_cpp.ptrs_are")) == NULL)
        return NULL;
    PyObject *rf = PySequence_Fast(refs, "KeptSet: refs not a sequence"), *kf = NULL, *pf = NULL;
    KeptSet *ks = NULL;
    if (rf == NULL || (kf = PySequence_Fast(kept, "KeptSet: kept not a sequence")) == NULL
        || (pf = PySequence_Fast(ptrs, "KeptSet: ptrs not a sequence")) == NULL)
        goto error;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rf);
    if (PySequence_Fast_GET_SIZE(kf) != n || PySequence_Fast_GET_SIZE(pf) != n) {
        PyErr_SetString(PyExc_ValueError, "KeptSet: refs, kept and ptrs of one length expected");
        goto error;
    }
    if ((ks = (KeptSet *)type->tp_alloc(type, 0)) == NULL)
        goto error;
    ks->vectorcall = kept_set_died;
    ks->n = n;
    ks->ptrs_are = fn;
    ks->reader = Py_NewRef(reader);
    /* (one block for the three arrays: the check reads them in one pass) */
    char *block = PyMem_Malloc(n > 0 ? n * (sizeof(Py_ssize_t) + sizeof(PyObject *) + sizeof(void *)) : 1);
    if (block == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    ks->idx = (Py_ssize_t *)block;
    ks->obj = (PyObject **)(block + n * sizeof(Py_ssize_t));
    ks->ptr = (void **)(block + n * (sizeof(Py_ssize_t) + sizeof(PyObject *)));
    if ((ks->wrs = PyTuple_New(n)) == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        ks->obj[i] = NULL;
        ks->idx[i] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(kf, i));
        ks->ptr[i] = PyLong_AsVoidPtr(PySequence_Fast_GET_ITEM(pf, i));
        if (PyErr_Occurred())
            goto error;
        if (ks->idx[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "KeptSet: a negative position");
            goto error;
        }
        PyObject *o = deref(PySequence_Fast_GET_ITEM(rf, i));
        if (o == NULL)
            goto error;
        if (o == Py_None) {
            /* (a kept input already gone: never the same again) */
            Py_DECREF(o);
            ks->dead = 1;
            PyTuple_SET_ITEM(ks->wrs, i, Py_NewRef(Py_None));
            continue;
        }
        PyObject *wr = PyWeakref_NewRef(o, (PyObject *)ks);
        ks->obj[i] = o;
        Py_DECREF(o);
        if (wr == NULL)
            goto error;
        PyTuple_SET_ITEM(ks->wrs, i, wr);
    }
    Py_DECREF(rf);
    Py_DECREF(kf);
    Py_DECREF(pf);
    return (PyObject *)ks;
error:
    Py_XDECREF(rf);
    Py_XDECREF(kf);
    Py_XDECREF(pf);
    Py_XDECREF(ks);
    return NULL;
}

/* Each kept object at its position of inputs (a list, as torch's calls
 * pass them, or a tuple; any other sequence is declined) by address,
 * alive, at its data pointer: 1, 0, -1. kept, full and ptrs_equal:
 * kept_same's, for the pointers where no ptrs_are was given. */
static int
kept_set_check(KeptSet *ks, PyObject *inputs, PyObject *kept, PyObject *full, PyObject *ptrs, PyObject *ptrs_equal,
               PyObject *data_ptr)
{
    if (ks->dead || !(PyList_CheckExact(inputs) || PyTuple_CheckExact(inputs)))
        return 0;
    PyObject **items = PySequence_Fast_ITEMS(inputs);
    Py_ssize_t m = PySequence_Fast_GET_SIZE(inputs);
    for (Py_ssize_t i = 0; i < ks->n; i++)
        if (ks->idx[i] >= m || items[ks->idx[i]] != ks->obj[i])
            return 0;
    if (ks->ptrs_are != NULL)
        return ks->ptrs_are(ks->obj, ks->n, ks->ptr);
    return kept_ptrs(inputs, kept, full, ptrs, ptrs_equal, data_ptr);
}

/* The kept inputs' check, kept_same's: each kept object (refs: the weak
 * references to them, or a KeptSet of them) at its position of inputs
 * (kept), at the pointer ptrs holds for it (full: every position's, as
 * torch's check takes them). 1, 0, -1. */
static int
kept_check(PyObject *refs, PyObject *inputs, PyObject *kept, PyObject *full, PyObject *ptrs, PyObject *ptrs_equal,
           PyObject *data_ptr)
{
    if (Py_IS_TYPE(refs, &KeptSetType))
        return kept_set_check((KeptSet *)refs, inputs, kept, full, ptrs, ptrs_equal, data_ptr);
    int t = refs_are(refs, inputs, kept);
    return t == 1 ? kept_ptrs(inputs, kept, full, ptrs, ptrs_equal, data_ptr) : t;
}

static PyObject *
kept_set_same(KeptSet *ks, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(6, "KeptSet.same");
    /* (same(inputs, kept, full, ptrs_equal, data_ptr, ptrs)) */
    int t = kept_set_check(ks, args[0], args[1], args[2], args[5], args[3], args[4]);
    if (t < 0)
        return NULL;
    return PyBool_FromLong(t);
}

static PyObject *
kept_set_get_dead(KeptSet *ks, void *closure)
{
    return PyBool_FromLong(ks->dead);
}

static int
kept_set_traverse(KeptSet *ks, visitproc visit, void *arg)
{
    Py_VISIT(ks->wrs);
    Py_VISIT(ks->reader);
    return 0;
}

static int
kept_set_clear(KeptSet *ks)
{
    Py_CLEAR(ks->wrs);
    Py_CLEAR(ks->reader);
    return 0;
}

static void
kept_set_dealloc(KeptSet *ks)
{
    PyObject_GC_UnTrack(ks);
    kept_set_clear(ks);
    PyMem_Free(ks->idx);
    Py_TYPE(ks)->tp_free((PyObject *)ks);
}

static PyMethodDef kept_set_methods[] = {
    {"same", (PyCFunction)(void (*)(void))kept_set_same, METH_FASTCALL,
     "same(inputs, kept, full, ptrs_equal, data_ptr, ptrs): kept_same(refs, inputs, kept, full, ptrs, ptrs_equal, "
     "data_ptr) for the refs it was made of."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef kept_set_getset[] = {
    {"dead", (getter)kept_set_get_dead, NULL, "Whether a kept object died (or was gone when it was made).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject KeptSetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.KeptSet",
    .tp_basicsize = sizeof(KeptSet),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "KeptSet(refs, kept, ptrs, ptrs_are=None): the kept inputs of a lean fresh call by address.",
    .tp_new = kept_set_new,
    .tp_dealloc = (destructor)kept_set_dealloc,
    .tp_traverse = (traverseproc)kept_set_traverse,
    .tp_clear = (inquiry)kept_set_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(KeptSet, vectorcall),
    .tp_methods = kept_set_methods,
    .tp_getset = kept_set_getset,
};

/* fastpath.fresh_src with up and d C integers: 1, 0, -1. */
static int
fresh_src_impl(PyObject *own, Py_ssize_t d, PyObject *code_ref, PyObject *src_lasti, PyObject *plan,
               PyObject *src, Py_ssize_t up)
{
    PyObject *x = NULL, *lasti = NULL, *f;
    int t = -1;
    Frame fr;
    /* (the frame that called _run: not this package's; then d on from it) */
    if (!frame_at(&fr, up))
        goto shallow;
    if ((x = dict_get(own, frame_code(&fr)->co_filename, NULL)) == NULL)
        goto done;
    if (x != Py_False) {
        t = 0;
        goto done;
    }
    Py_CLEAR(x);
    while (d-- > 0)
        if (!frame_back(&fr))
            goto shallow;
    if ((t = deref_is(code_ref, (PyObject *)frame_code(&fr))) <= 0)
        goto done;
    t = -1;
    if ((lasti = frame_at_lasti(&fr)) == NULL || (x = dict_get(src_lasti, lasti, src_lasti)) == NULL)
        goto done;
    if (x != src) {
        Py_CLEAR(x);
        if ((f = frame_object(&fr)) == NULL || (x = PyObject_CallMethodOneArg(plan, s_src_of, f)) == NULL)
            goto done;
    }
    t = x == src;
done:
    frame_done(&fr);
    Py_XDECREF(x);
    Py_XDECREF(lasti);
    return t;
shallow:
    PyErr_SetString(PyExc_ValueError, "call stack is not deep enough");
    t = -1;
    goto done;
}

static PyObject *
fresh_src(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "fresh_src");
    Py_ssize_t d = PyLong_AsSsize_t(args[1]), up = PyLong_AsSsize_t(args[6]);
    if ((d == -1 || up == -1) && PyErr_Occurred())
        return NULL;
    int t = fresh_src_impl(args[0], d, args[2], args[3], args[4], args[5], up);
    return t < 0 ? NULL : PyBool_FromLong(t);
}

/* o.name, truth: 1, 0, -1. */
static int
attr_true(PyObject *o, PyObject *name)
{
    return truth(PyObject_GetAttr(o, name));
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
    int t = compared(call ? PyObject_CallMethodNoArgs(o, name) : PyObject_GetAttr(o, name), want, Py_NE);
    return t < 0 ? -1 : !t;
}

/* -- The compact queue: the lean fresh path's queued calls as a few words
 * each (the Runner's, unless CGTRACE_COMPACT=0). --
 *
 * A queued call was a _Queued object made at the call, put in the three
 * maps by which the checks find the queued inputs (fq_ids, fq_wrs,
 * fq_stor) and in the queue's list, its deaths a dict of lists of pairs:
 * a dozen objects a call, made and later freed in the middle of torch's
 * work, each a cold cache line or more (BENCHMARKS.md, sessions 25 and
 * 39: the queued call's objects, the maps and the grouped deaths some
 * 20% of a new-input call's added misses). Here the Runner's lean call
 * writes an entry of this array instead, and finds the queued inputs in
 * it; the entries become the same _Queued objects, in the same maps, in
 * the list where the Compact itself stands for them (its last item),
 * only when anything else looks (sync: the general path, a host read, a
 * call the lean path does not take whole), and the writer (fq_run) writes
 * them as they are at the queue's bound. So the Python sees what it saw,
 * and a queue written at its bound makes no object but its kept call.
 * The keys the checks look for (an input's id, its storage) are kept
 * apart from the entries, with a filter of them: a new input none of the
 * queue's shares a key with (a loop's, as a rule) reads one line of the
 * filter, not a line of each entry. */
#define CQ_CAP 256

/* The filter's bit of a key (an address: its low bits aligned, mixed). */
#define CQ_BIT(v) ((unsigned)((((uint64_t)(v)) * 0x9E3779B97F4A7C15ULL) >> 56))

typedef struct {
    /* what fresh_queue set on the _Queued, kept: its objects, and its
     * ints as words (its oid and cd the Compact's keys, ptr here), made
     * ints again only where asked for (a sync, a stale key's pop): three
     * objects an entry fewer, each a cold line at the queue's bound */
    PyObject *wr, *sref, *inv, *tmpl, *src, *spec;
    uintptr_t ptr;
    PyObject *groups;   /* its deaths in general (a dict, as fresh_deaths makes it), or NULL */
    PyObject *dead_wr;  /* one death before the call (groups NULL): its weak reference, */
    PyObject *dead_obj; /* and what died: an object (a _Queued, an entry), or NULL where */
    Py_ssize_t dead_i;  /* it is this queue's entry dead_i (-1: no death) */
    long long steps, dead_j;
    int gone;
    /* which of the session's maps had a stale key of the input when it
     * was checked (STALE_*, fresh_input_impl), the writer's pops of them */
    int stale;
    /* written by fq_run (fq_entry): the name it took and its order, and
     * the object standing for it where one was asked for (cq_stand_in) */
    PyObject *name, *obj;
    long long order;
    /* (name NULL: name_i > 0 says the name is the queue's name_base + "_"
     * + name_i, not made yet (fq_run's, Writer.in_free); cq_name makes
     * it where it is asked for) */
    long long name_i;
} CEntry;

/* Every reference an entry holds: let go (cq_entry_clear) and visited
 * (compact_traverse) from this one list. */
#define CENTRY_REFS(X) \
    X(wr) X(sref) X(inv) X(tmpl) X(src) X(spec) X(groups) X(dead_wr) X(dead_obj) X(name) X(obj)

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;    /* entries, the pending one among them */
    int pending;     /* e[n - 1] is the call in progress: not in the queue yet */
    Py_ssize_t done; /* the entries fq_run wrote, from the first */
    PyObject *last_name; /* the name the last entry fq_run wrote took */
    PyObject *name_base; /* the base of the entries' names not made (CEntry.name_i) */
    PyObject *fq, *fq_ids, *fq_wrs, *fq_stor, *Queued;
    /* the entries' keys (CQ_ID: the input's id, CQ_CD: its storage), and a
     * bit of each key's set in seen (never cleared but when the queue is
     * emptied: a bit set may be a key gone, never the other way) */
    uint64_t seen[2][4];
    uintptr_t keys[2][CQ_CAP];
    CEntry e[CQ_CAP];
} Compact;

enum { CQ_ID, CQ_CD };

/* A new input's keys the session's maps held when the lean path checked
 * it (fresh_input_impl): by_obj_entry its id (so by_obj too: the two
 * have one set of keys), by_view its view key. Only the general path
 * adds keys to them, and it writes the queue before it runs (Recorder's
 * _settle), so a key a queued input's check did not find is not there
 * when the writer comes to the input's death, and the writer's pops of
 * the stale keys a _bind would have overwritten (fq_common) are not
 * asked for: three lookups of maps as large as a model's parameters and
 * a key tuple an entry, the maps' lines cold at the queue's bound. */
enum { STALE_OBJ = 1, STALE_VIEW = 2 };

static PyTypeObject CompactType;

/* The newest entry whose key k (CQ_ID, CQ_CD) is v: its index, or -1.
 * (The newest: the maps' last setting of a key wins.) */
static Py_ssize_t
cq_find(Compact *q, int k, uintptr_t v)
{
    unsigned b = CQ_BIT(v);
    if (!(q->seen[k][b >> 6] & (1ULL << (b & 63))))
        return -1;
    for (Py_ssize_t i = q->n - 1; i >= 0; i--)
        if (q->keys[k][i] == v)
            return i;
    return -1;
}

/* Entry i's keys set, and their filter's bits. */
static void
cq_key(Compact *q, Py_ssize_t i, uintptr_t oid, uintptr_t cd)
{
    uintptr_t v[2] = {oid, cd};
    for (int k = 0; k < 2; k++) {
        unsigned b = CQ_BIT(v[k]);
        q->keys[k][i] = v[k];
        q->seen[k][b >> 6] |= 1ULL << (b & 63);
    }
}

/* Entry i's key k (CQ_ID: the input's id, CQ_CD: its storage) as the
 * int it was (fresh_queue_impl keeps only keys whose ints are so made
 * again, equal). New reference. */
static PyObject *
cq_key_int(Compact *q, int k, Py_ssize_t i)
{
    return PyLong_FromVoidPtr((void *)q->keys[k][i]);
}

/* The queued (not pending) entry whose weak reference is wr: its index, or
 * -1. */
static Py_ssize_t
cq_find_wr(Compact *q, PyObject *wr)
{
    for (Py_ssize_t i = q->n - q->pending - 1; i >= 0; i--)
        if (q->e[i].wr == wr)
            return i;
    return -1;
}

static int cq_sync(Compact *q);

/* The value of a Python int as a pointer-sized key (0 with an error). */
static uintptr_t
key_of(PyObject *o)
{
    return (uintptr_t)PyLong_AsVoidPtr(o);
}

/* Whether entry e names object o: e.fact.obj_ref is not None and
 * e.fact.obj_ref() is o. 1, 0, -1. */
static int
entry_of(PyObject *e, PyObject *o)
{
    PyObject *fact = SGET(e, fact), *ref;
    if (fact == NULL)
        return -1;
    ref = SGET(fact, obj_ref);
    Py_DECREF(fact);
    if (ref == NULL)
        return -1;
    int t = ref == Py_None ? 0 : deref_is(ref, o);
    Py_DECREF(ref);
    return t;
}

/* fq_ids.get(oid): a queued call's input, and v (its weak reference's
 * object). 1, 0, -1. */
static int
queued_input_is(PyObject *fq_ids, PyObject *oid, PyObject *v)
{
    if (PyDict_CheckExact(fq_ids) && PyDict_GET_SIZE(fq_ids) == 0)
        return 0;
    PyObject *e = dict_get(fq_ids, oid, NULL), *wr = NULL;
    if (e == NULL)
        return -1;
    int t = e == Py_None ? 0 : (wr = SGET(e, wr)) == NULL ? -1 : deref_is(wr, v);
    Py_XDECREF(wr);
    Py_DECREF(e);
    return t;
}

/* fq_stor.get(cd): a queued call over storage cd whose input lives (not
 * gone). 1, 0, -1. */
static int
queued_storage_live(PyObject *fq_stor, PyObject *cd)
{
    if (PyDict_CheckExact(fq_stor) && PyDict_GET_SIZE(fq_stor) == 0)
        return 0;
    PyObject *e = dict_get(fq_stor, cd, NULL);
    if (e == NULL)
        return -1;
    int live = e != Py_None, gone = live ? STRUE(e, gone) : 0;
    Py_DECREF(e);
    return gone < 0 ? -1 : live && !gone;
}

/* fastpath.fresh_input: what the storage's weak reference is made of
 * (the storage; v itself with maps' new_input) as a new reference, with
 * *cd and *oid (new references) and *ptr (new, or NULL: not read) when
 * the new input is taken; Py_None (new) when not; NULL on an error. */
static PyObject *
fresh_input_impl(PyObject *v, PyObject *a, PyObject *maps, PyObject **cd_out, PyObject **oid_out,
                 PyObject **ptr_out, int *stale_out, Compact *q)
{
    PyObject *strided = PyTuple_GET_ITEM(maps, 0), *by_obj_entry = PyTuple_GET_ITEM(maps, 1),
             *by_view = PyTuple_GET_ITEM(maps, 2), *entries = PyTuple_GET_ITEM(maps, 3),
             *dead_cached = PyTuple_GET_ITEM(maps, 4), *by_storage = PyTuple_GET_ITEM(maps, 5),
             *fq_ids = PyTuple_GET_ITEM(maps, 6), *fq_stor = PyTuple_GET_ITEM(maps, 7),
             *new_input = PyTuple_GET_ITEM(maps, 8);
    PyObject *shape = PyTuple_GET_ITEM(a, A_SHAPE), *stride = PyTuple_GET_ITEM(a, A_STRIDE);
    PyObject *stor = NULL, *cd = NULL, *oid = NULL, *e = NULL, *x = NULL, *vk = NULL, *res = NULL, *ptr = NULL;
    int t, stale = 0;
    if (new_input != Py_None) {
        /* cpp.new_input: the checks below and the storage's handle and
         * size, and the data pointer, in one call through libtorch's C++
         * API (the class by type: a __class__ that says otherwise is an
         * object the lean path declines) */
        if ((PyObject *)Py_TYPE(v) != PyTuple_GET_ITEM(a, A_CLS))
            goto no;
        if (new_input == cpp_new_input && cpp_fns != NULL) {
            /* (the same, asked of the C++ function: no call of a Python
             * function, no tuple, the two ints made here) */
            void *sp = NULL, *dp = NULL;
            if ((t = cpp_fns->new_input(v, PyTuple_GET_ITEM(a, A_DT), shape, stride, PyTuple_GET_ITEM(a, A_DEV),
                                        PyTuple_GET_ITEM(a, A_NBYTES), &sp, &dp)) <= 0) {
                if (t < 0)
                    goto error;
                goto no;
            }
            if ((cd = PyLong_FromVoidPtr(sp)) == NULL || (ptr = PyLong_FromVoidPtr(dp)) == NULL)
                goto error;
        } else {
            PyObject *nargs[6] = {v, PyTuple_GET_ITEM(a, A_DT), shape, stride, PyTuple_GET_ITEM(a, A_DEV),
                                  PyTuple_GET_ITEM(a, A_NBYTES)};
            if ((x = PyObject_Vectorcall(new_input, nargs, 6, NULL)) == NULL)
                goto error;
            if (x == Py_None)
                goto no;
            if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 2) {
                PyErr_SetString(PyExc_TypeError, "new_input: (storage, data pointer) expected");
                goto error;
            }
            cd = Py_NewRef(PyTuple_GET_ITEM(x, 0));
            ptr = Py_NewRef(PyTuple_GET_ITEM(x, 1));
            Py_CLEAR(x);
        }
        stor = Py_NewRef(v);
    } else {
        TRY(attr_is(v, s_class, PyTuple_GET_ITEM(a, A_CLS)));
        TRY(attr_is(v, s_layout, strided));
        TRY(attr_is(v, s_dtype, PyTuple_GET_ITEM(a, A_DT)));
        TRY(attr_cmp(v, s_shape, 0, shape));
        TRY(attr_cmp(v, s_stride, 1, stride));
        TRY(attr_cmp(v, s_storage_offset, 1, zero));
        TRY(attr_cmp(v, s_get_device, 1, PyTuple_GET_ITEM(a, A_DEV)));
        if ((stor = PyObject_CallMethodNoArgs(v, s_untyped_storage)) == NULL
            || (cd = PyObject_GetAttr(stor, s_cdata)) == NULL)
            goto error;
    }
    if ((oid = PyLong_FromVoidPtr(v)) == NULL || (e = dict_get(by_obj_entry, oid, NULL)) == NULL)
        goto error;
    if (e != Py_None && (t = entry_of(e, v)) != 0)
        goto decided;
    if (e != Py_None)
        stale |= STALE_OBJ;
    Py_CLEAR(e);
    if (new_input == Py_None) /* (new_input compared it) */
        TRY(attr_cmp(stor, s_nbytes, 1, PyTuple_GET_ITEM(a, A_NBYTES)));
    /* by_view.get(vk) in entries or vk in dead_cached or by_storage.get(cd) */
    if ((vk = PyTuple_Pack(4, cd, zero, shape, stride)) == NULL || (x = dict_get(by_view, vk, NULL)) == NULL)
        goto error;
    /* (a view no name is over: None, never a name of entries, whose keys
     * are str, so not looked up there) */
    /* (an empty dict not asked: asking hashes the key, here a tuple whose
     * hash walks the shape's and the strides' items, as by_view's did) */
    if ((t = x == Py_None ? 0 : PySequence_Contains(entries, x)) != 0
        || (t = PyDict_CheckExact(dead_cached) && PyDict_GET_SIZE(dead_cached) == 0
                    ? 0
                    : PySequence_Contains(dead_cached, vk)) != 0)
        goto decided;
    if (x != Py_None)
        stale |= STALE_VIEW;
    Py_CLEAR(x);
    if ((x = dict_get(by_storage, cd, NULL)) == NULL)
        goto error;
    if ((t = PyObject_IsTrue(x)) != 0)
        goto decided;
    Py_CLEAR(x);
    /* e = fq_ids.get(oid): e.wr() is v; e = fq_stor.get(cd): not e.gone.
     * Each asked of the compact queue first (its entries are newer than
     * the maps': its answer for a key, where it has one, is the newest) */
    Py_ssize_t ci = -1, cj = -1;
    if (q != NULL && q->n > 0) {
        uintptr_t ov = key_of(oid), cv = ov == 0 && PyErr_Occurred() ? 0 : key_of(cd);
        if (PyErr_Occurred())
            goto error;
        ci = cq_find(q, CQ_ID, ov);
        cj = cq_find(q, CQ_CD, cv);
    }
    if ((t = ci >= 0 ? deref_is(q->e[ci].wr, v) : queued_input_is(fq_ids, oid, v)) != 0
        || (t = cj >= 0 ? !q->e[cj].gone : queued_storage_live(fq_stor, cd)) != 0)
        goto decided;
    *cd_out = cd;
    *oid_out = oid;
    *ptr_out = ptr;
    *stale_out = stale;
    cd = oid = ptr = NULL;
    res = stor;
    stor = NULL;
    goto error; /* (error's cleanup serves success too: res is set) */
decided: /* t: 1 declines, -1 an error */
    if (t < 0)
        goto error;
no:
    res = Py_NewRef(Py_None);
error:
    Py_XDECREF(stor);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(e);
    Py_XDECREF(x);
    Py_XDECREF(vk);
    Py_XDECREF(ptr);
    return res;
}

static PyObject *
fresh_input(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "fresh_input");
    if (check_tuple(args[1], A_LEN, "fresh_input: a") < 0 || check_tuple(args[2], 9, "fresh_input: maps") < 0)
        return NULL;
    PyObject *cd = NULL, *oid = NULL, *ptr = NULL;
    int stale;
    PyObject *stor = fresh_input_impl(args[0], args[1], args[2], &cd, &oid, &ptr, &stale, NULL);
    if (stor == NULL || stor == Py_None)
        return stor;
    /* (sobj, cd, ptr): what fastpath.fresh_input answers */
    PyObject *r = PyTuple_Pack(3, stor, cd, ptr != NULL ? ptr : Py_None);
    Py_DECREF(stor);
    Py_DECREF(cd);
    Py_DECREF(oid);
    Py_XDECREF(ptr);
    return r;
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
            /* uses None: no tree wrapper judges it, so alive while its
             * object is (_Probe.alive's last branch), without its frame. */
            int u = uses == Py_None ? 0 : PyObject_IsTrue(uses);
            if (u < 0)
                goto error;
            PyObject *o = deref(r);
            if (o == NULL)
                goto error;
            int a = o == Py_None ? 0 : uses == Py_None ? 1 : count_says_alive(o, u);
            Py_DECREF(o);
            if (a < 0)
                goto error;
            if (a)
                continue;
        }
        int t = truth(PyObject_CallNoArgs(alive));
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

/* Whether fact.alive is probe's own _Probe.alive (the bound method of
 * probe's class's alive): 1, 0, -1. */
static int
probe_alive_is(PyObject *fact, PyObject *probe)
{
    PyObject *alive = PyObject_GetAttr(fact, s_alive), *fn = NULL;
    int t = -1;
    if (alive != NULL && (fn = PyObject_GetAttr((PyObject *)Py_TYPE(probe), s_alive)) != NULL)
        t = PyMethod_Check(alive) && PyMethod_GET_SELF(alive) == probe && PyMethod_GET_FUNCTION(alive) == fn;
    Py_XDECREF(alive);
    Py_XDECREF(fn);
    return t;
}

/* e.fact.alive() for one polled name e, reading the count that says
 * alive for sure in place where e's probe read its tree wrapper's rule
 * for the same check already (_Probe.alive's first branch), else asking
 * it: 1, 0, -1. */
static int
entry_alive(PyObject *e)
{
    PyObject *fact = PyObject_GetAttr(e, s_fact), *probe = NULL, *w = NULL, *chk = NULL, *mine = NULL,
             *rule = NULL, *wr = NULL, *o = NULL;
    int t = -1;
    if (fact == NULL)
        return -1;
    if ((probe = PyObject_GetAttr(fact, s_probe)) == NULL)
        goto done;
    if (probe != Py_None) {
        if ((w = PyObject_GetAttr(probe, s_tree_ref)) == NULL)
            goto done;
        if (w != Py_None) {
            if ((chk = PyObject_GetAttr(w, s_extra_ref_check)) == NULL)
                goto done;
            if ((mine = PyObject_GetAttr(probe, s_check)) == NULL)
                goto done;
            if (chk != Py_None && chk == mine) {
                if ((rule = PyObject_GetAttr(probe, s_rule)) == NULL)
                    goto done;
                long r = rule == Py_None ? 0 : PyLong_AsLong(rule);
                if (r == -1 && PyErr_Occurred())
                    goto done;
                if (r != 0) {
                    if ((wr = PyObject_GetAttr(probe, s_wr)) == NULL || (o = deref(wr)) == NULL)
                        goto done;
                    int a = o == Py_None ? 0 : count_says_alive(o, r == 2); /* (2: USE_COUNT) */
                    if (a != 0) {
                        t = a;
                        goto done;
                    }
                }
                Py_CLEAR(o); /* (no reference of ours while the tree counts them) */
                /* Not alive for sure: what _Probe.alive asks next, the
                 * tree's wrapper, asked here when the Fact's alive is its
                 * probe's (a frame fewer for each dead output of a
                 * training step, hundreds a step). */
                if ((t = probe_alive_is(fact, probe)) != 0) {
                    if (t > 0) {
                        int x = truth(PyObject_CallMethodNoArgs(w, s_expired));
                        t = x < 0 ? -1 : !x;
                    }
                    goto done;
                }
            }
        }
    }
    Py_CLEAR(o);
    t = truth(PyObject_CallMethodNoArgs(fact, s_alive));
done:
    Py_XDECREF(o);
    Py_XDECREF(wr);
    Py_XDECREF(rule);
    Py_XDECREF(mine);
    Py_XDECREF(chk);
    Py_XDECREF(w);
    Py_XDECREF(probe);
    Py_DECREF(fact);
    return t;
}

/* fastpath.watch_dead: the polled names (an iterable of entries) whose
 * tensor is dead now, in their order, or None when none is. */
static PyObject *
watch_dead(PyObject *self, PyObject *entries)
{
    PyObject *it = PyObject_GetIter(entries), *e, *dead = NULL;
    if (it == NULL)
        return NULL;
    while ((e = PyIter_Next(it)) != NULL) {
        int t = entry_alive(e);
        if (t == 0 && dead == NULL && (dead = PyList_New(0)) == NULL)
            t = -1;
        if (t == 0 && PyList_Append(dead, e) < 0)
            t = -1;
        Py_DECREF(e);
        if (t < 0)
            goto error;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        Py_XDECREF(dead);
        return NULL;
    }
    if (dead == NULL)
        Py_RETURN_NONE;
    return dead;
error:
    Py_DECREF(it);
    Py_XDECREF(dead);
    return NULL;
}

/* ---- The session's names bound and unbound (names.bind_all, forget_all) ----
 *
 * A training step binds each output of its two calls anew and forgets
 * each one when it dies: at 64 layers, 192 of each a step, each a dozen
 * dict operations and an entry made, 1 to 2 us a pair in Python on the
 * stand-in (BENCHMARKS.md, session 22). The same operations in the same
 * order here; the maps are Session._name_maps()'s. */

enum { M_ENTRIES, M_BY_STORAGE, M_OUT_STORAGE, M_BY_OBJ, M_BY_OBJ_ENTRY, M_BY_VIEW, M_WATCH, M_HELD_WR,
       M_DIED, M_ENTRY, M_LEN };

/* maps' first need items into m (borrowed), its dicts checked: 0, -1. */
static int
name_maps(PyObject *maps, PyObject **m, Py_ssize_t need)
{
    if (!PyTuple_CheckExact(maps) || PyTuple_GET_SIZE(maps) < need) {
        PyErr_Format(PyExc_TypeError, "maps: a tuple of at least %zd", need);
        return -1;
    }
    for (Py_ssize_t i = 0; i < need; i++) {
        m[i] = PyTuple_GET_ITEM(maps, i);
        if (i < M_DIED && !PyDict_CheckExact(m[i])) {
            PyErr_Format(PyExc_TypeError, "maps[%zd]: a dict, not %.100s", i, Py_TYPE(m[i])->tp_name);
            return -1;
        }
    }
    return 0;
}

/* d.pop(key, None), its result dropped: 0, -1. */
static int
pop_key(PyObject *d, PyObject *key)
{
    if (PyDict_CheckExact(d)) {
        if (PyDict_GET_SIZE(d) == 0) /* (the key's hash not computed: a tuple's walks its items) */
            return 0;
        int t = PyDict_Contains(d, key);
        if (t <= 0)
            return t;
        return PyDict_DelItem(d, key);
    }
    PyObject *r = PyObject_CallMethod(d, "pop", "OO", key, Py_None);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Whether d.get(key) == v (d a dict): 1, 0, -1. */
static int
dict_has(PyObject *d, PyObject *key, PyObject *v)
{
    PyObject *x = PyDict_GetItemWithError(d, key);
    if (x == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(x);
    int t = PyObject_RichCompareBool(x, v, Py_EQ);
    Py_DECREF(x);
    return t;
}

/* entry(name, fact, kind, order), as state._Entry's __init__ makes it,
 * without its Python frame: a class whose instances object.__new__
 * makes gets its seven slots set here (test_fastpath holds them to
 * __init__'s); any other is called. New reference. */
static PyObject *
new_entry(PyObject *entry, PyObject *name, PyObject *fact, PyObject *kind, PyObject *order)
{
    if (!PyType_Check(entry) || ((PyTypeObject *)entry)->tp_new != PyBaseObject_Type.tp_new) {
        PyObject *args[4] = {name, fact, kind, order};
        return PyObject_Vectorcall(entry, args, 4, NULL);
    }
    PyTypeObject *tp = (PyTypeObject *)entry;
    PyObject *e = tp->tp_alloc(tp, 0);
    if (e == NULL)
        return NULL;
    if (sset(e, &slots[SL_b_name], s_name, name) < 0 || sset(e, &slots[SL_b_fact], s_fact, fact) < 0
        || sset(e, &slots[SL_b_kind], s_kind, kind) < 0 || sset(e, &slots[SL_b_order], s_order, order) < 0
        || sset(e, &slots[SL_b_in_memo], s_in_memo, Py_False) < 0
        || sset(e, &slots[SL_b_obj_id], s_obj_id, Py_None) < 0 || sset(e, &slots[SL_b_wr], s_wr, Py_None) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

/* One binding of bind_all: name to fact (kind, the new entry's order;
 * out: kind is "out"). 0, -1. */
static int
bind_one(PyObject **m, PyObject *name, PyObject *fact, PyObject *kind, int out, int takeover, Py_ssize_t order)
{
    PyObject *ord = PyLong_FromSsize_t(order), *e = NULL, *st = NULL, *ref = NULL, *obj = NULL, *id = NULL,
             *vk = NULL, *wr = NULL;
    int rc = -1, held;
    if (ord == NULL || (e = new_entry(m[M_ENTRY], name, fact, kind, ord)) == NULL
        || PyDict_SetItem(m[M_ENTRIES], name, e) < 0 || (st = sget(fact, &slots[SL_b_storage], s_storage)) == NULL)
        goto done;
    /* by_storage.setdefault(st, {})[name] = e */
    PyObject *same = PyDict_GetItemWithError(m[M_BY_STORAGE], st);
    if (same == NULL) {
        if (PyErr_Occurred() || (same = PyDict_New()) == NULL)
            goto done;
        int t = PyDict_SetItem(m[M_BY_STORAGE], st, same);
        Py_DECREF(same); /* (by_storage holds it) */
        if (t < 0)
            goto done;
    }
    if (PyObject_SetItem(same, name, e) < 0)
        goto done;
    if (out && PyDict_SetDefault(m[M_OUT_STORAGE], st, name) == NULL)
        goto done;
    if ((ref = sget(fact, &slots[SL_b_obj_ref], s_obj_ref)) == NULL)
        goto done;
    if (ref != Py_None) {
        if ((obj = PyObject_CallNoArgs(ref)) == NULL)
            goto done;
        if (obj == Py_None)
            Py_CLEAR(obj);
    }
    if (takeover) {
        if (obj != NULL) {
            if ((id = PyLong_FromVoidPtr(obj)) == NULL || PyDict_SetItem(m[M_BY_OBJ], id, name) < 0
                || PyDict_SetItem(m[M_BY_OBJ_ENTRY], id, e) < 0 || sset(e, &slots[SL_b_obj_id], s_obj_id, id) < 0)
                goto done;
        }
        if ((vk = sget(fact, &slots[SL_b_view_key], s_view_key)) == NULL || PyDict_SetItem(m[M_BY_VIEW], vk, name) < 0)
            goto done;
    }
    if ((held = truth(sget(fact, &slots[SL_b_held], s_held))) < 0)
        goto done;
    if (held && obj != NULL) {
        /* Alive for sure while its object is: polled only once the weak
         * reference's callback says the object died. */
        Py_CLEAR(id);
        if ((wr = PyWeakref_NewRef(obj, m[M_DIED])) == NULL || sset(e, &slots[SL_b_wr], s_wr, wr) < 0
            || (id = PyLong_FromVoidPtr(wr)) == NULL || PyDict_SetItem(m[M_HELD_WR], id, name) < 0)
            goto done;
    }
    else if (PyDict_SetItem(m[M_WATCH], name, e) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(ord);
    Py_XDECREF(e);
    Py_XDECREF(st);
    Py_XDECREF(ref);
    Py_XDECREF(obj);
    Py_XDECREF(id);
    Py_XDECREF(vk);
    Py_XDECREF(wr);
    return rc;
}

/* fastpath.bind_all(maps, names, facts, kind, takeover, order): names.py's. */
static PyObject *
bind_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(6, "bind_all");
    PyObject *m[M_LEN];
    if (name_maps(args[0], m, M_LEN) < 0)
        return NULL;
    Py_ssize_t order = PyLong_AsSsize_t(args[5]);
    int takeover = PyObject_IsTrue(args[4]);
    if ((order == -1 && PyErr_Occurred()) || takeover < 0)
        return NULL;
    PyObject *names = PySequence_Fast(args[1], "bind_all: names"), *facts = NULL, *r = NULL;
    if (names == NULL || (facts = PySequence_Fast(args[2], "bind_all: facts")) == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(names);
    if (PySequence_Fast_GET_SIZE(facts) != n) {
        PyErr_Format(PyExc_ValueError, "bind_all: %zd names, %zd facts", n, PySequence_Fast_GET_SIZE(facts));
        goto done;
    }
    int out = PyObject_RichCompareBool(args[3], s_out, Py_EQ);
    if (out < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (bind_one(m, PySequence_Fast_GET_ITEM(names, i), PySequence_Fast_GET_ITEM(facts, i), args[3], out,
                     takeover, order + 1 + i) < 0)
            goto done;
    r = Py_NewRef(Py_None);
done:
    Py_XDECREF(names);
    Py_XDECREF(facts);
    return r;
}

/* One name of forget_all: 0, -1. */
static int
forget_one(PyObject **m, PyObject *name)
{
    PyObject *e = PyDict_GetItemWithError(m[M_ENTRIES], name), *fact = NULL, *st = NULL, *same = NULL,
             *wr = NULL, *id = NULL, *vk = NULL, *kind = NULL, *other = NULL;
    int rc = -1, t;
    if (e == NULL) {
        if (!PyErr_Occurred()) {
            PyObject *err = PyObject_CallOneArg(PyExc_KeyError, name);
            if (err != NULL) {
                PyErr_SetObject(PyExc_KeyError, err);
                Py_DECREF(err);
            }
        }
        return -1;
    }
    Py_INCREF(e);
    if (PyDict_DelItem(m[M_ENTRIES], name) < 0 || (fact = sget(e, &slots[SL_b_fact], s_fact)) == NULL
        || (st = sget(fact, &slots[SL_b_storage], s_storage)) == NULL)
        goto done;
    /* same = by_storage.get(st); same.pop(name, None); an empty one dropped */
    same = PyDict_GetItemWithError(m[M_BY_STORAGE], st);
    if (same == NULL && PyErr_Occurred())
        goto done;
    Py_XINCREF(same);
    if (same != NULL) {
        if (!PyDict_Check(same)) {
            PyErr_SetString(PyExc_TypeError, "by_storage: a dict of dicts");
            goto done;
        }
        if (pop_key(same, name) < 0 || (PyDict_GET_SIZE(same) == 0 && PyDict_DelItem(m[M_BY_STORAGE], st) < 0))
            goto done;
    }
    if (pop_key(m[M_WATCH], name) < 0 || (wr = sget(e, &slots[SL_b_wr], s_wr)) == NULL)
        goto done;
    if (wr != Py_None && ((id = PyLong_FromVoidPtr(wr)) == NULL || pop_key(m[M_HELD_WR], id) < 0))
        goto done;
    Py_CLEAR(id);
    if ((vk = sget(fact, &slots[SL_b_view_key], s_view_key)) == NULL || (t = dict_has(m[M_BY_VIEW], vk, name)) < 0
        || (t && PyDict_DelItem(m[M_BY_VIEW], vk) < 0))
        goto done;
    if ((t = dict_has(m[M_OUT_STORAGE], st, name)) < 0)
        goto done;
    if (t) {
        /* The storage's output name passes to the first output left over it. */
        if (PyDict_DelItem(m[M_OUT_STORAGE], st) < 0)
            goto done;
        Py_ssize_t pos = 0;
        PyObject *k, *o;
        while (same != NULL && PyDict_Next(same, &pos, &k, &o)) {
            Py_INCREF(o);
            kind = sget(o, &slots[SL_b_kind], s_kind);
            t = kind == NULL ? -1 : PyObject_RichCompareBool(kind, s_out, Py_EQ);
            Py_CLEAR(kind);
            if (t > 0 && (other = sget(o, &slots[SL_b_name], s_name)) == NULL)
                t = -1;
            Py_DECREF(o);
            if (t < 0)
                goto done;
            if (t) {
                if (PyDict_SetItem(m[M_OUT_STORAGE], st, other) < 0)
                    goto done;
                break;
            }
        }
    }
    if ((id = sget(e, &slots[SL_b_obj_id], s_obj_id)) == NULL)
        goto done;
    if (id != Py_None) {
        if ((t = dict_has(m[M_BY_OBJ], id, name)) < 0
            || (t && (PyDict_DelItem(m[M_BY_OBJ], id) < 0 || PyDict_DelItem(m[M_BY_OBJ_ENTRY], id) < 0)))
            goto done;
    }
    rc = 0;
done:
    Py_DECREF(e);
    Py_XDECREF(fact);
    Py_XDECREF(st);
    Py_XDECREF(same);
    Py_XDECREF(wr);
    Py_XDECREF(id);
    Py_XDECREF(vk);
    Py_XDECREF(other);
    return rc;
}

/* fastpath.forget_all(maps, names): names.py's. */
static PyObject *
forget_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "forget_all");
    PyObject *m[M_LEN];
    if (name_maps(args[0], m, M_HELD_WR + 1) < 0)
        return NULL;
    PyObject *names = PySequence_Fast(args[1], "forget_all: names");
    if (names == NULL)
        return NULL;
    for (Py_ssize_t i = 0, n = PySequence_Fast_GET_SIZE(names); i < n; i++)
        if (forget_one(m, PySequence_Fast_GET_ITEM(names, i)) < 0) {
            Py_DECREF(names);
            return NULL;
        }
    Py_DECREF(names);
    Py_RETURN_NONE;
}

/* (StorageRef, below: death_of asks it whether its storage died) */
typedef struct StorageRef StorageRef;
static PyTypeObject StorageRefType;
static int storage_ref_dead(StorageRef *self);

/* A queued input's death as death_of takes it (a _Queued's, or a compact
 * queue's entry's: gone, its storage's reference sref; idw, id(wr)): not
 * gone, its weak reference no held name's, its storage dead with it
 * (else declined). 1, 0, -1 (gone: -1 an error). */
static int
queued_died(int gone, PyObject *idw, PyObject *held, PyObject *sref)
{
    if (gone != 0)
        return gone < 0 ? -1 : 0;
    /* (an empty dict not asked: asking hashes the key and reads the
     * dict's table, a line cold at every call, and a loop holds no name
     * by a weak reference as a rule) */
    int t = PyDict_CheckExact(held)
                ? (PyDict_GET_SIZE(held) == 0 ? 0 : PyDict_Contains(held, idw))
                : PySequence_Contains(held, idw);
    if (t != 0)
        return t < 0 ? -1 : 0;
    /* (the module's own StorageRef answered without a method lookup) */
    return Py_IS_TYPE(sref, &StorageRefType) ? storage_ref_dead((StorageRef *)sref)
                                             : truth(PyObject_CallMethodNoArgs(sref, s_expired));
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
        if ((x = sget(e, &slots[SL_entry_wr], s_wr)) == NULL)
            goto error;
        t = x == wr;
        Py_CLEAR(x);
        if (t == 0)
            goto done;
        if ((x = SGET(e, kind)) == NULL)
            goto error;
        if ((t = compare(x, s_out, Py_EQ)) != 0)
            goto done_not;
        Py_CLEAR(x);
        PyObject *fact = SGET(e, fact), *alive = fact == NULL ? NULL : SGET(fact, alive);
        Py_XDECREF(fact);
        if (alive == NULL)
            goto error;
        x = PyObject_CallNoArgs(alive);
        Py_DECREF(alive);
        if (x == NULL)
            goto error;
        if ((t = PyObject_IsTrue(x)) != 0)
            goto done_not;
        Py_CLEAR(x);
        return e;
    }
    PyObject *sref = SGET(e, sref);
    t = sref == NULL ? -1 : queued_died(STRUE(e, gone), idw, held, sref);
    Py_XDECREF(sref);
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
    NARGS(7, "fresh_deaths");
    PyObject *dead_objs = args[0], *fq_wrs = args[2], *held = args[3], *entries = args[4], *mc = args[5],
             *steps = args[6];
    Py_ssize_t k = PyLong_AsSsize_t(args[1]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    /* (dead_objs[:k] without the copy where it is a list: a death while
     * these are looked at is appended, past k) */
    PyObject *head = PyList_CheckExact(dead_objs) ? Py_NewRef(dead_objs) : PySequence_GetSlice(dead_objs, 0, k),
             *groups = NULL, *pf = NULL;
    if (head == NULL)
        return NULL;
    if ((pf = PySequence_Fast(head, "dead_objs: not a sequence")) == NULL || (groups = PyDict_New()) == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(pf) && i < k; i++) {
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

/* The one death before a compact call, d = (wr, when), as fresh_deaths
 * and death_of take it, into death's dead_wr, dead_obj or dead_i, and
 * dead_j: 1; 0 where they decline; -1 with an error. */
static int
compact_death(PyObject *d, Compact *q, PyObject *fq_wrs, PyObject *held, PyObject *entries, PyObject *mc,
              PyObject *c, CEntry *death)
{
    if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 2) {
        PyErr_SetString(PyExc_ValueError, "a death: (weak reference, step) expected");
        return -1;
    }
    PyObject *wr = PyTuple_GET_ITEM(d, 0), *when = PyTuple_GET_ITEM(d, 1), *idw = NULL;
    long long m = PyLong_AsLongLong(mc), cc = m == -1 && PyErr_Occurred() ? 0 : PyLong_AsLongLong(c),
              w = PyErr_Occurred() ? 0 : PyLong_AsLongLong(when);
    if (PyErr_Occurred() || (idw = PyLong_FromVoidPtr(wr)) == NULL)
        return -1;
    /* (a compact entry's, as death_of takes a _Queued's; else death_of's) */
    Py_ssize_t i = cq_find_wr(q, wr);
    PyObject *e = i >= 0 ? NULL : death_of(wr, idw, fq_wrs, held, entries);
    int t = i >= 0 ? queued_died(q->e[i].gone, idw, held, q->e[i].sref) : e == NULL ? -1 : e != Py_None;
    Py_DECREF(idw);
    if (t <= 0) {
        Py_XDECREF(e);
        return t;
    }
    death->dead_i = i;
    death->dead_obj = e;
    death->dead_wr = Py_NewRef(wr);
    /* j = min(max(0, mc - when), steps) */
    long long j = m - w, steps = m - cc;
    if (j < 0)
        j = 0;
    if (steps < j)
        j = steps;
    death->dead_j = j;
    return 1;
}

/* fastpath.fresh_queue's checks: 1 (the call may be queued: *stor, *cd,
 * *oid, *groups, *k set, new references, groups Py_None without deaths),
 * 0 (declined), -1 (an error). */
static int
fresh_checks(PyObject *ctx, PyObject *a, PyObject *mgr, PyObject *new_inputs, PyObject *c, PyObject *mc,
             PyObject **v_out, PyObject **stor_out, PyObject **cd_out, PyObject **oid_out, PyObject **ptr_out,
             PyObject **groups_out, Py_ssize_t *k_out, PyObject **left_out, Py_ssize_t up, Compact *q,
             CEntry *death, int *stale_out)
{
    PyObject *hot = PyTuple_GET_ITEM(ctx, 0), *knobs = PyTuple_GET_ITEM(ctx, 2), *own = PyTuple_GET_ITEM(ctx, 3),
             *maps = PyTuple_GET_ITEM(ctx, 4), *entries = PyTuple_GET_ITEM(ctx, 5),
             *dead_objs = PyTuple_GET_ITEM(ctx, 6), *held = PyTuple_GET_ITEM(ctx, 7),
             *fq_wrs = PyTuple_GET_ITEM(ctx, 10), *ptrs_equal = PyTuple_GET_ITEM(ctx, 12),
             *data_ptr = PyTuple_GET_ITEM(ctx, 13);
    int versioned = PyTuple_GET_ITEM(ctx, 19) == Py_True;
    PyObject *low = PyTuple_GET_ITEM(a, 6), *x = NULL, *y = NULL, *v = NULL, *stor = NULL, *cd = NULL,
             *oid = NULL, *ptr = NULL, *groups = NULL;
    int t;
    /* c > mc or a[5]() is not mgr or len(new_inputs) != a[7] */
    if ((t = compare(c, mc, Py_GT)) != 0)
        goto not_ok;
    TRY(deref_is(PyTuple_GET_ITEM(a, 5), mgr));
    TRY(len_is(new_inputs, PyTuple_GET_ITEM(a, 7)));
    /* due = not versioned or c < low or hot.left <= 0;
     * c < low and (c // 4096 != mc // 4096 or knobs.moved(True)) */
    if ((t = compare(c, low, Py_LT)) < 0)
        goto error;
    int due = !versioned || t;
    if (!due) {
        /* (kept for fresh_queue, which counts it down: one read) */
        if ((*left_out = SGET(hot, left)) == NULL || (due = compare(*left_out, zero, Py_LE)) < 0)
            goto error;
    }
    if (t) {
        PyObject *q = PyLong_FromLong(4096);
        if (q == NULL)
            goto error;
        x = PyNumber_FloorDivide(c, q);
        y = x == NULL ? NULL : PyNumber_FloorDivide(mc, q);
        Py_DECREF(q);
        if (y == NULL)
            goto error;
        if ((t = compare(x, y, Py_NE)) != 0)
            goto not_ok;
        Py_CLEAR(x);
        Py_CLEAR(y);
        if ((x = PyObject_CallMethodOneArg(knobs, s_moved, Py_True)) == NULL)
            goto error;
        if ((t = PyObject_IsTrue(x)) != 0)
            goto not_ok;
        Py_CLEAR(x);
    }
    PART_AT(fq_guards);
    /* due and not probes_same(knobs.probes, knobs.probe_vals) */
    if (due) {
        if ((x = PyObject_GetAttr(knobs, s_probes)) == NULL
            || (y = PyObject_GetAttr(knobs, s_probe_vals)) == NULL)
            goto error;
        TRY(mapped_eq(NULL, x, y));
        Py_CLEAR(x);
        Py_CLEAR(y);
        Py_CLEAR(*left_out); /* (due: it starts again from 64) */
    }
    PART_AT(fq_probes);
    /* kept_same(a[9], new_inputs, a[8], a[11], a[10], ptrs_equal, data_ptr) */
    if (CGT_CUT != 3 && (t = kept_check(PyTuple_GET_ITEM(a, 9), new_inputs, PyTuple_GET_ITEM(a, 8),
                                        PyTuple_GET_ITEM(a, 11), PyTuple_GET_ITEM(a, 10), ptrs_equal, data_ptr)) <= 0)
        goto not_ok;
    PART_AT(fq_kept);
    /* fresh_src(own, a[19], a[20], a[21], a[2], a[4], up): the tree's
     * frame, up from the calling frame (this one has none): two from
     * fresh_run's, one from the _run wrapper's when the Runner calls */
    {
        Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(a, 19));
        if (d == -1 && PyErr_Occurred())
            goto error;
        if (CGT_CUT != 3)
            TRY(fresh_src_impl(own, d, PyTuple_GET_ITEM(a, 20), PyTuple_GET_ITEM(a, 21), PyTuple_GET_ITEM(a, 2),
                               PyTuple_GET_ITEM(a, 4), up));
    }
    PART_AT(fq_src);
    /* v = new_inputs[a[12]]; stor = fresh_input(v, a, maps) (its cd and
     * oid with it); polled_alive(a[22]) */
    if ((v = PyObject_GetItem(new_inputs, PyTuple_GET_ITEM(a, 12))) == NULL
        || (stor = fresh_input_impl(v, a, maps, &cd, &oid, &ptr, stale_out, q)) == NULL)
        goto error;
    if (stor == Py_None)
        goto no;
    PART_AT(fq_input);
    if ((x = CGT_CUT == 3 ? Py_NewRef(Py_True) : polled_alive(NULL, PyTuple_GET_ITEM(a, 22))) == NULL)
        goto error;
    if (x != Py_True)
        goto no;
    Py_CLEAR(x);
    PART_AT(fq_polled);
    *k_out = 0;
    if ((t = PyObject_IsTrue(dead_objs)) < 0)
        goto error;
#if CGT_CUT == 3
    if (t) {
        if (del_head(dead_objs, PY_SSIZE_T_MAX) < 0)
            goto error;
        t = 0;
    }
#endif
#if CGT_CUT == 4
    if (t) {
        if (cut_deaths(dead_objs) < 0 || (t = PyObject_IsTrue(dead_objs)) < 0)
            goto error;
    }
#endif
    if (t && q != NULL && PyList_CheckExact(dead_objs) && PyList_GET_SIZE(dead_objs) == 1) {
        /* One death (a loop's last input, as a rule): kept in *death, no
         * dict, list or pair made (fresh_deaths' for one, and death_of's
         * checks for a compact entry) */
        int r = compact_death(PyList_GET_ITEM(dead_objs, 0), q, fq_wrs, held, entries, mc, c, death);
        if (r < 0)
            goto error;
        if (r == 0)
            goto no;
        *k_out = 1;
        groups = Py_NewRef(Py_None);
    } else if (t) {
        Py_ssize_t k = PyObject_Length(dead_objs);
        if (k < 0)
            goto error;
        /* (the deaths in general: the maps hold every queued input) */
        if (q != NULL && cq_sync(q) < 0)
            goto error;
        *k_out = k;
        PyObject *kk = PyLong_FromSsize_t(k), *steps = PyNumber_Subtract(mc, c);
        if (kk == NULL || steps == NULL) {
            Py_XDECREF(kk);
            Py_XDECREF(steps);
            goto error;
        }
        PyObject *dargs[7] = {dead_objs, kk, fq_wrs, held, entries, mc, steps};
        groups = fresh_deaths(NULL, dargs, 7);
        Py_DECREF(kk);
        Py_DECREF(steps);
        if (groups == NULL)
            goto error;
        if (groups == Py_None)
            goto no;
    } else
        groups = Py_NewRef(Py_None);
    PART_AT(fq_deaths);
    *v_out = v;
    *stor_out = stor;
    *cd_out = cd;
    *oid_out = oid;
    *ptr_out = ptr;
    *groups_out = groups;
    return 1;
not_ok: /* t: 1 declines, -1 an error */
    if (t < 0)
        goto error;
no:
    Py_XDECREF(x);
    Py_XDECREF(y);
    Py_XDECREF(v);
    Py_XDECREF(stor);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(ptr);
    Py_XDECREF(groups);
    return 0;
error:
    Py_XDECREF(x);
    Py_XDECREF(y);
    Py_XDECREF(v);
    Py_XDECREF(stor);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(ptr);
    Py_XDECREF(groups);
    return -1;
}


/* An instance of the class cls, as cls() makes it: allocated directly
 * where cls has object's __new__ and __init__ (a class of __slots__ such
 * as _Queued: type.__call__'s checks and lookups skipped), else by
 * calling cls. New reference. */
static PyObject *
new_plain(PyObject *cls)
{
    PyTypeObject *tp = (PyTypeObject *)cls;
    if (PyType_Check(cls) && tp->tp_new == PyBaseObject_Type.tp_new && tp->tp_init == PyBaseObject_Type.tp_init
        && tp->tp_alloc != NULL)
        return tp->tp_alloc(tp, 0);
    return PyObject_CallNoArgs(cls);
}

/* (StorageRefs, below: a lean fresh call's storage reference made
 * without a call through its type) */
static PyTypeObject StorageRefsType;
static PyObject *storage_ref_of(PyObject *refs, PyObject *stor);

/* Each queued input (a Queued) among the deaths' groups ({j: [(wr, x)]})
 * gone. 0, -1. */
static int
groups_gone(PyObject *groups, PyObject *Queued)
{
    PyObject *key, *g;
    Py_ssize_t pos = 0;
    while (PyDict_Next(groups, &pos, &key, &g)) {
        PyObject *gf = PySequence_Fast(g, "a group: not a sequence");
        if (gf == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(gf); i++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(gf, i);
            PyObject *e = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 1) : NULL;
            if (e != NULL && (PyObject *)Py_TYPE(e) == Queued && SSET(e, gone, Py_True) < 0) {
                Py_DECREF(gf);
                return -1;
            }
        }
        Py_DECREF(gf);
    }
    return 0;
}

/* An entry's references let go. */
static void
cq_entry_clear(CEntry *e)
{
#define CENTRY_CLEAR(f) Py_CLEAR(e->f);
    CENTRY_REFS(CENTRY_CLEAR)
#undef CENTRY_CLEAR
    e->dead_i = -1;
    e->name_i = 0;
}

static PyObject *cq_stand_in(Compact *q, Py_ssize_t i);
static PyObject *str_int(PyObject *head, const char *mid, long long n, PyObject *tail);

/* Entry i's name, made now if fq_run wrote it by its parts (name_i):
 * borrowed; NULL for an entry not written (no error) or with an error. */
static PyObject *
cq_name(Compact *q, Py_ssize_t i)
{
    CEntry *e = &q->e[i];
    if (e->name == NULL && e->name_i > 0) {
        if ((e->name = str_int(q->name_base, "_", e->name_i, NULL)) == NULL)
            return NULL;
        e->name_i = 0;
    }
    return e->name;
}

/* The queued entries [0, nq) let go, the pending one (if any) moved to the
 * first place, its death, if one of theirs, a stand-in for it
 * (cq_stand_in): what cq_sync and the writer leave. 0, -1. */
static int
cq_consumed(Compact *q)
{
    Py_ssize_t nq = q->n - q->pending;
    if (q->pending && q->e[q->n - 1].dead_i >= 0) {
        CEntry *p = &q->e[q->n - 1];
        PyObject *stand = cq_stand_in(q, p->dead_i);
        if (stand == NULL)
            return -1;
        p->dead_obj = Py_NewRef(stand);
        p->dead_i = -1;
    }
    for (Py_ssize_t i = 0; i < nq; i++)
        cq_entry_clear(&q->e[i]);
    uintptr_t oid = q->pending ? q->keys[CQ_ID][q->n - 1] : 0, cd = q->pending ? q->keys[CQ_CD][q->n - 1] : 0;
    if (q->pending && nq > 0) {
        q->e[0] = q->e[q->n - 1];
        memset(&q->e[q->n - 1], 0, sizeof(CEntry));
        q->e[q->n - 1].dead_i = -1;
    }
    q->n = q->pending;
    q->done = 0;
    memset(q->seen, 0, sizeof q->seen);
    if (q->pending)
        cq_key(q, 0, oid, cd);
    return 0;
}

/* The object a later call's death names for entry i (its del is that
 * entry's name): the _Queued made of it (cq_queued), or a stand-in, a
 * _Queued gone, given the entry's name and order when written
 * (fq_entry), or now if it was. Borrowed (kept in the entry), NULL with
 * an error. */
static PyObject *
cq_stand_in(Compact *q, Py_ssize_t i)
{
    CEntry *e = &q->e[i];
    if (cq_name(q, i) == NULL && PyErr_Occurred())
        return NULL;
    if (e->obj == NULL) {
        PyObject *t = new_plain(q->Queued);
        if (t == NULL || SSET(t, gone, Py_True) < 0 || SSET(t, wr, e->wr) < 0 || SSET(t, spec, e->spec) < 0) {
            Py_XDECREF(t);
            return NULL;
        }
        e->obj = t;
    }
    if (e->name != NULL) {
        PyObject *order = PyLong_FromLongLong(e->order);
        if (order == NULL || SSET(e->obj, name, e->name) < 0 || SSET(e->obj, order, order) < 0) {
            Py_XDECREF(order);
            return NULL;
        }
        Py_DECREF(order);
    }
    return e->obj;
}

/* Entry i as the _Queued fresh_queue made (its deaths' groups as
 * fresh_deaths makes them: {j: [(wr, what died)]}, what died an entry's
 * object: cq_stand_in), kept as the entry's object for the deaths of the
 * entries after it. New reference. */
static PyObject *
cq_queued(Compact *q, Py_ssize_t i)
{
    CEntry *e = &q->e[i];
    /* (the stand-in a later call's death already names, where there is
     * one: it becomes the whole object, which the writing names) */
    PyObject *t = e->obj != NULL ? Py_NewRef(e->obj) : new_plain(q->Queued), *groups = NULL;
    if (t == NULL)
        return NULL;
    if (e->groups != NULL)
        groups = Py_NewRef(e->groups);
    else if (e->dead_wr != NULL) {
        PyObject *what = e->dead_i >= 0 ? cq_stand_in(q, e->dead_i) : e->dead_obj;
        PyObject *pair = what == NULL ? NULL : PyTuple_Pack(2, e->dead_wr, what),
                 *l = pair == NULL ? NULL : PyList_New(1),
                 *j = l == NULL ? NULL : PyLong_FromLongLong(e->dead_j);
        if (j != NULL && (groups = PyDict_New()) != NULL) {
            PyList_SET_ITEM(l, 0, pair);
            pair = NULL;
            if (PyDict_SetItem(groups, j, l) < 0)
                Py_CLEAR(groups);
        }
        Py_XDECREF(pair);
        Py_XDECREF(l);
        Py_XDECREF(j);
        if (groups == NULL)
            goto failed;
    } else
        groups = Py_NewRef(Py_None);
    if (SSTEAL(t, steps, PyLong_FromLongLong(e->steps)) < 0 || SSET(t, tmpl, e->tmpl) < 0
        || SSET(t, src, e->src) < 0 || SSET(t, inv, e->inv) < 0 || SSTEAL(t, oid, cq_key_int(q, CQ_ID, i)) < 0
        || SSET(t, wr, e->wr) < 0 || SSET(t, sref, e->sref) < 0 || SSTEAL(t, ptr, PyLong_FromVoidPtr((void *)e->ptr)) < 0
        || SSTEAL(t, cd, cq_key_int(q, CQ_CD, i)) < 0 || SSET(t, spec, e->spec) < 0
        || SSET(t, gone, e->gone ? Py_True : Py_False) < 0 || SSET(t, groups, groups) < 0)
        goto failed;
    Py_DECREF(groups);
    if (e->obj == NULL)
        e->obj = Py_NewRef(t);
    return t;
failed:
    Py_XDECREF(groups);
    Py_DECREF(t);
    return NULL;
}

/* t, entry i's _Queued, in the three maps, as fresh_queue puts a queued
 * call: fq_ids[oid], fq_wrs[id(wr)], fq_stor[cd]. 0, -1. */
static int
cq_mapped(Compact *q, Py_ssize_t i, PyObject *t)
{
    PyObject *idw = PyLong_FromVoidPtr(q->e[i].wr), *oid = idw == NULL ? NULL : cq_key_int(q, CQ_ID, i),
             *cd = oid == NULL ? NULL : cq_key_int(q, CQ_CD, i);
    int rc = cd == NULL || PyObject_SetItem(q->fq_ids, oid, t) < 0 || PyObject_SetItem(q->fq_wrs, idw, t) < 0
                     || PyObject_SetItem(q->fq_stor, cd, t) < 0
                 ? -1
                 : 0;
    Py_XDECREF(idw);
    Py_XDECREF(oid);
    Py_XDECREF(cd);
    return rc;
}

/* The queued entries made the _Queued objects they stand for, in order,
 * in the queue's list where the Compact stood (its last item) and in the
 * maps; a pending entry stays, alone (cq_consumed). Whatever looks at the
 * queue but the lean call calls this first (the Python's _fq_sync). 0,
 * -1. */
static int
cq_sync(Compact *q)
{
    Py_ssize_t nq = q->n - q->pending, L;
    if (nq == 0)
        return 0;
    if (!PyList_CheckExact(q->fq) || (L = PyList_GET_SIZE(q->fq)) == 0
        || PyList_GET_ITEM(q->fq, L - 1) != (PyObject *)q) {
        PyErr_SetString(PyExc_RuntimeError, "the compact queue: not the queue's last item");
        return -1;
    }
    PyObject *objs = PyList_New(nq);
    if (objs == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < nq; i++) {
        PyObject *t = cq_queued(q, i);
        if (t == NULL) {
            Py_DECREF(objs);
            return -1;
        }
        PyList_SET_ITEM(objs, i, t);
        if (cq_mapped(q, i, t) < 0) {
            Py_DECREF(objs);
            return -1;
        }
    }
    int rc = PyList_SetSlice(q->fq, L - 1, L, objs);
    Py_DECREF(objs);
    return rc < 0 ? -1 : cq_consumed(q);
}

/* The pending entry let go (the recording stopped, or failed, during the
 * call, or cq_take_pending made it its object). */
static void
cq_drop_pending(Compact *q)
{
    if (q->pending) {
        cq_entry_clear(&q->e[q->n - 1]);
        q->n--;
        q->pending = 0;
        if (q->n == 0)
            memset(q->seen, 0, sizeof q->seen);
    }
}

/* The pending entry (the call in progress) as the _Queued it stands for,
 * in the maps as fresh_queue left it (not in the list): for the tree's
 * call that raised or did other than the queue's replay, whose Python
 * takes it. The queued entries synced first. New reference. */
static PyObject *
cq_take_pending(Compact *q)
{
    if (!q->pending) {
        PyErr_SetString(PyExc_RuntimeError, "the compact queue: no call pending");
        return NULL;
    }
    if (cq_sync(q) < 0)
        return NULL;
    PyObject *t = cq_queued(q, 0);
    if (t == NULL || cq_mapped(q, 0, t) < 0) {
        Py_XDECREF(t);
        return NULL;
    }
    cq_drop_pending(q);
    return t;
}

/* The pending entry queued (fq.append(t)): the Compact put at the list's
 * end where it holds no queued entry yet. 0, -1. */
static int
cq_commit(Compact *q)
{
    Py_ssize_t L = PyList_GET_SIZE(q->fq);
    if (L > 0 && PyList_GET_ITEM(q->fq, L - 1) == (PyObject *)q) {
        q->pending = 0;
        return 0;
    }
    /* (not in the list: it held no entry, or a writing that failed took
     * the list's items, its entries among them, which go with them) */
    if (q->n > 1 && cq_consumed(q) < 0)
        return -1;
    q->pending = 0;
    return PyList_Append(q->fq, (PyObject *)q);
}

/* Compact.take_last(): the last queued entry, as the _Queued it stands
 * for (its death, if an entry's, a stand-in for that entry: cq_stand_in),
 * out of the compact queue, which leaves the list where it holds no
 * entry then: the call _fq_write keeps queued at the bound. */
static PyObject *
compact_take_last(Compact *q, PyObject *unused)
{
    Py_ssize_t nq = q->n - q->pending;
    if (nq == 0 || q->pending || q->done) {
        PyErr_SetString(PyExc_RuntimeError, "the compact queue: no last call to take");
        return NULL;
    }
    PyObject *t = cq_queued(q, nq - 1);
    if (t == NULL)
        return NULL;
    cq_entry_clear(&q->e[nq - 1]);
    q->n--;
    if (q->n == 0) {
        /* (the list's last item: this, standing for no entry now) */
        Py_ssize_t L = PyList_GET_SIZE(q->fq);
        if (L > 0 && PyList_GET_ITEM(q->fq, L - 1) == (PyObject *)q && PyList_SetSlice(q->fq, L - 1, L, NULL) < 0) {
            Py_DECREF(t);
            return NULL;
        }
    }
    return t;
}

/* Compact.rest(): the queued entries fq_run did not write, as the _Queued
 * objects they stand for, in order (not in the maps: _fq_write, which
 * asks, has cleared them), their deaths that name a written entry given
 * a stand-in for it; the compact queue then holds none. */
static PyObject *
compact_rest(Compact *q, PyObject *unused)
{
    Py_ssize_t nq = q->n - q->pending, d = q->done;
    PyObject *objs = PyList_New(nq - d);
    if (objs == NULL)
        return NULL;
    for (Py_ssize_t i = d; i < nq; i++) {
        PyObject *t = cq_queued(q, i);
        if (t == NULL) {
            Py_DECREF(objs);
            return NULL;
        }
        PyList_SET_ITEM(objs, i - d, t);
    }
    if (cq_consumed(q) < 0) {
        Py_DECREF(objs);
        return NULL;
    }
    return objs;
}

/* Compact.steps(): the queued entries' steps, summed (_fq_write's count). */
static PyObject *
compact_steps(Compact *q, PyObject *unused)
{
    long long n = 0;
    for (Py_ssize_t i = q->done; i < q->n - q->pending; i++)
        n += q->e[i].steps;
    return PyLong_FromLongLong(n);
}

static PyObject *
compact_last_name(Compact *q, void *closure)
{
    return Py_NewRef(q->last_name != NULL ? q->last_name : Py_None);
}

/* Compact.sync() (freshq's _fq_sync). */
static PyObject *
compact_sync(Compact *q, PyObject *unused)
{
    if (cq_sync(q) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t
compact_len(Compact *q)
{
    return q->n - q->pending - q->done;
}

static PyObject *
compact_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fq, *ids, *wrs, *stor, *Queued;
    if (!no_keywords(kwds, "Compact")
        || !PyArg_ParseTuple(args, "O!O!O!O!O:Compact", &PyList_Type, &fq, &PyDict_Type, &ids, &PyDict_Type, &wrs,
                             &PyDict_Type, &stor, &Queued))
        return NULL;
    Compact *q = (Compact *)type->tp_alloc(type, 0);
    if (q == NULL)
        return NULL;
    q->fq = Py_NewRef(fq);
    q->fq_ids = Py_NewRef(ids);
    q->fq_wrs = Py_NewRef(wrs);
    q->fq_stor = Py_NewRef(stor);
    q->Queued = Py_NewRef(Queued);
    for (int i = 0; i < CQ_CAP; i++)
        q->e[i].dead_i = -1;
    return (PyObject *)q;
}

static int
compact_traverse(Compact *q, visitproc visit, void *arg)
{
    Py_VISIT(q->fq);
    Py_VISIT(q->fq_ids);
    Py_VISIT(q->fq_wrs);
    Py_VISIT(q->fq_stor);
    Py_VISIT(q->Queued);
    Py_VISIT(q->last_name);
    Py_VISIT(q->name_base);
    for (Py_ssize_t i = 0; i < q->n; i++) {
        CEntry *e = &q->e[i];
#define CENTRY_VISIT(f) Py_VISIT(e->f);
        CENTRY_REFS(CENTRY_VISIT)
#undef CENTRY_VISIT
    }
    return 0;
}

static int
compact_clear(Compact *q)
{
    Py_CLEAR(q->fq);
    Py_CLEAR(q->fq_ids);
    Py_CLEAR(q->fq_wrs);
    Py_CLEAR(q->fq_stor);
    Py_CLEAR(q->Queued);
    Py_CLEAR(q->last_name);
    Py_CLEAR(q->name_base);
    for (Py_ssize_t i = 0; i < q->n; i++)
        cq_entry_clear(&q->e[i]);
    q->n = 0;
    q->pending = 0;
    q->done = 0;
    memset(q->seen, 0, sizeof q->seen);
    return 0;
}

static void
compact_dealloc(Compact *q)
{
    PyObject_GC_UnTrack(q);
    compact_clear(q);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static PyGetSetDef compact_getset[] = {
    {"last_name", (getter)compact_last_name, NULL, "The name the last entry fq_run wrote took (None: none).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef compact_methods[] = {
    {"sync", (PyCFunction)compact_sync, METH_NOARGS,
     "The queued entries made _Queued objects, in the list (where this stood) and the maps."},
    {"take_last", (PyCFunction)compact_take_last, METH_NOARGS, "The last queued entry as its _Queued, taken out."},
    {"rest", (PyCFunction)compact_rest, METH_NOARGS, "The entries fq_run did not write, as _Queued objects."},
    {"steps", (PyCFunction)compact_steps, METH_NOARGS, "The queued entries' steps, summed."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods compact_as_sequence = {.sq_length = (lenfunc)compact_len};

static PyTypeObject CompactType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.Compact",
    .tp_basicsize = sizeof(Compact),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Compact(fq, fq_ids, fq_wrs, fq_stor, Queued): the lean fresh path's queued calls as entries, "
              "standing for them as the queue's last item until sync().",
    .tp_new = compact_new,
    .tp_dealloc = (destructor)compact_dealloc,
    .tp_traverse = (traverseproc)compact_traverse,
    .tp_clear = (inquiry)compact_clear,
    .tp_methods = compact_methods,
    .tp_getset = compact_getset,
    .tp_as_sequence = &compact_as_sequence,
};

/* fresh_queue, the tree's frame up frames above the calling one. */
static PyObject *
fresh_queue_impl(PyObject *ctx, PyObject *a, PyObject *mgr, PyObject *new_inputs, Py_ssize_t up, Compact *q)
{
    if (check_tuple(ctx, 20, "fresh_queue: ctx") < 0 || check_tuple(a, 28, "fresh_queue: a") < 0)
        return NULL;
    PyObject *hot = PyTuple_GET_ITEM(ctx, 0), *box = PyTuple_GET_ITEM(ctx, 1),
             *dead_objs = PyTuple_GET_ITEM(ctx, 6), *died = PyTuple_GET_ITEM(ctx, 8),
             *fq_ids = PyTuple_GET_ITEM(ctx, 9), *fq_wrs = PyTuple_GET_ITEM(ctx, 10),
             *fq_stor = PyTuple_GET_ITEM(ctx, 11), *sweak = PyTuple_GET_ITEM(ctx, 14),
             *Queued = PyTuple_GET_ITEM(ctx, 15), *gen = PyTuple_GET_ITEM(ctx, 16), *rec = PyTuple_GET_ITEM(ctx, 17),
             *declined = PyTuple_GET_ITEM(ctx, 18);
    PART_START();
    PyObject *c = PyObject_GetAttr(box, s_mark_step_counter), *mc = NULL, *v = NULL, *stor = NULL, *cd = NULL,
             *oid = NULL, *ptr = NULL, *groups = NULL, *t = NULL, *wr = NULL, *x = NULL;
    Py_ssize_t k = 0;
    int decline = 0; /* (failed: declined instead, nothing changed) */
    PyObject *left = NULL; /* hot.left when the probes were not due */
    if (c == NULL || (mc = SGET(hot, mark_counter)) == NULL) {
        /* (in the checks' try: an Exception declines) */
        Py_XDECREF(c);
        goto checks_failed;
    }
    PART_AT(fq_counter);
    CEntry death = {.dead_i = -1};
    /* (a full compact queue: its entries made objects, before the checks
     * name any of them by its index) */
    if (q != NULL && q->n >= CQ_CAP && cq_sync(q) < 0) {
        Py_DECREF(c);
        Py_DECREF(mc);
        goto checks_failed;
    }
    int stale = STALE_OBJ | STALE_VIEW;
    int ok = fresh_checks(ctx, a, mgr, new_inputs, c, mc, &v, &stor, &cd, &oid, &ptr, &groups, &k, &left, up, q,
                          &death, &stale);
    if (ok <= 0) {
        Py_DECREF(c);
        Py_DECREF(mc);
        Py_XDECREF(left);
        if (ok == 0)
            return Py_NewRef(declined);
        goto checks_failed;
    }
#if CGT_CUT == 3
    /* (the floor: a weak reference kept, the counter moved; Ellipsis: the
     * Runner calls the tree as for a queued call, and queues nothing) */
    Py_CLEAR(left);
    if ((wr = PyWeakref_NewRef(v, died)) == NULL || SSET(hot, mark_counter, c) < 0)
        goto failed;
    Py_XSETREF(cut_refs[cut_next++ & 63], Py_NewRef(wr));
    Py_CLEAR(v);
    Py_CLEAR(stor);
    t = Py_NewRef(Py_Ellipsis);
    goto taken;
#endif
    /* An entry keeps the input's id, storage and data pointer as words
     * (CEntry): where one of them is an int that would not be made again
     * equal from its word (a negative one: no address is), the call is
     * declined, having changed nothing, to the path that keeps the ints. */
    uintptr_t ov = 0, cv = 0, pk = 0;
    if (q != NULL) {
        if ((ptr == NULL && (ptr = PyObject_CallMethodNoArgs(v, s_data_ptr)) == NULL)
            || ((ov = key_of(oid)) == 0 && PyErr_Occurred()) || ((cv = key_of(cd)) == 0 && PyErr_Occurred())
            || ((pk = key_of(ptr)) == 0 && PyErr_Occurred()))
            goto failed;
        if ((intptr_t)ov < 0 || (intptr_t)cv < 0 || (intptr_t)pk < 0) {
            decline = 1;
            goto failed;
        }
    }
    /* The call joins the queue. */
    int t_;
    if ((t_ = compare(c, PyTuple_GET_ITEM(a, 6), Py_LT)) < 0)
        goto failed;
    if (t_) {
        /* hot.fql = a[:6] + (c - (c & 63),) + a[7:] */
        PyObject *m = PyLong_FromLong(63), *lowbits = NULL, *first = NULL, *na = NULL;
        if (m != NULL && (lowbits = PyNumber_And(c, m)) != NULL && (first = PyNumber_Subtract(c, lowbits)) != NULL
            && (na = PyTuple_New(PyTuple_GET_SIZE(a))) != NULL) {
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++)
                PyTuple_SET_ITEM(na, i, Py_NewRef(i == 6 ? first : PyTuple_GET_ITEM(a, i)));
        }
        Py_XDECREF(m);
        Py_XDECREF(lowbits);
        Py_XDECREF(first);
        if (na == NULL || SSTEAL(hot, fql, na) < 0)
            goto failed;
    }
    /* if versioned: hot.left = 64 if due else hot.left - 1 */
    if (PyTuple_GET_ITEM(ctx, 19) == Py_True
        && SSTEAL(hot, left, left == NULL ? PyLong_FromLong(64) : PyNumber_Subtract(left, one)) < 0)
        goto failed;
    Py_CLEAR(left);
#if CGT_CUT == 4
    /* (the checks made: the deaths they grouped let go, a weak reference
     * kept, the counter moved; Ellipsis, as 3's) */
    if ((groups != Py_None && del_head(dead_objs, k) < 0)
        || (wr = PyWeakref_NewRef(v, died)) == NULL || SSET(hot, mark_counter, c) < 0)
        goto failed;
    Py_XSETREF(cut_refs[cut_next++ & 63], Py_NewRef(wr));
    Py_CLEAR(v);
    Py_CLEAR(stor);
    t = Py_NewRef(Py_Ellipsis);
    goto taken;
#endif
    if (q != NULL) {
        /* The call an entry of the compact queue, holding what the
         * _Queued below would, pending until the tree's call returns
         * (runner_fresh) */
        CEntry *e = &q->e[q->n];
        long long m = PyLong_AsLongLong(mc), cc = m == -1 && PyErr_Occurred() ? 0 : PyLong_AsLongLong(c);
        if (PyErr_Occurred())
            goto failed;
        e->ptr = pk;
        e->tmpl = Py_NewRef(PyTuple_GET_ITEM(a, 3));
        e->src = Py_NewRef(PyTuple_GET_ITEM(a, 4));
        e->spec = Py_NewRef(PyTuple_GET_ITEM(a, 27));
        e->steps = m - cc;
        e->gone = 0;
        e->stale = stale;
        e->name_i = 0;
        if ((e->inv = PyObject_GetAttr(gen, s_generation)) == NULL || (e->wr = PyWeakref_NewRef(v, died)) == NULL
            || (e->sref = Py_IS_TYPE(sweak, &StorageRefsType) ? storage_ref_of(sweak, stor)
                                                               : PyObject_CallOneArg(sweak, stor)) == NULL) {
            cq_entry_clear(e);
            goto failed;
        }
        cq_key(q, q->n, ov, cv);
        Py_CLEAR(v);
        Py_CLEAR(stor);
        PART_AT(fq_queued);
        /* its deaths: the one (death) or in general (groups); each queued
         * input among them gone; del dead_objs[:k] */
        if (death.dead_wr != NULL) {
            e->dead_wr = death.dead_wr;
            e->dead_obj = death.dead_obj;
            e->dead_i = death.dead_i;
            e->dead_j = death.dead_j;
            death.dead_wr = death.dead_obj = NULL;
            if (e->dead_i >= 0)
                q->e[e->dead_i].gone = 1;
            else if ((PyObject *)Py_TYPE(e->dead_obj) == Queued && SSET(e->dead_obj, gone, Py_True) < 0) {
                cq_entry_clear(e);
                goto failed;
            }
        } else if (groups != Py_None)
            e->groups = Py_NewRef(groups);
        q->n++;
        q->pending = 1;
        if ((k > 0 && del_head(dead_objs, k) < 0) || (groups != Py_None && groups_gone(groups, Queued) < 0)
            || SSET(hot, mark_counter, c) < 0) {
            cq_drop_pending(q);
            goto failed;
        }
        Py_DECREF(c);
        Py_DECREF(mc);
        Py_DECREF(cd);
        Py_DECREF(oid);
        Py_XDECREF(ptr);
        Py_DECREF(groups);
        PART_AT(fq_maps);
        return Py_NewRef((PyObject *)q);
    }
    if ((t = new_plain(Queued)) == NULL || SSTEAL(t, steps, PyNumber_Subtract(mc, c)) < 0
        || SSET(t, tmpl, PyTuple_GET_ITEM(a, 3)) < 0
        || SSET(t, src, PyTuple_GET_ITEM(a, 4)) < 0
        || SSTEAL(t, inv, PyObject_GetAttr(gen, s_generation)) < 0 || SSET(t, oid, oid) < 0
        || (wr = PyWeakref_NewRef(v, died)) == NULL || SSET(t, wr, wr) < 0
        || SSTEAL(t, sref, Py_IS_TYPE(sweak, &StorageRefsType) ? storage_ref_of(sweak, stor)
                                                                  : PyObject_CallOneArg(sweak, stor)) < 0
        || (ptr != NULL ? SSET(t, ptr, ptr) : SSTEAL(t, ptr, PyObject_CallMethodNoArgs(v, s_data_ptr))) < 0
        || SSET(t, cd, cd) < 0
        || SSET(t, spec, PyTuple_GET_ITEM(a, 27)) < 0 || SSET(t, gone, Py_False) < 0
        || SSET(t, groups, groups) < 0)
        goto failed;
    /* (the input's life is the program's: let go before the tree's call) */
    Py_CLEAR(v);
    Py_CLEAR(stor);
    PART_AT(fq_queued);
    if (groups != Py_None) {
        /* del dead_objs[:k]; each queued input among them gone */
        if (del_head(dead_objs, k) < 0 || groups_gone(groups, Queued) < 0)
            goto failed;
    }
    PyObject *idw = NULL;
    if (SSET(hot, mark_counter, c) < 0 || PyObject_SetItem(fq_ids, oid, t) < 0
        || (idw = PyLong_FromVoidPtr(wr)) == NULL || PyObject_SetItem(fq_wrs, idw, t) < 0
        || PyObject_SetItem(fq_stor, cd, t) < 0) {
        Py_XDECREF(idw);
        goto failed;
    }
    Py_DECREF(idw);
#if CGT_CUT == 3 || CGT_CUT == 4
taken:
#endif
    Py_DECREF(c);
    Py_DECREF(mc);
    Py_DECREF(cd);
    Py_DECREF(oid);
    Py_XDECREF(ptr);
    Py_DECREF(groups);
    Py_DECREF(wr);
    PART_AT(fq_maps);
    return t;
failed:
    /* except Exception as err: rec._fail("before a call", err); None (or,
     * decline, nothing changed: declined) */
    Py_CLEAR(death.dead_wr);
    Py_CLEAR(death.dead_obj);
    Py_CLEAR(v);
    Py_CLEAR(stor);
    Py_XDECREF(left);
    Py_XDECREF(c);
    Py_XDECREF(mc);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(ptr);
    Py_XDECREF(groups);
    Py_XDECREF(wr);
    Py_XDECREF(t);
    Py_XDECREF(x);
    if (decline)
        return Py_NewRef(declined);
    if (recorder_failed(rec, s_before_call) < 0)
        return NULL;
    Py_RETURN_NONE;
checks_failed:
    /* except Exception: declined */
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return NULL;
    PyErr_Clear();
    return Py_NewRef(declined);
}

static PyObject *
fresh_queue(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "fresh_queue");
    /* (called from fresh_run: the tree's frame two up from its frame) */
    return fresh_queue_impl(args[0], args[1], args[2], args[3], 2, NULL);
}

/* -- The queue's writer (freshq._fq_write): fastpath.fq_tail and fq_run. -- */


/* The writer's text: one buffer of UTF-8 that each part is copied into
 * once, the str made once at the end (a str per part and a str per
 * concatenation cost the queue's writer most of its instructions). */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
    int ascii; /* every part ASCII so far: the str is made by a copy */
    char local[2048];
} Buf;

/* An empty buffer; hint: the bytes it will likely hold (one allocation
 * of them where the local array is smaller, not a doubling after another). */
static void
buf_init(Buf *b, Py_ssize_t hint)
{
    b->p = b->local;
    b->n = 0;
    b->cap = (Py_ssize_t)sizeof b->local;
    b->ascii = 1;
    if (hint > b->cap && (b->p = PyMem_Malloc(hint)) != NULL)
        b->cap = hint;
    else
        b->p = b->local;
}

static void
buf_free(Buf *b)
{
    if (b->p != b->local)
        PyMem_Free(b->p);
}

static int
buf_grow(Buf *b, Py_ssize_t more)
{
    Py_ssize_t cap = b->cap;
    while (cap - b->n < more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *p = b->p == b->local ? PyMem_Malloc(cap) : PyMem_Realloc(b->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (b->p == b->local)
        memcpy(p, b->local, b->n);
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int
buf_mem(Buf *b, const char *s, Py_ssize_t n)
{
    if (b->cap - b->n < n && buf_grow(b, n) < 0)
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

#define BUF_LIT(b, s) buf_mem((b), (s), (Py_ssize_t)sizeof(s) - 1)

/* A str's characters (not a str: -1, TypeError; a lone surrogate goes
 * through as surrogatepass has it, and buf_text gives it back). */
static int
buf_str(Buf *b, PyObject *u)
{
    if (u == NULL)
        return -1;
    if (!PyUnicode_Check(u)) {
        PyErr_Format(PyExc_TypeError, "a str expected, not %.50s", Py_TYPE(u)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(u) < 0)
        return -1;
#endif
    if (PyUnicode_IS_ASCII(u))
        return buf_mem(b, (const char *)PyUnicode_1BYTE_DATA(u), PyUnicode_GET_LENGTH(u));
    b->ascii = 0;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(u, &n);
    if (s != NULL)
        return buf_mem(b, s, n);
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
        return -1;
    PyErr_Clear();
    PyObject *enc = PyUnicode_AsEncodedString(u, "utf-8", "surrogatepass");
    if (enc == NULL)
        return -1;
    int r = buf_mem(b, PyBytes_AS_STRING(enc), PyBytes_GET_SIZE(enc));
    Py_DECREF(enc);
    return r;
}

/* An integer's decimal digits, as str(v). */
static int
buf_int(Buf *b, long long v)
{
    char tmp[24];
    int k = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[sizeof tmp - 1 - k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[sizeof tmp - 1 - k++] = '-';
    return buf_mem(b, tmp + sizeof tmp - k, k);
}

/* The text of b's bytes from..to (new reference). */
static PyObject *
buf_text(Buf *b, Py_ssize_t from, Py_ssize_t to)
{
    if (b->ascii) {
        PyObject *r = PyUnicode_New(to - from, 127);
        if (r != NULL)
            memcpy(PyUnicode_1BYTE_DATA(r), b->p + from, to - from);
        return r;
    }
    return PyUnicode_DecodeUTF8(b->p + from, to - from, "surrogatepass");
}

/* head + mid + str(n) + tail (tail may be NULL) as a new str: a name the
 * writer makes (Session._fresh's base_i, an output's fn_cN_0). */
static PyObject *
str_int(PyObject *head, const char *mid, long long n, PyObject *tail)
{
    Buf b;
    buf_init(&b, 0);
    PyObject *r = NULL;
    if (buf_str(&b, head) == 0 && buf_mem(&b, mid, (Py_ssize_t)strlen(mid)) == 0 && buf_int(&b, n) == 0
        && (tail == NULL || buf_str(&b, tail) == 0))
        r = buf_text(&b, 0, b.n);
    buf_free(&b);
    return r;
}

/* The writer's st ([order, epoch, seed, dels, calls, the output's name
 * before]) while fq_run or fq_tail writes: C integers, put back in st at
 * the end (ws_store). */
enum { W_ORDER, W_EPOCH, W_SEED, W_DELS, W_CALLS, W_N };
typedef struct {
    long long v[W_N];
    PyObject *prev; /* owned */
    /* (fq_run's output names never taken (Writer.out_free): the output's
     * name before as its parts, prev_pre + prev_n + prev_sfx (borrowed),
     * prev then NULL; made a str only where one is asked for, ws_prev) */
    long long prev_n; /* -1: prev is the name */
    PyObject *prev_pre, *prev_sfx;
} WState;

/* The output's name before as a str (borrowed; NULL with an error). */
static PyObject *
ws_prev(WState *s)
{
    if (s->prev_n >= 0) {
        PyObject *x = str_int(s->prev_pre, "", s->prev_n, s->prev_sfx);
        if (x == NULL)
            return NULL;
        Py_XSETREF(s->prev, x);
        s->prev_n = -1;
    }
    return s->prev;
}

/* The output's name before into b. 0, -1. */
static int
put_prev(Buf *b, WState *s)
{
    if (s->prev_n < 0)
        return buf_str(b, s->prev);
    return buf_str(b, s->prev_pre) < 0 || buf_int(b, s->prev_n) < 0 || buf_str(b, s->prev_sfx) < 0 ? -1 : 0;
}

static int
ws_load(WState *s, PyObject *st)
{
    s->prev = NULL;
    s->prev_n = -1;
    for (int i = 0; i < W_N; i++) {
        long long x = PyLong_AsLongLong(PyList_GET_ITEM(st, i));
        if (x == -1 && PyErr_Occurred())
            return -1;
        s->v[i] = x;
    }
    s->prev = Py_NewRef(PyList_GET_ITEM(st, 5));
    return 0;
}

/* s back into st (its prev given to st): 0, -1. */
static int
ws_store(WState *s, PyObject *st)
{
    int rc = ws_prev(s) == NULL ? -1 : 0;
    for (int i = 0; i < W_N; i++) {
        PyObject *x = PyLong_FromLongLong(s->v[i]);
        if (x == NULL || PyList_SetItem(st, i, x) < 0)
            rc = -1;
    }
    if (s->prev != NULL && PyList_SetItem(st, 5, s->prev) < 0)
        rc = -1;
    s->prev = NULL;
    return rc;
}

/* The names Session._fresh made (Session.names_used): a set, or a
 * names.UsedNames, its parts borrowed (it holds them, and never sets
 * them again): each base's next number (next), the names passed over as
 * an output's (skipped), any name added otherwise (extra). base and
 * counter: fq_run's base, whose number is *counter while it writes, not
 * next's. */
typedef struct {
    PyObject *set, *next, *skipped, *extra, *base;
    long long *counter;
} Used;

/* u over used (a set or a UsedNames): 0, -1 (TypeError). */
static int
used_of(Used *u, PyObject *used)
{
    memset(u, 0, sizeof *u);
    if (PyAnySet_Check(used)) {
        u->set = used;
        return 0;
    }
    PyObject *parts[3] = {NULL, NULL, NULL};
    const char *names[3] = {"next", "skipped", "extra"};
    for (int i = 0; i < 3; i++) {
        if ((parts[i] = PyObject_GetAttrString(used, names[i])) == NULL) {
            PyErr_Clear();
            break;
        }
        Py_DECREF(parts[i]); /* (borrowed: used holds it) */
    }
    if (parts[2] == NULL || !PyDict_Check(parts[0]) || !PyAnySet_Check(parts[1]) || !PyAnySet_Check(parts[2])) {
        PyErr_SetString(PyExc_TypeError, "used: a set or a UsedNames expected");
        return -1;
    }
    u->next = parts[0];
    u->skipped = parts[1];
    u->extra = parts[2];
    return 0;
}

/* *v = d.get(key, 0), an int (a base's number: UsedNames.next,
 * Session._fresh_next). 0, -1. */
static int
number_of(PyObject *d, PyObject *key, long long *v)
{
    if (PyDict_CheckExact(d) && PyDict_GET_SIZE(d) == 0) {
        *v = 0;
        return 0;
    }
    PyObject *n = dict_get(d, key, zero);
    if (n == NULL)
        return -1;
    *v = PyLong_AsLongLong(n);
    Py_DECREF(n);
    return *v == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A base's next number in u (0 where none). 0, -1. */
static int
used_next(Used *u, PyObject *base, long long *v)
{
    if (u->counter != NULL && u->base != NULL && (base == u->base || PyUnicode_Compare(base, u->base) == 0)) {
        *v = *u->counter;
        return 0;
    }
    if (PyErr_Occurred())
        return -1;
    return number_of(u->next, base, v);
}

/* `name in used` (names.UsedNames.__contains__'s rule): 1, 0, -1. made:
 * name is base + "_" + i, the name fq_common makes of u's base at its
 * own counter (*u->counter == i >= 1), whose base and number are known
 * (the number the base's next, so below it no more): not parsed again,
 * taken only if in extra or, not among the skipped, a base of its own. */
static int
used_has_as(Used *u, PyObject *name, int made)
{
    if (u->set != NULL)
        return PySet_Contains(u->set, name);
    int t;
    if (PySet_GET_SIZE(u->extra) > 0 && (t = PySet_Contains(u->extra, name)) != 0)
        return t;
    if (!PyUnicode_Check(name))
        return 0;
    if (PySet_GET_SIZE(u->skipped) > 0 && (t = PySet_Contains(u->skipped, name)) != 0)
        return t < 0 ? -1 : 0;
    long long v;
    if ((made ? number_of(u->next, name, &v) : used_next(u, name, &v)) < 0)
        return -1;
    if (v > 0 || made)
        return v > 0;
    /* base + "_" + k, k >= 1 in ASCII digits without a leading zero, below
     * base's next number */
    Py_ssize_t n = PyUnicode_GET_LENGTH(name), i = PyUnicode_FindChar(name, '_', 0, n, -1);
    if (i == -2)
        return -1;
    if (i < 0 || i == n - 1 || PyUnicode_READ_CHAR(name, i + 1) == '0')
        return 0;
    long long k = 0;
    for (Py_ssize_t j = i + 1; j < n; j++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(name, j);
        if (c < '0' || c > '9')
            return 0;
        if (k > (LLONG_MAX - 9) / 10)
            return 0; /* (past any number a base reaches) */
        k = k * 10 + (c - '0');
    }
    PyObject *base = PyUnicode_Substring(name, 0, i);
    if (base == NULL)
        return -1;
    int r = used_next(u, base, &v);
    Py_DECREF(base);
    return r < 0 ? -1 : k < v;
}

static int
used_has(Used *u, PyObject *name)
{
    return used_has_as(u, name, 0);
}

/* used_contains(used, name): used_has's answer (tests). */
static PyObject *
used_contains(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "used_contains");
    Used u;
    if (used_of(&u, args[0]) < 0)
        return NULL;
    int t = used_has(&u, args[1]);
    return t < 0 ? NULL : PyBool_FromLong(t);
}

/* used_contains_fresh(used, base, k): used_has_as's answer (made) for
 * base_k, k >= 1 the writer's counter of base (tests: for any k at or
 * past base's next number, `base_k in used`). */
static PyObject *
used_contains_fresh(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "used_contains_fresh");
    Used u;
    long long k = PyLong_AsLongLong(args[2]);
    if ((k == -1 && PyErr_Occurred()) || used_of(&u, args[0]) < 0)
        return NULL;
    if (k < 1 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_ValueError, "used_contains_fresh: a base (str) and k >= 1 expected");
        return NULL;
    }
    u.base = args[1];
    u.counter = &k;
    PyObject *name = str_int(args[1], "_", k, NULL);
    int t = name == NULL ? -1 : used_has_as(&u, name, 1);
    Py_XDECREF(name);
    return t < 0 ? NULL : PyBool_FromLong(t);
}

/* used.add(name) where _fresh's number of it is not already counted (a
 * set's add; a UsedNames': nothing, the number says it). 0, -1. */
static int
used_add(Used *u, PyObject *name)
{
    return u->set != NULL ? PySet_Add(u->set, name) : 0;
}

/* The writer's w, by name (freshq._fq_write's tuple). */
typedef struct {
    PyObject *fresh_next, *used, *base, *recs, *by_view, *by_obj, *by_obj_entry, *trace, *pre, *post, *prefix,
        *sfx, *mid, *session, *Queued;
    /* fq_run's Session._fresh counter of the base while it writes (NULL:
     * fq_tail's, none): put in fresh_next before Session._fresh is asked,
     * read again after. */
    long long *fresh_i;
    Used u; /* used's */
    /* (writer_free's: no output name fq_run makes, and no name base_i,
     * i >= 1, is taken in used; those written by their parts) */
    int out_free, in_free;
} Writer;

/* wr over st and w (fq_tail's and fq_run's, checked): 0, -1 (TypeError). */
static int
writer_of(Writer *wr, PyObject *st, PyObject *w)
{
    if (!PyList_CheckExact(st) || PyList_GET_SIZE(st) != 6) {
        PyErr_SetString(PyExc_TypeError, "st: a list of 6 expected");
        return -1;
    }
    if (check_tuple(w, 15, "w") < 0)
        return -1;
    if (!PyList_CheckExact(PyTuple_GET_ITEM(w, 3))) {
        PyErr_SetString(PyExc_TypeError, "w: recs a list expected");
        return -1;
    }
    PyObject **f[15] = {&wr->fresh_next, &wr->used, &wr->base, &wr->recs, &wr->by_view, &wr->by_obj,
                        &wr->by_obj_entry, &wr->trace, &wr->pre, &wr->post, &wr->prefix, &wr->sfx,
                        &wr->mid, &wr->session, &wr->Queued};
    for (int i = 0; i < 15; i++)
        *f[i] = PyTuple_GET_ITEM(w, i);
    wr->fresh_i = NULL;
    wr->out_free = wr->in_free = 0;
    if (used_of(&wr->u, wr->used) < 0)
        return -1;
    wr->u.base = wr->base;
    return 0;
}

/* 1 where s begins with head (both str), followed by a digit, 0 where
 * not, -1. (A name the writer makes of head: head, a number, what
 * follows; "in_proj_weight" is none of "in_"'s.) */
static int
numbered_of(PyObject *s, PyObject *head)
{
    if (!PyUnicode_Check(s))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(head);
    if (PyUnicode_GET_LENGTH(s) <= n)
        return 0;
    Py_UCS4 c = PyUnicode_READ_CHAR(s, n);
    if (c < '0' || c > '9')
        return 0;
    Py_ssize_t r = PyUnicode_Tailmatch(s, head, 0, PY_SSIZE_T_MAX, -1);
    return r < 0 ? -1 : r > 0;
}

/* ok[j] = 0 for each head j (of n; NULL: none) that name is, followed by
 * a number (numbered_of). 0, -1. */
static int
heads_of(PyObject *name, PyObject *const *heads, int *ok, int n)
{
    for (int j = 0; j < n; j++) {
        int t = heads[j] == NULL || !ok[j] ? 0 : numbered_of(name, heads[j]);
        if (t < 0)
            return -1;
        if (t)
            ok[j] = 0;
    }
    return 0;
}

/* heads_of for every base of u's next and every name of its extra, each
 * looked at once for all the heads. 0, -1. */
static int
numbered_heads(Used *u, PyObject *const *heads, int *ok, int n)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(u->next, &pos, &k, &v))
        if (heads_of(k, heads, ok, n) < 0)
            return -1;
    if (PySet_GET_SIZE(u->extra) == 0)
        return 0;
    PyObject *it = PyObject_GetIter(u->extra), *x;
    if (it == NULL)
        return -1;
    int rc = 0;
    while (rc == 0 && (x = PyIter_Next(it)) != NULL) {
        rc = heads_of(x, heads, ok, n);
        Py_DECREF(x);
    }
    Py_DECREF(it);
    return rc < 0 || PyErr_Occurred() ? -1 : 0;
}

/* Which names fq_run makes may be written by their parts, none being
 * taken in wr's used (the numbers of names fq_run would otherwise make
 * and ask about; nothing fq_run does adds one but Session._fresh, asked
 * only for a name taken, after which put_call_of clears in_free):
 * out_free, the output names prefix + N + sfx (used_has): sfx holds a
 * '_', so that the base used_has parses out of such a name is prefix +
 * N + what precedes that '_' in sfx, and no name of extra, no base of
 * next and not the run's own base is prefix followed by a number;
 * in_free, the names base + "_" + i, i >= 1 (used_has_as, made): no name
 * of extra and no base of next is base + "_" followed by a number.
 * 0, -1. */
static int
writer_free(Writer *wr)
{
    Used *u = &wr->u;
    PyObject *prefix = wr->prefix, *sfx = wr->sfx, *heads[2] = {NULL, NULL};
    int ok[2] = {1, 1};
    wr->out_free = wr->in_free = 0;
    if (u->set != NULL)
        return 0;
    if (PyUnicode_Check(prefix) && PyUnicode_Check(sfx)) {
        Py_ssize_t at = PyUnicode_FindChar(sfx, '_', 0, PyUnicode_GET_LENGTH(sfx), 1);
        int t = at < 0 ? 0 : numbered_of(wr->base, prefix);
        if (at == -2 || t < 0)
            return -1;
        if (at >= 0 && !t)
            heads[0] = prefix;
    }
    if (PyUnicode_Check(wr->base) && (heads[1] = PyUnicode_FromFormat("%U_", wr->base)) == NULL)
        return -1;
    int rc = heads[0] == NULL && heads[1] == NULL ? 0 : numbered_heads(u, heads, ok, 2);
    wr->out_free = rc == 0 && heads[0] != NULL && ok[0];
    wr->in_free = rc == 0 && heads[1] != NULL && ok[1];
    Py_XDECREF(heads[1]);
    return rc;
}

/* fq_run's counter of the base into fresh_next (fresh_next[base] =
 * *fresh_i): 0, -1. */
static int
fresh_i_put(Writer *wr)
{
    PyObject *x = PyLong_FromLongLong(*wr->fresh_i);
    int r = x == NULL ? -1 : PyObject_SetItem(wr->fresh_next, wr->base, x);
    Py_XDECREF(x);
    return r;
}

/* fq_run's counter of the base from fresh_next: 0, -1. */
static int
fresh_i_get(Writer *wr)
{
    return number_of(wr->fresh_next, wr->base, wr->fresh_i);
}

/* deferred._call_tail(inv, src) into b: the call line's end after its
 * last output name ('"]', the invocation and the src where there are,
 * '}'). An int invocation (%d: its digits) beside a str src is written
 * here, a src without an invocation concatenated (a str, or TypeError);
 * any other formatted as Python's % formats it (a bool's %d, a str
 * subclass's %s). 0, -1. */
static int
put_tail(Buf *b, PyObject *inv, PyObject *src)
{
    PyObject *s1 = NULL, *args = NULL, *odd = NULL;
    int rc = -1, ovf = 0;
    long long iv = 0;
    if (src != Py_None && (s1 = PySequence_GetItem(src, 1)) == NULL)
        return -1;
    if (PyLong_CheckExact(inv) && (iv = PyLong_AsLongLongAndOverflow(inv, &ovf)) == -1 && PyErr_Occurred())
        goto done;
    if (inv == Py_None || (PyLong_CheckExact(inv) && !ovf && (s1 == NULL || PyUnicode_CheckExact(s1)))) {
        if (BUF_LIT(b, "\"]") < 0 || (inv != Py_None && (BUF_LIT(b, ", \"invocation\": ") < 0 || buf_int(b, iv) < 0))
            || (s1 != NULL && (BUF_LIT(b, ", \"src\": ") < 0 || buf_str(b, s1) < 0)) || BUF_LIT(b, "}") < 0)
            goto done;
    } else if ((args = s1 == NULL ? PyTuple_Pack(1, inv) : PyTuple_Pack(2, inv, s1)) == NULL
               || (odd = PyUnicode_Format(s1 == NULL ? s_fmt_inv : s_fmt_inv_src, args)) == NULL
               || buf_str(b, odd) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(s1);
    Py_XDECREF(args);
    Py_XDECREF(odd);
    return rc;
}

/* A name the writer writes: the str s, or, s NULL, base + "_" + i, a
 * name fq_run did not make (CEntry.name_i). */
typedef struct {
    PyObject *s, *base;
    long long i;
} Name;

static int
put_name(Buf *b, const Name *n)
{
    if (n->s != NULL)
        return buf_str(b, n->s);
    return buf_str(b, n->base) < 0 || BUF_LIT(b, "_") < 0 || buf_int(b, n->i) < 0 ? -1 : 0;
}

/* fastpath.fq_tail's part: t's call line, its expect and the del of the
 * output's name before, into b (after its records before, there); the
 * output's name made (_replay_names', or Session._fresh's where one it
 * made has it), st's order and calls moved. 0, -1. */
static int
put_call_of(Buf *b, PyObject *inv, PyObject *src, const Name *name, WState *s, Writer *wr)
{
    PyObject *out = NULL;
    int rc = -1;
    s->v[W_CALLS] += 1;
    if (wr->out_free) {
        /* (the name not made: written by its parts, and kept so for the
         * next call's del, prev_n) */
        if (buf_str(b, wr->pre) < 0 || put_name(b, name) < 0 || buf_str(b, wr->post) < 0
            || buf_str(b, wr->prefix) < 0 || buf_int(b, s->v[W_CALLS]) < 0 || buf_str(b, wr->sfx) < 0
            || put_tail(b, inv, src) < 0 || buf_str(b, wr->mid) < 0 || put_prev(b, s) < 0 || BUF_LIT(b, "\"]}") < 0)
            return -1;
        s->v[W_ORDER] += 1;
        Py_CLEAR(s->prev);
        s->prev_n = s->v[W_CALLS];
        s->prev_pre = wr->prefix;
        s->prev_sfx = wr->sfx;
        return 0;
    }
    if ((out = str_int(wr->prefix, "", s->v[W_CALLS], wr->sfx)) == NULL)
        goto done;
    /* (taken by a name _fresh made: output names are not kept) */
    int taken = used_has(&wr->u, out);
    if (taken < 0)
        goto done;
    if (taken) {
        /* (_fresh may add to what used holds: the names fq_run's in_free
         * let be are asked about again from here) */
        wr->in_free = 0;
        if (wr->fresh_i != NULL && fresh_i_put(wr) < 0)
            goto done;
        Py_SETREF(out, PyObject_CallMethodOneArg(wr->session, s_fresh, out));
        if (out != NULL && wr->fresh_i != NULL && fresh_i_get(wr) < 0)
            goto done;
    }
    if (out == NULL)
        goto done;
    if (buf_str(b, wr->pre) < 0 || put_name(b, name) < 0 || buf_str(b, wr->post) < 0 || buf_str(b, out) < 0)
        goto done;
    if (put_tail(b, inv, src) < 0 || buf_str(b, wr->mid) < 0 || put_prev(b, s) < 0 || BUF_LIT(b, "\"]}") < 0)
        goto done;
    s->v[W_ORDER] += 1;
    Py_XSETREF(s->prev, out);
    s->prev_n = -1;
    out = NULL;
    rc = 0;
done:
    Py_XDECREF(out);
    return rc;
}

/* The call record of t, a _Queued (put_call_of with its inv, src, name). */
static int
put_call(Buf *b, PyObject *t, WState *s, Writer *wr)
{
    PyObject *inv = SGET(t, inv), *src = inv == NULL ? NULL : SGET(t, src), *name = src == NULL ? NULL : SGET(t, name);
    Name n = {name, NULL, 0};
    int rc = name == NULL ? -1 : put_call_of(b, inv, src, &n, s, wr);
    Py_XDECREF(inv);
    Py_XDECREF(src);
    Py_XDECREF(name);
    return rc;
}

/* b's bytes from..to appended to recs as one record (nothing when
 * empty): 0, -1. */
static int
buf_append(Buf *b, Py_ssize_t from, Py_ssize_t to, PyObject *recs)
{
    if (to <= from)
        return 0;
    PyObject *line = buf_text(b, from, to);
    int r = line == NULL ? -1 : PyList_Append(recs, line);
    Py_XDECREF(line);
    return r;
}

static PyObject *
fq_tail(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "fq_tail");
    PyObject *st = args[2];
    Writer wr;
    if (writer_of(&wr, st, args[3]) < 0)
        return NULL;
    WState s;
    Buf b;
    buf_init(&b, 0);
    int rc = -1;
    if (ws_load(&s, st) == 0 && buf_str(&b, args[1]) == 0 && put_call(&b, args[0], &s, &wr) == 0
        && buf_append(&b, 0, b.n, wr.recs) == 0)
        rc = ws_store(&s, st);
    Py_XDECREF(s.prev);
    buf_free(&b);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* n step lines into b (none for n <= 0, as a str's repetition). */
static int
put_steps(Buf *b, long long n)
{
    for (; n > 0; n--)
        if (BUF_LIT(b, "{\"op\": \"step\"}\n") < 0)
            return -1;
    return 0;
}

/* The name of the one queued input t's deaths are (groups: {j: [(wr,
 * x)]}, x a _Queued), and j (new reference); NULL with no error when
 * they are any other (not the common call). */
static PyObject *
one_gone(PyObject *groups, PyObject *Queued, long long *j)
{
    if (!PyDict_Check(groups)) {
        PyErr_SetString(PyExc_TypeError, "groups: a dict expected");
        return NULL;
    }
    if (PyDict_GET_SIZE(groups) != 1)
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *jo, *gone;
    PyDict_Next(groups, &pos, &jo, &gone);
    Py_ssize_t ng = PyObject_Length(gone);
    if (ng != 1)
        return NULL;
    if ((*j = PyLong_AsLongLong(jo)) == -1 && PyErr_Occurred())
        return NULL;
    PyObject *pair = PySequence_GetItem(gone, 0), *e = pair == NULL ? NULL : PySequence_GetItem(pair, 1);
    Py_XDECREF(pair);
    if (e == NULL)
        return NULL;
    PyObject *name = (PyObject *)Py_TYPE(e) == Queued ? SGET(e, name) : NULL;
    Py_DECREF(e);
    return name;
}

/* A common call's records into b (fq_one's for a _Queued, fq_entry's for
 * a compact queue's entry): the steps, with the del of the one input that
 * died before it (ename, its step j; NULL: none), its new tensor, its
 * call; the name it takes and its order, *name_out (its s a new
 * reference; with lazy, where wr->in_free says no base_i is taken, s
 * NULL: base_i not made) and *order_out. stale: the maps that may hold a
 * stale key of the input (STALE_*), the others not asked (cd is read for
 * STALE_VIEW only, oid for STALE_OBJ: NULL otherwise). 0, -1. */
static int
fq_common(Buf *b, PyObject *spec, const Name *ename, long long j, long long steps, PyObject *tmpl, PyObject *cd,
          PyObject *oid, PyObject *inv, PyObject *src, WState *s, Writer *wr, PyObject **dev_seen,
          Name *name_out, long long *order_out, int lazy, int stale)
{
    PyObject *name = NULL, *vk = NULL;
    Name nm = {NULL, wr->base, 0};
    int rc = -1, t_;
    if (ename == NULL) {
        if (put_steps(b, steps) < 0)
            goto done;
    } else {
        /* (_fq_before's loop: the steps before the death, its del, the
         * rest; a negative count repeats nothing.) */
        s->v[W_EPOCH] += 1;
        s->v[W_DELS] += 1;
        if (put_steps(b, j) < 0 || BUF_LIT(b, "{\"op\": \"del\", \"names\": [\"") < 0 || put_name(b, ename) < 0
            || BUF_LIT(b, "\"]}\n") < 0 || put_steps(b, steps - j) < 0)
            goto done;
    }
    /* name: Session._fresh's, base or base_i, the first not taken (where
     * none is, base_i by its parts: nm.i) */
    long long *i = wr->fresh_i;
    if (lazy && wr->in_free && *i > 0)
        nm.i = *i; /* (not taken: in_free) */
    else
        for (;;) {
            name = *i ? str_int(wr->base, "_", *i, NULL) : Py_NewRef(wr->base);
            if (name == NULL || (t_ = used_has_as(&wr->u, name, *i > 0)) < 0)
                goto done;
            if (!t_)
                break;
            Py_CLEAR(name);
            *i += 1;
        }
    nm.s = name;
    if (name != NULL && used_add(&wr->u, name) < 0)
        goto done;
    *i += 1;
    s->v[W_SEED] += 1;
    if (!PyTuple_Check(tmpl) || PyTuple_GET_SIZE(tmpl) != 3) {
        PyErr_SetString(PyExc_TypeError, "tmpl: a tuple of 3 expected");
        goto done;
    }
    if (buf_str(b, PyTuple_GET_ITEM(tmpl, 0)) < 0 || put_name(b, &nm) < 0 || buf_str(b, PyTuple_GET_ITEM(tmpl, 1)) < 0
        || buf_int(b, s->v[W_SEED]) < 0 || buf_str(b, PyTuple_GET_ITEM(tmpl, 2)) < 0 || BUF_LIT(b, "\n") < 0)
        goto done;
    /* if spec[2]: trace.devices = max(trace.devices, spec[2] + 1); once
     * a spec (a queue's inputs share one, and trace.devices only grows) */
    if (spec != *dev_seen) {
        PyObject *dev = PySequence_GetItem(spec, 2);
        if (dev == NULL)
            goto done;
        t_ = PyObject_IsTrue(dev);
        if (t_ > 0) {
            PyObject *d1 = PyNumber_Add(dev, one), *cur = d1 == NULL ? NULL : PyObject_GetAttr(wr->trace, s_devices);
            int gt = cur == NULL ? -1 : PyObject_RichCompareBool(d1, cur, Py_GT);
            if (gt > 0 && PyObject_SetAttr(wr->trace, s_devices, d1) < 0)
                gt = -1;
            Py_XDECREF(d1);
            Py_XDECREF(cur);
            t_ = gt < 0 ? -1 : 1;
        }
        Py_DECREF(dev);
        if (t_ < 0)
            goto done;
        *dev_seen = spec;
    }
    s->v[W_ORDER] += 1;
    s->v[W_EPOCH] += 1;
    *order_out = s->v[W_ORDER];
    /* by_view.pop((cd, 0, spec[0], spec[1]), None); by_obj.pop(oid,
     * None); by_obj_entry.pop(oid, None): of _bind then _forget, the
     * stale keys _bind overwrote (where there may be any: stale) */
    if (stale & STALE_VIEW) {
        PyObject *s0 = PySequence_GetItem(spec, 0), *s1 = PySequence_GetItem(spec, 1);
        if (s0 != NULL && s1 != NULL)
            vk = PyTuple_Pack(4, cd, zero, s0, s1);
        Py_XDECREF(s0);
        Py_XDECREF(s1);
        if (vk == NULL || pop_key(wr->by_view, vk) < 0)
            goto done;
    }
    if ((stale & STALE_OBJ) && (pop_key(wr->by_obj, oid) < 0 || pop_key(wr->by_obj_entry, oid) < 0))
        goto done;
    if (put_call_of(b, inv, src, &nm, s, wr) < 0)
        goto done;
    *name_out = nm;
    name = NULL;
    rc = 0;
done:
    Py_XDECREF(name);
    Py_XDECREF(vk);
    return rc;
}

/* One common call of fq_run into b: 1 written, 0 not the common kind
 * (nothing done), -1. dev_seen: the spec whose device was looked at. */
static int
fq_one(Buf *b, PyObject *t, WState *s, Writer *wr, PyObject **dev_seen)
{
    PyObject *spec = NULL, *groups = NULL, *steps_o = NULL, *ename = NULL, *name = NULL, *tmpl = NULL,
             *cd = NULL, *oid = NULL, *order = NULL, *inv = NULL, *src = NULL;
    int rc = -1, t_;
    long long j = 0, steps, ord;
    if ((spec = SGET(t, spec)) == NULL || (groups = SGET(t, groups)) == NULL)
        goto done;
    if (spec == Py_None) {
        rc = 0;
        goto done;
    }
    if ((t_ = STRUE(t, gone)) <= 0) {
        rc = t_;
        goto done;
    }
    if ((steps_o = SGET(t, steps)) == NULL || ((steps = PyLong_AsLongLong(steps_o)) == -1 && PyErr_Occurred()))
        goto done;
    if (groups != Py_None && (ename = one_gone(groups, wr->Queued, &j)) == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((tmpl = SGET(t, tmpl)) == NULL || (cd = SGET(t, cd)) == NULL || (oid = SGET(t, oid)) == NULL
        || (inv = SGET(t, inv)) == NULL || (src = SGET(t, src)) == NULL)
        goto done;
    Name en = {ename, NULL, 0}, nm;
    if (fq_common(b, spec, ename != NULL ? &en : NULL, j, steps, tmpl, cd, oid, inv, src, s, wr, dev_seen, &nm, &ord,
                  0, STALE_OBJ | STALE_VIEW) < 0)
        goto done;
    name = nm.s;
    if (SSET(t, name, name) < 0 || (order = PyLong_FromLongLong(ord)) == NULL || SSET(t, order, order) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(spec);
    Py_XDECREF(groups);
    Py_XDECREF(steps_o);
    Py_XDECREF(ename);
    Py_XDECREF(name);
    Py_XDECREF(tmpl);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(order);
    Py_XDECREF(inv);
    Py_XDECREF(src);
    return rc;
}

/* Entry i of the compact queue q as fq_one writes a _Queued: 1 written (its
 * name and order kept in it), 0 not the common kind (nothing done), -1. */
static int
fq_entry(Buf *b, Compact *q, Py_ssize_t i, WState *s, Writer *wr, PyObject **dev_seen)
{
    CEntry *e = &q->e[i];
    PyObject *ename = NULL;
    Name en = {NULL, q->name_base, 0};
    if (!e->gone || e->groups != NULL)
        return 0;
    if (e->dead_wr != NULL) {
        if (e->dead_i >= 0) {
            /* (an entry written: its name, or its parts where not made) */
            ename = Py_XNewRef(q->e[e->dead_i].name);
            en.i = q->e[e->dead_i].name_i;
        } else if ((PyObject *)Py_TYPE(e->dead_obj) == wr->Queued && (ename = SGET(e->dead_obj, name)) == NULL)
            return -1;
        if (ename == NULL && en.i <= 0)
            return 0;
        en.s = ename;
    }
    Name nm;
    long long ord;
    /* (its storage and id as ints only for the pops of the keys its check
     * found, a view's and an id's: fq_common's) */
    PyObject *cd = NULL, *oid = NULL;
    int rc = -1;
    if ((!(e->stale & STALE_VIEW) || (cd = cq_key_int(q, CQ_CD, i)) != NULL)
        && (!(e->stale & STALE_OBJ) || (oid = cq_key_int(q, CQ_ID, i)) != NULL))
        rc = fq_common(b, e->spec, e->dead_wr != NULL ? &en : NULL, e->dead_j, e->steps, e->tmpl, cd, oid, e->inv,
                       e->src, s, wr, dev_seen, &nm, &ord, 1, e->stale);
    Py_XDECREF(cd);
    Py_XDECREF(oid);
    Py_XDECREF(ename);
    if (rc < 0)
        return -1;
    Py_XSETREF(e->name, nm.s);
    e->name_i = nm.s == NULL ? nm.i : 0;
    if (nm.s == NULL && q->name_base != wr->base)
        Py_XSETREF(q->name_base, Py_NewRef(wr->base));
    e->order = ord;
    if (e->obj != NULL && cq_stand_in(q, i) == NULL)
        return -1;
    return 1;
}

/* d[key], borrowed, key a new reference (NULL: its making failed) that
 * this takes; NULL where d has no key, or with an error. */
static PyObject *
dict_get_taking(PyObject *d, PyObject *key)
{
    if (key == NULL)
        return NULL;
    PyObject *got = PyDict_GetItemWithError(d, key);
    Py_DECREF(key);
    return got;
}

/* Whether src is a read's src as _src_of gives it: None, or (dict, its
 * JSON). */
static int
is_src(PyObject *src)
{
    return src == Py_None
           || (PyTuple_CheckExact(src) && PyTuple_GET_SIZE(src) >= 2 && PyUnicode_Check(PyTuple_GET_ITEM(src, 1)));
}

/* A host read of name (a tree output's: no escaping) and its expect, on
 * lines of their own after b's, as jsonl._read_lines makes them; src
 * is_src's. 0, -1. */
static int
put_read(Buf *b, PyObject *name, PyObject *src)
{
    if (BUF_LIT(b, "\n{\"op\": \"read\", \"name\": \"") < 0 || buf_str(b, name) < 0)
        return -1;
    if (src == Py_None ? BUF_LIT(b, "\"}") < 0
                       : (BUF_LIT(b, "\", \"src\": ") < 0 || buf_str(b, PyTuple_GET_ITEM(src, 1)) < 0
                          || BUF_LIT(b, "}") < 0))
        return -1;
    return BUF_LIT(b, "\n{\"op\": \"expect\", \"error\": null}");
}

/* The host reads queued behind the queued call t (freshq's reads: id(t)
 * -> [(src, gone)]), for fq_run: 1 with *rd their list (NULL: none), when
 * each one's src is None or (dict, JSON) and its deaths none or one queued
 * input's (fq_tail's way writes the others); 0 otherwise; -1. */
static int
fq_reads_of(PyObject *reads, PyObject *t, PyObject *Queued, PyObject **rd)
{
    PyObject *got = dict_get_taking(reads, PyLong_FromVoidPtr(t));
    if (got == NULL)
        return PyErr_Occurred() ? -1 : 1;
    if (!PyList_CheckExact(got))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(got); i++) {
        PyObject *item = PyList_GET_ITEM(got, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
            return 0;
        PyObject *src = PyTuple_GET_ITEM(item, 0), *gone = PyTuple_GET_ITEM(item, 1);
        if (!is_src(src))
            return 0;
        if (gone != Py_None) {
            if (!PyList_CheckExact(gone) || PyList_GET_SIZE(gone) != 1)
                return 0;
            PyObject *pair = PyList_GET_ITEM(gone, 0);
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2
                || (PyObject *)Py_TYPE(PyTuple_GET_ITEM(pair, 1)) != Queued)
                return 0;
        }
    }
    *rd = Py_NewRef(got);
    return 1;
}

/* fq_reads_of's reads after their call's lines, as freshq._fq_reads_write
 * writes them: each its queued input's del (its epoch and del counted in
 * s), the read of the call's output (s's last name) and its expect. 0,
 * -1. */
static int
put_fq_reads(Buf *b, PyObject *rd, WState *s)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rd); i++) {
        PyObject *item = PyList_GET_ITEM(rd, i), *src = PyTuple_GET_ITEM(item, 0),
                 *gone = PyTuple_GET_ITEM(item, 1);
        if (gone != Py_None) {
            PyObject *x = PyTuple_GET_ITEM(PyList_GET_ITEM(gone, 0), 1), *name = SGET(x, name);
            int bad = name == NULL || BUF_LIT(b, "\n{\"op\": \"del\", \"names\": [\"") < 0 || buf_str(b, name) < 0
                      || BUF_LIT(b, "\"]}") < 0;
            Py_XDECREF(name);
            if (bad)
                return -1;
            s->v[W_EPOCH] += 1;
            s->v[W_DELS] += 1;
        }
        if (put_read(b, ws_prev(s), src) < 0)
            return -1;
    }
    return 0;
}

/* fastpath.fq_run: the common calls from q[k] on, their records one
 * element of recs (each call's lines as fq_tail's, the calls'
 * separated by a line end, as recs' are when written). A failure keeps
 * the calls written before it, in recs and st. */
static PyObject *
fq_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "fq_run");
    PyObject *q = args[0], *st = args[2], *reads = args[4];
    Py_ssize_t k = PyLong_AsSsize_t(args[1]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    Writer wr;
    if (writer_of(&wr, st, args[3]) < 0)
        return NULL;
    if (!PyList_CheckExact(q)) {
        PyErr_SetString(PyExc_TypeError, "q: a list expected");
        return NULL;
    }
    if (reads != Py_None && !PyDict_Check(reads)) {
        PyErr_SetString(PyExc_TypeError, "fq_run: reads, a dict or None expected");
        return NULL;
    }
    WState s;
    if (ws_load(&s, st) < 0) {
        Py_XDECREF(s.prev);
        return NULL;
    }
    /* Session._fresh's counter of the base, in C while the run writes */
    long long i = 0;
    wr.fresh_i = wr.u.counter = &i;
    int r = fresh_i_get(&wr);
    if (r == 0)
        r = writer_free(&wr);
    Buf b;
    /* (a call's lines: some 600 bytes, the src twice in them; the
     * compact queue, one item, stands for its entries: the buffer sized
     * for them at once, not doubled four times on the way, each a copy) */
    Py_ssize_t calls = 0;
    for (Py_ssize_t j = k; j < PyList_GET_SIZE(q); j++) {
        PyObject *t = PyList_GET_ITEM(q, j);
        calls += Py_IS_TYPE(t, &CompactType) ? compact_len((Compact *)t) : 1;
    }
    buf_init(&b, calls * 1024);
    PyObject *dev_seen = NULL;
    int wrote = 0; /* (a call written: the name counter put back) */
    for (; r >= 0 && k < PyList_GET_SIZE(q); k++) {
        long long saved[W_N];
        memcpy(saved, s.v, sizeof saved);
        Py_ssize_t mark = b.n;
        if (Py_IS_TYPE(PyList_GET_ITEM(q, k), &CompactType)) {
            /* The compact queue's entries, each as fq_one writes a _Queued,
             * up to the first that is not the common call (then k stays
             * here: _fq_write makes the rest objects, Compact.rest) */
            Compact *cq = (Compact *)PyList_GET_ITEM(q, k);
            Py_ssize_t nq = cq->n - cq->pending, done0 = cq->done;
            r = 1;
            while (cq->done < nq) {
                Py_ssize_t m = b.n;
                memcpy(saved, s.v, sizeof saved);
                r = (b.n > 0 && BUF_LIT(&b, "\n") < 0) ? -1 : fq_entry(&b, cq, cq->done, &s, &wr, &dev_seen);
                if (r <= 0) {
                    memcpy(s.v, saved, sizeof saved);
                    b.n = m;
                    break;
                }
                cq->done++;
                wrote = 1;
            }
            if (r >= 0 && cq->done > done0) {
                /* (the last entry written: its name, made now if it was
                 * written by its parts; not with an error already raised) */
                PyObject *ln = cq_name(cq, cq->done - 1);
                if (ln == NULL)
                    r = -1;
                else
                    Py_XSETREF(cq->last_name, Py_NewRef(ln));
            }
            if (r <= 0 || (r = cq_consumed(cq)) < 0)
                break;
            r = 1;
            continue;
        }
        PyObject *t = Py_NewRef(PyList_GET_ITEM(q, k)), *rd = NULL;
        /* (the reads behind it first: one fq_reads cannot write leaves
         * the call to fq_tail's way, nothing done) */
        r = reads != Py_None && PyDict_GET_SIZE(reads) ? fq_reads_of(reads, t, wr.Queued, &rd) : 1;
        if (r > 0)
            r = (b.n > 0 && BUF_LIT(&b, "\n") < 0) ? -1 : fq_one(&b, t, &s, &wr, &dev_seen);
        if (r > 0 && rd != NULL && put_fq_reads(&b, rd, &s) < 0)
            r = -1;
        Py_XDECREF(rd);
        Py_DECREF(t);
        if (r <= 0) {
            /* (a call not written, or half: as before it) */
            memcpy(s.v, saved, sizeof saved);
            b.n = mark;
            break;
        }
        wrote = 1;
    }
    PyObject *err_t = NULL, *err_v = NULL, *err_tb = NULL;
    if (r < 0)
        PyErr_Fetch(&err_t, &err_v, &err_tb);
    int w_ok = buf_append(&b, 0, b.n, wr.recs) == 0 && ws_store(&s, st) == 0 && (!wrote || fresh_i_put(&wr) == 0);
    Py_XDECREF(s.prev);
    buf_free(&b);
    if (r < 0) {
        if (!w_ok)
            PyErr_Clear();
        PyErr_Restore(err_t, err_v, err_tb);
        return NULL;
    }
    if (!w_ok)
        return NULL;
    return PyLong_FromSsize_t(k);
}

/* The host reads queued behind call i of replay_run's run (reads[i]: each
 * its src, is_src's), after its lines (put_read), naming its output
 * (name). 0, or -1 with an error. */
static int
put_reads(Buf *b, PyObject *reads, Py_ssize_t i, PyObject *name)
{
    PyObject *got = dict_get_taking(reads, PyLong_FromSsize_t(i));
    if (got == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *f = PySequence_Fast(got, "reads: a sequence of srcs expected");
    if (f == NULL)
        return -1;
    int rc = 0;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(f) && rc == 0; k++) {
        PyObject *src = PySequence_Fast_GET_ITEM(f, k);
        if (!is_src(src)) {
            PyErr_SetString(PyExc_TypeError, "reads: a src (None or (dict, JSON)) expected");
            rc = -1;
        } else
            rc = put_read(b, name, src);
    }
    Py_DECREF(f);
    return rc;
}

/* fastpath.replay_run: a run of deferred replays' records in one str,
 * their output names made (prefix + str(k) + sfx from k on), or None when
 * names_used has one of them. */
static PyObject *
replay_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(9, "replay_run");
    PyObject *used = args[2], *prefix = args[3], *sfx = args[4], *prev = args[5], *head = args[6], *mid = args[7],
             *reads = args[8];
    long long k = PyLong_AsLongLong(args[1]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    Used u;
    if (used_of(&u, used) < 0)
        return NULL;
    if (reads != Py_None && !PyDict_Check(reads)) {
        PyErr_SetString(PyExc_TypeError, "replay_run: reads, a dict or None expected");
        return NULL;
    }
    PyObject *rf = PySequence_Fast(args[0], "run: not a sequence"), *r = NULL, **names = NULL;
    if (rf == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rf);
    long long steps = 0;
    Buf b;
    buf_init(&b, n * 512);
    if ((names = PyMem_Calloc(n > 0 ? n : 1, sizeof(PyObject *))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* the names first: one taken (a name _fresh made) writes nothing */
    for (Py_ssize_t i = 0; i < n; i++) {
        int t;
        if ((names[i] = str_int(prefix, "", k + i, sfx)) == NULL || (t = used_has(&u, names[i])) < 0)
            goto done;
        if (t) {
            r = Py_NewRef(Py_None);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tok = PySequence_Fast_GET_ITEM(rf, i);
        if (!PyTuple_Check(tok) || PyTuple_GET_SIZE(tok) != 4) {
            PyErr_SetString(PyExc_ValueError, "run: (plan, steps, inv, src) expected");
            goto done;
        }
        long long st = PyLong_AsLongLong(PyTuple_GET_ITEM(tok, 1));
        if (st == -1 && PyErr_Occurred())
            goto done;
        steps += st;
        if ((i > 0 && BUF_LIT(&b, "\n") < 0) || put_steps(&b, st) < 0 || buf_str(&b, head) < 0
            || buf_str(&b, names[i]) < 0 || put_tail(&b, PyTuple_GET_ITEM(tok, 2), PyTuple_GET_ITEM(tok, 3)) < 0
            || buf_str(&b, mid) < 0 || buf_str(&b, i ? names[i - 1] : prev) < 0 || BUF_LIT(&b, "\"]}") < 0)
            goto done;
        if (reads != Py_None && PyDict_GET_SIZE(reads) && put_reads(&b, reads, i, names[i]) < 0)
            goto done;
    }
    {
        PyObject *text = buf_text(&b, 0, b.n), *st = text == NULL ? NULL : PyLong_FromLongLong(steps);
        if (st != NULL)
            r = PyTuple_Pack(3, text, n ? names[n - 1] : prev, st);
        Py_XDECREF(text);
        Py_XDECREF(st);
    }
done:
    if (names != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(names[i]);
    PyMem_Free(names);
    buf_free(&b);
    Py_DECREF(rf);
    return r;
}

static PyObject *
fresh_after(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(6, "fresh_after");
    PyObject *a = args[0], *node = args[1], *other = args[2], *out = args[3], *mgr = args[4],
             *dead_objs = args[5];
    if (check_tuple(a, A_LEN, "fresh_after: a") < 0)
        return NULL;
    PyObject *x = NULL;
    int t;
    TRY(tree_did_only(other, node, 1, PyTuple_GET_ITEM(a, A_NODE_REF), out, one, mgr, PyTuple_GET_ITEM(a, A_CKPT),
                      dead_objs));
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

/* -- RLock: the recorder's lock (Recorder.lock), a reentrant lock as
 * threading.RLock is, whose owner the Runner asks and whose count it moves
 * in place: threading.RLock's acquire(False) parses its arguments by
 * keyword (PyArg_ParseTupleAndKeywords), about a microsecond a call on a
 * GPU host with the parser's code and tables cold (BENCHMARKS.md, session
 * 20: the Runner's part "the lock, taken and let go"). Python's code uses
 * it as threading.RLock: with, acquire(blocking=True), release(),
 * _is_owned(). A blocked acquire waits with the GIL released and runs
 * signal handlers as it waits, as threading's does.
 *
 * With a GIL the lock is its owner and count alone: a thread that holds
 * the GIL tests and takes them in one step, with no call of the system's
 * lock (whose semaphore, another allocation, and its atomic operations
 * were two of the Runner's cold cache lines a call, taken and let go:
 * BENCHMARKS.md, session 40). The system's lock is then only what a
 * thread that finds it held waits on: made held, it is let go once for
 * each letting go of the RLock that finds a thread waiting (waiters),
 * and the thread it wakes takes the RLock if it is free by then, or
 * waits again. A free-threaded build takes the system's lock itself. -- */

#ifdef Py_GIL_DISABLED
#define RLOCK_BY_GIL 0
#else
#define RLOCK_BY_GIL 1
#endif

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    unsigned long owner; /* the holder's PyThread_get_thread_ident(), when count > 0 */
    unsigned long count;
    unsigned long waiters; /* (RLOCK_BY_GIL) threads waiting in rlock_take */
    PyObject *weakreflist;
} RLock;

static PyTypeObject RLockType;

/* Whether this thread holds it. */
static int
rlock_owned(RLock *l)
{
    return l->count > 0 && l->owner == PyThread_get_thread_ident();
}

/* 1 taken (count one more), 0 not (blocking false, another thread holds
 * it), -1 an error (a signal handler raised while waiting, the count's
 * overflow). */
static int
rlock_take(RLock *l, int blocking)
{
    if (rlock_owned(l)) {
        if (l->count == (unsigned long)-1) {
            PyErr_SetString(PyExc_OverflowError, "Internal lock count overflowed");
            return -1;
        }
        l->count++;
        return 1;
    }
#if RLOCK_BY_GIL
    if (l->count > 0) {
        if (!blocking)
            return 0;
        /* (woken by a letting go, which may find it taken again first) */
        l->waiters++;
        while (l->count > 0) {
            PyLockStatus r;
            Py_BEGIN_ALLOW_THREADS
            r = PyThread_acquire_lock_timed(l->lock, -1, 1);
            Py_END_ALLOW_THREADS
            if (r == PY_LOCK_INTR && Py_MakePendingCalls() < 0) {
                l->waiters--;
                return -1;
            }
        }
        l->waiters--;
    }
#else
    if (!PyThread_acquire_lock(l->lock, NOWAIT_LOCK)) {
        if (!blocking)
            return 0;
        PyLockStatus r;
        do {
            Py_BEGIN_ALLOW_THREADS
            r = PyThread_acquire_lock_timed(l->lock, -1, 1);
            Py_END_ALLOW_THREADS
            if (r == PY_LOCK_INTR && Py_MakePendingCalls() < 0)
                return -1;
        } while (r != PY_LOCK_ACQUIRED);
    }
#endif
    l->owner = PyThread_get_thread_ident();
    l->count = 1;
    return 1;
}

/* 0 let go (once: the lock itself when the count reaches 0), -1 not held
 * by this thread (RuntimeError, as threading.RLock's). */
static int
rlock_give(RLock *l)
{
    if (!rlock_owned(l)) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return -1;
    }
    if (--l->count == 0) {
        l->owner = 0;
        if (!RLOCK_BY_GIL || l->waiters > 0)
            PyThread_release_lock(l->lock);
    }
    return 0;
}

static PyObject *
rlock_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "RLock() takes no arguments");
        return NULL;
    }
    RLock *l = (RLock *)type->tp_alloc(type, 0);
    if (l == NULL)
        return NULL;
    if ((l->lock = PyThread_allocate_lock()) == NULL) {
        Py_DECREF(l);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate lock");
        return NULL;
    }
    /* (by the GIL: held from the start, what a waiter waits on) */
    if (RLOCK_BY_GIL)
        PyThread_acquire_lock(l->lock, WAIT_LOCK);
    return (PyObject *)l;
}

static void
rlock_dealloc(RLock *l)
{
    if (l->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)l);
    if (l->lock != NULL) {
        /* (freed unheld: by the GIL it is always held, what waiters wait on) */
        if (RLOCK_BY_GIL || l->count > 0)
            PyThread_release_lock(l->lock);
        PyThread_free_lock(l->lock);
    }
    Py_TYPE(l)->tp_free((PyObject *)l);
}

/* acquire(blocking=True, timeout=-1): only the two of threading's uses
 * the recorder makes (no timeout). */
static PyObject *
rlock_acquire(RLock *l, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *blocking = nargs > 0 ? args[0] : NULL, *timeout = nargs > 1 ? args[1] : NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 2)
        goto usage;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(k, "blocking") == 0 && blocking == NULL)
            blocking = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(k, "timeout") == 0 && timeout == NULL)
            timeout = args[nargs + i];
        else
            goto usage;
    }
    if (timeout != NULL) {
        double t = PyFloat_AsDouble(timeout);
        if (t == -1.0 && PyErr_Occurred())
            return NULL;
        if (t != -1.0) {
            PyErr_SetString(PyExc_ValueError, "cgtrace's RLock takes no timeout");
            return NULL;
        }
    }
    int b = blocking == NULL ? 1 : PyObject_IsTrue(blocking);
    if (b < 0)
        return NULL;
    int t = rlock_take(l, b);
    if (t < 0)
        return NULL;
    return PyBool_FromLong(t);
usage:
    PyErr_SetString(PyExc_TypeError, "acquire(blocking=True, timeout=-1)");
    return NULL;
}

static PyObject *
rlock_enter(RLock *l, PyObject *unused)
{
    if (rlock_take(l, 1) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
rlock_release(RLock *l, PyObject *unused)
{
    if (rlock_give(l) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
rlock_exit(RLock *l, PyObject *args)
{
    return rlock_release(l, NULL);
}

static PyObject *
rlock_is_owned(RLock *l, PyObject *unused)
{
    return PyBool_FromLong(rlock_owned(l));
}

static PyObject *
rlock_repr(RLock *l)
{
    return PyUnicode_FromFormat("<%s %s object owner=%lu count=%lu at %p>", l->count ? "locked" : "unlocked",
                                Py_TYPE(l)->tp_name, l->count ? l->owner : 0UL, l->count, l);
}

static PyMethodDef rlock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))rlock_acquire, METH_FASTCALL | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1): True when taken."},
    {"release", (PyCFunction)rlock_release, METH_NOARGS, "release(): one taking let go."},
    {"_is_owned", (PyCFunction)rlock_is_owned, METH_NOARGS, "_is_owned(): held by this thread."},
    {"__enter__", (PyCFunction)rlock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)rlock_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RLockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.RLock",
    .tp_basicsize = sizeof(RLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RLock(): threading.RLock's reentrant lock, whose owner and count C reads in place.",
    .tp_new = rlock_new,
    .tp_dealloc = (destructor)rlock_dealloc,
    .tp_repr = (reprfunc)rlock_repr,
    .tp_methods = rlock_methods,
    .tp_weaklistoffset = offsetof(RLock, weakreflist),
};


/* -- The journal's writer thread (jsonl._Journal, Trace.flush's handover):
 * a batch the queue's bound writes (some 40 KB every 64 calls) handed to
 * a thread of its own, which writes it with no GIL while the program's
 * next calls run, instead of the call that reached the bound copying it
 * into the kernel's page cache itself (0.5 us a loop call on the
 * stand-in, BENCHMARKS.md session 41). A batch is a bytes object: put
 * holds a reference, the thread reads its bytes (immutable, alive while
 * held) and marks it written; the references are let go under the GIL at
 * the next put or wait. Batches are written in the order put, whole
 * (partial writes continued); after a failed write the thread writes no
 * more, and put and wait raise the failure's OSError, with `written`
 * saying how many batches the file holds whole. In a process forked
 * while it ran the thread is not there: the object forgets its batches
 * and touches no lock (Recorder._forked writes nothing from a child). -- */
#if defined(__unix__) || defined(__APPLE__)
#define CGT_JOURNAL_THREAD 1
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

/* Batches in the thread's hands at most: put waits for the one before it
 * to be written, so a death loses one batch at most however late the
 * thread runs (as a rule it wrote it long before the next comes). */
#define JW_CAP 1
typedef struct {
    PyObject_HEAD
    int fd;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a batch put, or stop */
    pthread_cond_t idle; /* a batch written (or skipped after a failure) */
    PyObject *items[JW_CAP];
    /* ring indices, counting up: [done, head) written, their references
     * not yet let go; [head, tail) waiting, head the one being written */
    unsigned long long done, head, tail;
    long long written; /* batches written whole */
    int err;           /* errno of the first failed write (0: none) */
    int stop, started;
    int sleeping; /* the thread waits for a put's signal (not writing) */
    pid_t pid;    /* the process whose thread this is */
    pthread_t th;
} JournalWriter;

/* fd's write of n bytes at p whole (partial writes continued): 0 or errno. */
static int
jw_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* (bytes: its buffer fixed while held, read without the GIL) */
static int
jw_write_bytes(int fd, PyObject *it)
{
    return jw_write_all(fd, PyBytes_AS_STRING(it), (size_t)PyBytes_GET_SIZE(it));
}

/* A tuple of ASCII str (put checked them), each written with a newline
 * after it: their characters read in place, without the GIL (a str's are
 * fixed), in writes of up to JW_IOV pieces, so the batch is copied once,
 * by the kernel, not joined and encoded by the call that put it. 0 or
 * errno. */
#define JW_IOV 64
static int
jw_write_lines(int fd, PyObject *it)
{
    struct iovec iov[JW_IOV];
    Py_ssize_t n = PyTuple_GET_SIZE(it), i = 0;
    while (i < n) {
        int k = 0;
        for (; i < n && k + 2 <= JW_IOV; i++) {
            PyObject *u = PyTuple_GET_ITEM(it, i);
            iov[k].iov_base = PyUnicode_1BYTE_DATA(u);
            iov[k++].iov_len = (size_t)PyUnicode_GET_LENGTH(u);
            iov[k].iov_base = (void *)"\n";
            iov[k++].iov_len = 1;
        }
        struct iovec *v = iov;
        while (k > 0) {
            ssize_t got = writev(fd, v, k);
            if (got < 0) {
                if (errno == EINTR)
                    continue;
                return errno;
            }
            /* (a partial write: past the pieces written, into the one cut) */
            while (k > 0 && (size_t)got >= v->iov_len) {
                got -= (ssize_t)v->iov_len;
                v++;
                k--;
            }
            if (k > 0) {
                v->iov_base = (char *)v->iov_base + got;
                v->iov_len -= (size_t)got;
            }
        }
    }
    return 0;
}

static void *
jw_thread(void *arg)
{
    JournalWriter *w = (JournalWriter *)arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->head == w->tail) {
            if (w->stop)
                break; /* (nothing left to write) */
            /* (asleep between batches: a put wakes it, once a bound, some
             * 20 us of the call that puts on this development machine's
             * virtual CPUs; a thread that looked for batches on a timer
             * instead woke thousands of times a second and slowed the
             * program's own thread more than that, BENCHMARKS.md session
             * 41) */
            w->sleeping = 1;
            while (w->head == w->tail && !w->stop)
                pthread_cond_wait(&w->work, &w->mu);
            w->sleeping = 0;
            continue;
        }
        PyObject *it = w->items[w->head % JW_CAP];
        int err = w->err;
        pthread_mutex_unlock(&w->mu);
        if (err == 0)
            err = PyBytes_CheckExact(it) ? jw_write_bytes(w->fd, it) : jw_write_lines(w->fd, it);
        pthread_mutex_lock(&w->mu);
        if (err != 0 && w->err == 0)
            w->err = err;
        else if (err == 0)
            w->written++;
        w->head++;
        pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The written batches' references let go (under the GIL; the thread is
 * done with them). */
static void
jw_release(JournalWriter *w)
{
    pthread_mutex_lock(&w->mu);
    unsigned long long head = w->head;
    pthread_mutex_unlock(&w->mu);
    while (w->done < head) {
        PyObject *it = w->items[w->done % JW_CAP];
        w->items[w->done % JW_CAP] = NULL;
        w->done++;
        Py_DECREF(it);
    }
}

/* 0, or -1 with the failed write's OSError set. */
static int
jw_failed(JournalWriter *w)
{
    pthread_mutex_lock(&w->mu);
    int err = w->err;
    pthread_mutex_unlock(&w->mu);
    if (err == 0)
        return 0;
    errno = err;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

static int
jw_forked(JournalWriter *w)
{
    if (w->pid == getpid())
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "JournalWriter: a forked process writes nothing to its parent's journal");
    return 1;
}

static PyObject *
jw_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    int fd;
    static char *kw[] = {"fd", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i:JournalWriter", kw, &fd))
        return NULL;
    if (fd < 0) {
        PyErr_SetString(PyExc_ValueError, "JournalWriter: a file descriptor expected");
        return NULL;
    }
    JournalWriter *w = (JournalWriter *)type->tp_alloc(type, 0);
    if (w == NULL)
        return NULL;
    w->fd = fd;
    w->pid = getpid();
    if (pthread_mutex_init(&w->mu, NULL) != 0 || pthread_cond_init(&w->work, NULL) != 0
        || pthread_cond_init(&w->idle, NULL) != 0) {
        /* (tp_free only: nothing to join or let go) */
        Py_TYPE(w)->tp_free((PyObject *)w);
        PyErr_SetString(PyExc_OSError, "JournalWriter: no mutex");
        return NULL;
    }
    return (PyObject *)w;
}

/* Waits (the GIL let go) until every batch put is written. */
static void
jw_drain(JournalWriter *w)
{
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&w->mu);
    while (w->head < w->tail)
        pthread_cond_wait(&w->idle, &w->mu);
    pthread_mutex_unlock(&w->mu);
    Py_END_ALLOW_THREADS
}

/* The thread stopped (after writing what it holds) and joined. */
static void
jw_stop(JournalWriter *w)
{
    if (!w->started)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    Py_BEGIN_ALLOW_THREADS pthread_join(w->th, NULL);
    Py_END_ALLOW_THREADS w->started = 0;
}

static PyObject *
jw_put(JournalWriter *w, PyObject *data)
{
    /* its size in bytes: bytes', or a tuple of ASCII str's and a newline
     * each (None: a str of other than ASCII, which the caller encodes) */
    Py_ssize_t size = 0;
    if (PyBytes_CheckExact(data))
        size = PyBytes_GET_SIZE(data);
    else if (PyTuple_CheckExact(data)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(data); i++) {
            PyObject *u = PyTuple_GET_ITEM(data, i);
            if (!PyUnicode_CheckExact(u)) {
                PyErr_SetString(PyExc_TypeError, "JournalWriter.put: bytes or a tuple of str expected");
                return NULL;
            }
#if PY_VERSION_HEX < 0x030C0000
            if (PyUnicode_READY(u) < 0)
                return NULL;
#endif
            if (!PyUnicode_IS_ASCII(u))
                Py_RETURN_NONE;
            size += PyUnicode_GET_LENGTH(u) + 1;
        }
    } else {
        PyErr_SetString(PyExc_TypeError, "JournalWriter.put: bytes or a tuple of str expected");
        return NULL;
    }
    if (jw_forked(w))
        return NULL;
    jw_release(w);
    if (jw_failed(w) < 0)
        return NULL;
    if (w->stop) {
        PyErr_SetString(PyExc_ValueError, "JournalWriter.put: closed");
        return NULL;
    }
    if (!w->started) {
        /* (the thread takes no signal: the program's handlers run where
         * Python runs them, this thread never holding a signal back) */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&w->th, NULL, jw_thread, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            errno = rc;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        w->started = 1;
    }
    if (w->tail - w->done >= JW_CAP) {
        /* (full: the oldest written first; the thread is writing it, not
         * asleep, so nothing to wake) */
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&w->mu);
        while (w->head == w->done)
            pthread_cond_wait(&w->idle, &w->mu);
        pthread_mutex_unlock(&w->mu);
        Py_END_ALLOW_THREADS jw_release(w);
        if (jw_failed(w) < 0)
            return NULL;
    }
    pthread_mutex_lock(&w->mu);
    w->items[w->tail % JW_CAP] = Py_NewRef(data);
    w->tail++;
    if (w->sleeping)
        pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    return PyLong_FromSsize_t(size);
}

static PyObject *
jw_wait(JournalWriter *w, PyObject *Py_UNUSED(unused))
{
    if (jw_forked(w))
        return NULL;
    pthread_mutex_lock(&w->mu);
    int busy = w->head < w->tail;
    pthread_mutex_unlock(&w->mu);
    if (busy) /* (the GIL let go only to wait) */
        jw_drain(w);
    jw_release(w);
    if (jw_failed(w) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
jw_close(JournalWriter *w, PyObject *Py_UNUSED(unused))
{
    if (jw_forked(w))
        return NULL;
    jw_stop(w);
    w->stop = 1;
    jw_release(w);
    if (jw_failed(w) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
jw_get_written(JournalWriter *w, void *Py_UNUSED(closure))
{
    if (w->pid != getpid())
        return PyLong_FromLongLong(0);
    pthread_mutex_lock(&w->mu);
    long long n = w->written;
    pthread_mutex_unlock(&w->mu);
    return PyLong_FromLongLong(n);
}

static PyObject *
jw_get_pending(JournalWriter *w, void *Py_UNUSED(closure))
{
    if (w->pid != getpid())
        return PyLong_FromLongLong(0);
    pthread_mutex_lock(&w->mu);
    unsigned long long n = w->tail - w->head;
    pthread_mutex_unlock(&w->mu);
    return PyLong_FromUnsignedLongLong(n);
}

static void
jw_dealloc(JournalWriter *w)
{
    if (w->pid == getpid()) {
        jw_stop(w);
        jw_release(w);
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->idle);
        pthread_mutex_destroy(&w->mu);
    }
    /* (a forked child: the parent's thread is not here and its lock may
     * be held; the batches' references are left, as the child's copies
     * of the parent's objects) */
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyMethodDef jw_methods[] = {
    {"put", (PyCFunction)jw_put, METH_O,
     "put(data): bytes, or a tuple of lines (str, each written with a newline), handed to the thread, written "
     "after those put before it; returns the bytes it will write, or None for lines not all ASCII (nothing "
     "put: encode them); raises OSError when an earlier write failed."},
    {"wait", (PyCFunction)jw_wait, METH_NOARGS,
     "wait(): returns once every batch put is written; raises OSError when a write failed."},
    {"close", (PyCFunction)jw_close, METH_NOARGS,
     "close(): what was put written, the thread ended (the file descriptor stays open); raises OSError when a "
     "write failed."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef jw_getset[] = {
    {"written", (getter)jw_get_written, NULL, "batches written whole so far", NULL},
    {"pending", (getter)jw_get_pending, NULL, "batches put and not yet written", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject JournalWriterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.JournalWriter",
    .tp_basicsize = sizeof(JournalWriter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JournalWriter(fd): a thread writing the bytes put to it to fd, in order, without the GIL.",
    .tp_new = jw_new,
    .tp_dealloc = (destructor)jw_dealloc,
    .tp_methods = jw_methods,
    .tp_getset = jw_getset,
};
#endif
/* -- A host read in C: the read wrapper's body (hooks._install_reads; its
 * Python there is the reference) for a read of the last deferred call's
 * output, queued behind it (events._read_lean, _queue_read). In Python a
 * lean read ran some thirteen frames of the recorder's (the name's
 * lookup, the two lean tests, the queue, the src's walk), about a
 * microsecond each on a GPU host with their code cold; a loop that reads
 * its loss or token at every step pays them at every step. Every other
 * end is the recorder's Python, called as the wrapper calls it: the
 * deferred calls written (_settle), a read recorded as any is (_on_read),
 * a read that raised, a read _queue_read itself records. The original
 * method is called from here, a C function of the wrapper's frame, so
 * Dynamo's frame hook meets its frames as the wrapper's own callees
 * (hooks._skip_frames). -- */

/* The ctx tuple (hooks._Hooks._read_c): */
enum { R_REC, R_HOT, R_TLS, R_LOCK, R_BOX, R_ENTRIES, R_BY_OBJ, R_OUT_STORAGE, R_WATCH, R_DEAD, R_FQ, R_PENDING,
       R_FQ_WRS, R_LIB, R_DYNAMO, R_SRC_CACHE, R_DYNAMO_FRAME, R_ERROR_TEXT, R_MARK_SEEN, R_PARTIAL, R_BOUND,
       R_REC_DICT, R_LEN };

static PyObject *s_settle, *s_on_read, *s_queue_read, *s_read_named, *s_is_library_file, *s_entries,
    *s_fq_reads, *s_pending_reads, *s_lean_reads, *s_busy, *s_recording_a_read, *s_rec_src_of;

/* rec.name, read in the Recorder's own __dict__ (the ctx's: its class
 * has no attribute of the names read so, Recorder._read_c checks), not
 * through its class first (the type cache, and on its miss each of the
 * class's ten bases' dicts). New reference; AttributeError where absent. */
static PyObject *
rec_get(PyObject *ctx, PyObject *name)
{
    PyObject *d = PyTuple_GET_ITEM(ctx, R_REC_DICT), *v;
    if (!PyDict_CheckExact(d)) {
        PyErr_SetString(PyExc_TypeError, "read_run: the recorder's __dict__");
        return NULL;
    }
    if ((v = PyDict_GetItemWithError(d, name)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_AttributeError, name);
        return NULL;
    }
    return Py_NewRef(v);
}

/* Session.read_target(t, storage): the name a read of t reads, or None
 * (new reference; NULL with an error). */
static PyObject *
read_target(PyObject *ctx, PyObject *t)
{
    PyObject *entries = PyTuple_GET_ITEM(ctx, R_ENTRIES), *out_storage = PyTuple_GET_ITEM(ctx, R_OUT_STORAGE);
    if (!PyDict_CheckExact(out_storage) || !PyDict_CheckExact(entries))
        return PyObject_CallMethodOneArg(PyTuple_GET_ITEM(ctx, R_REC), s_read_named, t);
    if (PyDict_GET_SIZE(out_storage) == 0)
        Py_RETURN_NONE;
    PyObject *key = PyLong_FromVoidPtr(t), *name = NULL, *e = NULL, *fact = NULL, *st = NULL, *res = NULL;
    if (key == NULL || (name = dict_get(PyTuple_GET_ITEM(ctx, R_BY_OBJ), key, NULL)) == NULL)
        goto done;
    if (name != Py_None) {
        if ((e = dict_get(entries, name, NULL)) == NULL)
            goto done;
        if (e != Py_None) {
            int is = entry_of(e, t);
            if (is < 0)
                goto done;
            if (is) {
                /* name if e.fact.storage in out_storage else None */
                int in;
                if ((fact = SGET(e, fact)) == NULL || (st = PyObject_GetAttr(fact, s_storage)) == NULL
                    || (in = PyDict_Contains(out_storage, st)) < 0)
                    goto done;
                res = Py_NewRef(in ? name : Py_None);
                goto done;
            }
        }
    }
    /* out_storage.get(t.untyped_storage()._cdata) */
    {
        PyObject *s = PyObject_CallMethodNoArgs(t, s_untyped_storage), *cd;
        if (s == NULL)
            goto done;
        cd = PyObject_GetAttr(s, s_cdata);
        Py_DECREF(s);
        if (cd == NULL)
            goto done;
        res = dict_get(out_storage, cd, NULL);
        Py_DECREF(cd);
    }
done:
    Py_XDECREF(key);
    Py_XDECREF(name);
    Py_XDECREF(e);
    Py_XDECREF(fact);
    Py_XDECREF(st);
    return res;
}

/* events._read_lean(target): 1, 0, -1. */
static int
read_lean(PyObject *ctx, PyObject *target)
{
    PyObject *fq = PyTuple_GET_ITEM(ctx, R_FQ), *pend = PyTuple_GET_ITEM(ctx, R_PENDING); /* (lists: read_run) */
    PyObject *e = dict_get(PyTuple_GET_ITEM(ctx, R_ENTRIES), target, NULL), *x = NULL;
    int t = 0;
    if (e == NULL)
        return -1;
    if (e == Py_None)
        goto done;
    if (PyList_GET_SIZE(fq) > 0) {
        /* a = hot.fql; a is not None and not pending and e is a[A_PLAN].entries[0] */
        PyObject *a = SGET(PyTuple_GET_ITEM(ctx, R_HOT), fql);
        if (a == NULL) {
            t = -1;
            goto done;
        }
        if (a != Py_None && PyList_GET_SIZE(pend) == 0) {
            PyObject *plan = PySequence_GetItem(a, A_PLAN);
            if (plan == NULL || (x = PyObject_GetAttr(plan, s_entries)) == NULL) {
                Py_XDECREF(plan);
                Py_DECREF(a);
                t = -1;
                goto done;
            }
            Py_DECREF(plan);
            PyObject *e0 = PySequence_GetItem(x, 0);
            if (e0 == NULL)
                t = -1;
            else {
                t = e0 == e;
                Py_DECREF(e0);
            }
        }
        Py_DECREF(a);
        goto done;
    }
    /* bool(pend) and e in pend[-1][0].entries (by identity) */
    if (PyList_GET_SIZE(pend) > 0) {
        PyObject *last = PyList_GET_ITEM(pend, PyList_GET_SIZE(pend) - 1);
        PyObject *p0 = PySequence_GetItem(last, 0);
        if (p0 == NULL || (x = PyObject_GetAttr(p0, s_entries)) == NULL) {
            Py_XDECREF(p0);
            t = -1;
            goto done;
        }
        Py_DECREF(p0);
        PyObject *f = PySequence_Fast(x, "entries: not a sequence");
        if (f == NULL) {
            t = -1;
            goto done;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(f) && !t; i++)
            t = PySequence_Fast_GET_ITEM(f, i) == e;
        Py_DECREF(f);
    }
done:
    Py_XDECREF(x);
    Py_DECREF(e);
    return t;
}

/* The first of the program's frames from the calling Python function's
 * (the read wrapper's) up, as events._read_src finds it: a frame whose
 * file is not the library's (rec._lib_file, rec._is_library_file) or
 * whose code Dynamo transformed (facts.dynamo_frame, its cache read
 * here); its src (rec._src_cache, rec._src_of), or None. New reference. */
static PyObject *
read_src(PyObject *ctx)
{
    PyObject *rec = PyTuple_GET_ITEM(ctx, R_REC), *lib = PyTuple_GET_ITEM(ctx, R_LIB),
             *dyn = PyTuple_GET_ITEM(ctx, R_DYNAMO), *cache = PyTuple_GET_ITEM(ctx, R_SRC_CACHE);
    Frame fr;
    if (!PyDict_CheckExact(lib) || !PyDict_CheckExact(dyn) || !PyDict_CheckExact(cache)) {
        PyErr_SetString(PyExc_TypeError, "read_run: the frame caches are dicts");
        return NULL;
    }
    int more = frame_at(&fr, 0);
    while (more) {
        PyCodeObject *code = frame_code(&fr);
        PyObject *path = code->co_filename, *v = PyDict_GetItemWithError(lib, path);
        int is_lib;
        if (v == NULL) {
            if (PyErr_Occurred())
                goto error;
            if ((v = PyObject_CallMethodOneArg(rec, s_is_library_file, path)) == NULL)
                goto error;
            if (PyDict_SetItem(lib, path, v) < 0) {
                Py_DECREF(v);
                goto error;
            }
            is_lib = PyObject_IsTrue(v);
            Py_DECREF(v);
        } else
            is_lib = PyObject_IsTrue(v);
        if (is_lib < 0)
            goto error;
        int take = !is_lib;
        if (!take) {
            /* dynamo_frame(code): _DYNAMO_CODES[id(code)], when its weak
             * reference is still to code; else asked */
            PyObject *key = PyLong_FromVoidPtr(code), *got;
            if (key == NULL)
                goto error;
            got = PyDict_GetItemWithError(dyn, key);
            Py_DECREF(key);
            if (got == NULL && PyErr_Occurred())
                goto error;
            int t = -2;
            if (got != NULL && PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2) {
                int same = deref_is(PyTuple_GET_ITEM(got, 0), (PyObject *)code);
                if (same < 0)
                    goto error;
                if (same)
                    t = PyObject_IsTrue(PyTuple_GET_ITEM(got, 1));
            }
            if (t == -2)
                t = truth(PyObject_CallOneArg(PyTuple_GET_ITEM(ctx, R_DYNAMO_FRAME), (PyObject *)code));
            if (t < 0)
                goto error;
            take = t;
        }
        if (take) {
            PyObject *f = frame_object(&fr), *line, *key, *src;
            if (f == NULL)
                goto error;
            if ((line = PyLong_FromLong(PyFrame_GetLineNumber((PyFrameObject *)f))) == NULL)
                goto error;
            key = PyTuple_Pack(3, code->co_filename, line, code->co_name);
            if (key == NULL) {
                Py_DECREF(line);
                goto error;
            }
            src = PyDict_GetItemWithError(cache, key);
            Py_DECREF(key);
            if (src != NULL)
                src = Py_NewRef(src);
            else if (!PyErr_Occurred())
                src = PyObject_CallMethodObjArgs(rec, s_rec_src_of, (PyObject *)code, line, NULL);
            Py_DECREF(line);
            frame_done(&fr);
            return src;
        }
        more = frame_back(&fr);
    }
    frame_done(&fr);
    Py_RETURN_NONE;
error:
    frame_done(&fr);
    return NULL;
}

/* The lean read's queuing: events._queue_read's first branch, where what
 * happened since the last deferred call is only what a read's records
 * may follow. 1 queued, 0 not (nothing changed: the caller calls
 * _queue_read, which records it as any read), -1 an error. */
static int
read_queue(PyObject *ctx, PyObject *target)
{
    PyObject *hot = PyTuple_GET_ITEM(ctx, R_HOT), *dead = PyTuple_GET_ITEM(ctx, R_DEAD),
             *fq = PyTuple_GET_ITEM(ctx, R_FQ), *watch = PyTuple_GET_ITEM(ctx, R_WATCH);
    PyObject *c = NULL, *mc = NULL, *x = NULL, *reads = NULL, *k = NULL, *gone = NULL, *got = NULL, *src = NULL,
             *item = NULL;
    int t, r = 0;
    if ((t = read_lean(ctx, target)) <= 0)
        return t;
    /* box.mark_step_counter == hot.mark_counter */
    if ((c = PyObject_GetAttr(PyTuple_GET_ITEM(ctx, R_BOX), s_mark_step_counter)) == NULL
        || (mc = SGET(hot, mark_counter)) == NULL || (t = compare(c, mc, Py_EQ)) < 0)
        goto error;
    if (!t)
        goto done;
    /* not (session._watch and watch_dead(session._watch.values()) is not None) */
    if (!PyDict_CheckExact(watch) || !PyList_CheckExact(dead)) {
        PyErr_SetString(PyExc_TypeError, "read_run: the session's polled names and deaths");
        goto error;
    }
    if (PyDict_GET_SIZE(watch) > 0) {
        PyObject *vals = PyDict_Values(watch);
        if (vals == NULL || (x = watch_dead(NULL, vals)) == NULL) {
            Py_XDECREF(vals);
            goto error;
        }
        Py_DECREF(vals);
        if (x != Py_None)
            goto done;
        Py_CLEAR(x);
    }
    Py_ssize_t n = PyList_GET_SIZE(dead);
    int on_fq = PyList_GET_SIZE(fq) > 0;
    if (on_fq) {
        /* reads = rec._fq_reads; k = id(fq[-1]); gone = _queued_deaths(dead, n) if n else None */
        if ((reads = rec_get(ctx, s_fq_reads)) == NULL
            || (k = PyLong_FromVoidPtr(PyList_GET_ITEM(fq, PyList_GET_SIZE(fq) - 1))) == NULL)
            goto error;
        if (n > 0) {
            PyObject *wrs = PyTuple_GET_ITEM(ctx, R_FQ_WRS);
            if ((gone = PyList_New(0)) == NULL)
                goto error;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *d = PyList_GET_ITEM(dead, i), *wr, *id, *q, *qwr;
                if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) < 1)
                    goto done;
                wr = PyTuple_GET_ITEM(d, 0);
                if ((id = PyLong_FromVoidPtr(wr)) == NULL)
                    goto error;
                q = dict_get(wrs, id, NULL);
                Py_DECREF(id);
                if (q == NULL)
                    goto error;
                if (q == Py_None) {
                    Py_DECREF(q);
                    goto done;
                }
                /* x is None or x.gone or x.wr is not wr: not queued */
                int g = STRUE(q, gone);
                if (g != 0) {
                    Py_DECREF(q);
                    if (g < 0)
                        goto error;
                    goto done;
                }
                if ((qwr = SGET(q, wr)) == NULL) {
                    Py_DECREF(q);
                    goto error;
                }
                Py_DECREF(qwr); /* (compared by identity only) */
                if (qwr != wr) {
                    Py_DECREF(q);
                    goto done;
                }
                PyObject *pair = PyTuple_Pack(2, wr, q);
                Py_DECREF(q);
                if (pair == NULL || PyList_Append(gone, pair) < 0) {
                    Py_XDECREF(pair);
                    goto error;
                }
                Py_DECREF(pair);
            }
        }
    } else {
        if (n > 0)
            goto done;
        PyObject *pend = PyTuple_GET_ITEM(ctx, R_PENDING);
        if ((reads = rec_get(ctx, s_pending_reads)) == NULL
            || (k = PyLong_FromSsize_t(PyList_GET_SIZE(pend) - 1)) == NULL)
            goto error;
    }
    if (!PyDict_CheckExact(reads)) {
        PyErr_SetString(PyExc_TypeError, "read_run: the queued reads are a dict");
        goto error;
    }
    /* len(reads.get(k, ())) < _READS_AFTER_CALL */
    got = PyDict_GetItemWithError(reads, k);
    if (got == NULL && PyErr_Occurred())
        goto error;
    Py_ssize_t bound = PyLong_AsSsize_t(PyTuple_GET_ITEM(ctx, R_BOUND)), have = 0;
    if (bound < 0)
        goto error;
    if (got != NULL && (!PyList_CheckExact(got) || (have = PyList_GET_SIZE(got)) >= bound))
        goto done;
    /* The read queued: nothing above changed the recorder's state. */
    if ((src = read_src(ctx)) == NULL)
        goto error;
    if (on_fq)
        item = PyTuple_Pack(2, src, gone != NULL ? gone : Py_None);
    else {
        PyObject *e = PyObject_GetItem(PyTuple_GET_ITEM(ctx, R_ENTRIES), target);
        item = e == NULL ? NULL : PyTuple_Pack(2, src, e);
        Py_XDECREF(e);
    }
    if (item == NULL)
        goto error;
    if (got == NULL) {
        PyObject *l = PyList_New(0);
        if (l == NULL || PyDict_SetItem(reads, k, l) < 0) {
            Py_XDECREF(l);
            goto error;
        }
        got = l;
        Py_DECREF(l); /* (the dict holds it) */
    }
    if (gone != NULL) {
        /* del dead[:n]; each gone */
        if (PyList_SetSlice(dead, 0, n, NULL) < 0)
            goto error;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gone); i++)
            if (SSET(PyTuple_GET_ITEM(PyList_GET_ITEM(gone, i), 1), gone, Py_True) < 0)
                goto error;
    }
    if (PyList_Append(got, item) < 0)
        goto error;
    /* rec.lean_reads += 1 */
    {
        PyObject *lr = rec_get(ctx, s_lean_reads), *lr1;
        if (lr == NULL)
            goto error;
        lr1 = PyNumber_Add(lr, one);
        Py_DECREF(lr);
        if (lr1 == NULL || PyDict_SetItem(PyTuple_GET_ITEM(ctx, R_REC_DICT), s_lean_reads, lr1) < 0) {
            Py_XDECREF(lr1);
            goto error;
        }
        Py_DECREF(lr1);
    }
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(c);
    Py_XDECREF(mc);
    Py_XDECREF(x);
    Py_XDECREF(reads);
    Py_XDECREF(k);
    Py_XDECREF(gone);
    Py_XDECREF(src);
    Py_XDECREF(item);
    return r;
}

/* orig(t, *args, **kwargs). New reference. */
static PyObject *
read_orig(PyObject *orig, PyObject *t, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *small[8], **stack = n < 8 ? small : PyMem_New(PyObject *, n + 1);
    if (stack == NULL)
        return PyErr_NoMemory();
    stack[0] = t;
    for (Py_ssize_t i = 0; i < n; i++)
        stack[i + 1] = PyTuple_GET_ITEM(args, i);
    PyObject *out = PyObject_VectorcallDict(orig, stack, n + 1, kwargs == Py_None ? NULL : kwargs);
    if (stack != small)
        PyMem_Free(stack);
    return out;
}

/* An Exception raised (not a BaseException only) cleared: 0; else -1,
 * the error kept. */
static int
clear_exception(void)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 0;
}

/* rec._settle(); rec._read_named(t): the name once the deferred calls are
 * written, or None where either raised an Exception (new reference; NULL
 * with another error). */
static PyObject *
read_settled(PyObject *rec, PyObject *t)
{
    PyObject *res = PyObject_CallMethodNoArgs(rec, s_settle), *target;
    if (res == NULL)
        return clear_exception() < 0 ? NULL : Py_NewRef(Py_None);
    Py_DECREF(res);
    if ((target = PyObject_CallMethodOneArg(rec, s_read_named, t)) == NULL)
        return clear_exception() < 0 ? NULL : Py_NewRef(Py_None);
    return target;
}

/* fastpath.read_run's C (the wrapper's body: hooks._install_reads). */
static PyObject *
read_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "read_run");
    PyObject *ctx = args[0], *t = args[1], *orig = args[2], *pargs = args[3], *kwargs = args[4];
    if (check_tuple(ctx, R_LEN, "read_run: ctx") < 0)
        return NULL;
    if (!PyTuple_Check(pargs) || (kwargs != Py_None && !PyDict_Check(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "read_run: args a tuple, kwargs a dict or None");
        return NULL;
    }
    PyObject *rec = PyTuple_GET_ITEM(ctx, R_REC), *hot = PyTuple_GET_ITEM(ctx, R_HOT),
             *tls = PyTuple_GET_ITEM(ctx, R_TLS), *lock = PyTuple_GET_ITEM(ctx, R_LOCK);
    if (!Py_IS_TYPE(lock, &RLockType)) {
        PyErr_SetString(PyExc_TypeError, "read_run: the recorder's lock is the C module's RLock");
        return NULL;
    }
    if (!PyList_CheckExact(PyTuple_GET_ITEM(ctx, R_FQ)) || !PyList_CheckExact(PyTuple_GET_ITEM(ctx, R_PENDING))) {
        PyErr_SetString(PyExc_TypeError, "read_run: the queue and the pending replays are lists");
        return NULL;
    }
    RLock *lk = (RLock *)lock;
    /* hot.off or tls.busy or rec._in_call() (tls.depth, or hot.steady in
     * the thread holding the lock): the original. (_CallState's class
     * defaults: no getattr's default to ask for.) */
    int x = STRUE(hot, off);
    if (x == 0)
        x = attr_true(tls, s_busy);
    if (x == 0 && (x = attr_true(tls, s_depth)) == 0 && (x = STRUE(hot, steady)) > 0)
        x = rlock_owned(lk);
    if (x < 0)
        return NULL;
    if (x)
        return read_orig(orig, t, pargs, kwargs);
    /* with rec.lock: */
    if (rlock_take(lk, 1) < 0)
        return NULL;
    int lean = 0;
    PyObject *target = NULL, *out = NULL;
    {
        /* (rec._fq_sync(): the compact queue's entries made the _Queued
         * objects a read looks at) */
        PyObject *fq = PyTuple_GET_ITEM(ctx, R_FQ);
        Py_ssize_t L = PyList_GET_SIZE(fq);
        if (L > 0 && Py_IS_TYPE(PyList_GET_ITEM(fq, L - 1), &CompactType)
            && cq_sync((Compact *)PyList_GET_ITEM(fq, L - 1)) < 0)
            goto release;
    }
    target = read_target(ctx, t);
    if (target == NULL && clear_exception() < 0)
        goto release;
    if (target == NULL)
        target = Py_NewRef(Py_None);
    if (target != Py_None
        && (PyList_GET_SIZE(PyTuple_GET_ITEM(ctx, R_FQ)) > 0 || PyList_GET_SIZE(PyTuple_GET_ITEM(ctx, R_PENDING)) > 0)) {
        /* (a read of the last deferred call's output queued behind it;
         * else the deferred calls written, and named as they stand) */
        if ((lean = read_lean(ctx, target)) < 0) {
            lean = 0;
            Py_SETREF(target, Py_NewRef(Py_None));
            if (clear_exception() < 0)
                goto release;
        } else if (!lean) {
            Py_SETREF(target, read_settled(rec, t));
            if (target == NULL)
                goto release;
        }
    }
    if (target == Py_None) {
        /* (not a tree output's: read without the lock) */
        Py_CLEAR(target);
        if (rlock_give(lk) < 0)
            return NULL;
        return read_orig(orig, t, pargs, kwargs);
    }
    if (PyObject_SetAttr(tls, s_busy, Py_True) < 0)
        goto release;
    out = read_orig(orig, t, pargs, kwargs);
    if (out == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL)
            PyException_SetTraceback(value, tb);
        int ok = 0;
        if (lean) {
            Py_SETREF(target, read_settled(rec, t));
            ok = target == NULL ? -1 : 0;
        }
        if (ok == 0 && target != Py_None) {
            PyObject *text = PyObject_CallOneArg(PyTuple_GET_ITEM(ctx, R_ERROR_TEXT), value), *res = NULL;
            if (text != NULL) {
                res = PyObject_CallMethodObjArgs(rec, s_on_read, target, text, NULL);
                Py_DECREF(text);
            }
            if (res != NULL) {
                Py_DECREF(res);
                res = PyObject_CallOneArg(PyTuple_GET_ITEM(ctx, R_MARK_SEEN), value);
            }
            if (res == NULL)
                ok = -1;
            Py_XDECREF(res);
        }
        /* finally: tls.busy = False (its own error replaces the read's) */
        if (ok < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            PyErr_Fetch(&type, &value, &tb);
        }
        if (PyObject_SetAttr(tls, s_busy, Py_False) < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        } else
            PyErr_Restore(type, value, tb);
        goto release;
    }
    if (PyObject_SetAttr(tls, s_busy, Py_False) < 0) {
        Py_CLEAR(out);
        goto release;
    }
    if (lean) {
        int q = read_queue(ctx, target);
        if (q < 0) {
            /* _queue_read's: except Exception as e: rec._fail("recording a read", e) */
            PyObject *type, *value, *tb;
            if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                Py_CLEAR(out);
                goto release;
            }
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            PyObject *res = PyObject_CallMethodObjArgs(rec, s_fail, s_recording_a_read, value, NULL);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            if (res == NULL)
                Py_CLEAR(out);
            Py_XDECREF(res);
        } else if (q == 0) {
            /* rec._queue_read(target, partial(rec._read_named, t), the wrapper's frame) */
            PyObject *named = PyObject_GetAttr(rec, s_read_named), *retarget = NULL, *res = NULL;
            PyObject *frame = (PyObject *)PyEval_GetFrame();
            if (named != NULL)
                retarget = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(ctx, R_PARTIAL), named, t, NULL);
            if (retarget != NULL)
                res = PyObject_CallMethodObjArgs(rec, s_queue_read, target, retarget,
                                                 frame != NULL ? frame : Py_None, NULL);
            Py_XDECREF(named);
            Py_XDECREF(retarget);
            if (res == NULL)
                Py_CLEAR(out);
            Py_XDECREF(res);
        }
    } else {
        PyObject *res = PyObject_CallMethodObjArgs(rec, s_on_read, target, Py_None, NULL);
        if (res == NULL)
            Py_CLEAR(out);
        Py_XDECREF(res);
    }
release:
    Py_XDECREF(target);
    {
        /* (the with's exit: the call's own error kept) */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (rlock_give(lk) < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            Py_CLEAR(out);
            return NULL;
        }
        PyErr_Restore(type, value, tb);
    }
    return out;
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
        *ptrs_equal, *data_ptr, *steady, *rec, *declined, *watch_alive, *lock, *fresh_ctx, *fq, *tls, *fq_bound,
        *compact;
} Runner;

static const char *runner_fields[] = {"hot", "armed", "acquire", "owned", "release", "orig_run", "box", "gen",
                                      "dead_objs", "pend", "ptrs_equal", "data_ptr", "steady", "rec",
                                      "declined", "watch_alive", "lock", "fresh_ctx", "fq", "tls", "fq_bound",
                                      "compact", NULL};
#define RUNNER_NFIELDS 22

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




static PyObject *
call3(PyObject *fn, PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *args[3] = {a, b, c};
    return PyObject_Vectorcall(fn, args, 3, NULL);
}

/* tls.depth = 0; tls.node = None (fresh_run's finally). */
static int
tls_reset(PyObject *tls)
{
    if (PyObject_SetAttr(tls, s_depth, zero) < 0 || PyObject_SetAttr(tls, s_node, Py_None) < 0)
        return -1;
    return 0;
}

/* _Hot.journal_due: whether the journal's buffered calls are due (hot.due,
 * which Recorder._set_due puts JOURNAL_MS past each writing, on
 * time.monotonic_ns's clock; None: no journal): 1, 0, or -1 with an error. */
static int
journal_due(PyObject *hot)
{
    PyObject *due = SGET(hot, due);
    if (due == NULL)
        return -1;
    if (due == Py_None) {
        Py_DECREF(due);
        return 0;
    }
    long long d = PyLong_AsLongLong(due);
    Py_DECREF(due);
    if (d == -1 && PyErr_Occurred())
        return -1;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec >= d;
}

/* rec.method(arg) (arg NULL: rec.method()) where the journal's calls are
 * due (journal_due): the steady path's rec._flush(), the lean fresh
 * path's rec._fq_due(a). 0, or -1 with an error. */
static int
call_if_due(PyObject *hot, PyObject *rec, PyObject *method, PyObject *arg)
{
    int due = journal_due(hot);
    if (due <= 0)
        return due;
    PyObject *res = arg == NULL ? PyObject_CallMethodNoArgs(rec, method) : PyObject_CallMethodOneArg(rec, method, arg);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* The lean fresh queue at its bound: rec._fq_bound(a), which writes it
 * (in a CGT_CUT == 5 build dropped instead: cut_drop). 0, or -1 with an
 * error. */
static int
fq_at_bound(Runner *r, PyObject *a)
{
#if CGT_CUT == 5
    return cut_drop(r->fq, r->fresh_ctx);
#else
    PyObject *res = PyObject_CallMethodOneArg(r->rec, s_fq_bound, a);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
#endif
}

/* *t, the compact queue q standing for its pending call, replaced by that
 * call's _Queued (cq_take_pending), for the Python that takes it. 0, -1. */
static int
pending_taken(Compact *q, PyObject **t)
{
    PyObject *got = cq_take_pending(q);
    if (got == NULL)
        return -1;
    Py_SETREF(*t, got);
    return 0;
}

/* freshq's fresh_run in the Runner (its Python, the reference, is what the
 * Python _run calls): the lean fresh call without a Python
 * frame of its own, the tree's frame one up from the _run wrapper's. The
 * same steps in the same order; the uncommon ends are the recorder's
 * methods fresh_run calls too (_fq_call_raised, _fq_bound, _fq_due, _fq_other).
 * Returns the tree's output, or declined (a new reference) having changed
 * nothing. */
static PyObject *
runner_fresh(Runner *r, PyObject *a, PyObject *mgr, PyObject *new_inputs, PyObject *function_id)
{
#if CGT_CUT == 2
    return call3(r->orig_run, mgr, new_inputs, function_id);
#endif
    /* (the compact queue: not in a cut build, which measures the queue as
     * the _Queued objects made it) */
    Compact *q = CGT_CUT == 0 && Py_IS_TYPE(r->compact, &CompactType) ? (Compact *)r->compact : NULL;
    PyObject *t = fresh_queue_impl(r->fresh_ctx, a, mgr, new_inputs, 1, q);
    if (t == NULL || t == r->declined)
        return t;
    if (t == Py_None) {
        Py_DECREF(t);
        return call3(r->orig_run, mgr, new_inputs, function_id);
    }
    PyObject *hot = r->hot, *out = NULL, *node = NULL, *other = NULL, *x = NULL;
    int clean = 0; /* the thread-local's depth and node as this call found them */
    /* a = hot.fql (armed again past a 64th step: fresh_queue);
     * hot.steady = True */
    if ((a = SGET(hot, fql)) == NULL || SSET(hot, steady, Py_True) < 0)
        goto done;
    PART_CLOCK(ptree);
    out = call3(r->orig_run, mgr, new_inputs, function_id);
    PART(fq_tree, ptree);
    if (out == NULL) {
        /* except BaseException as err: rec._fq_call_raised(t, mgr, err); raise */
        PyObject *type, *value, *tb;
        fetch_exception(&type, &value, &tb);
        if (t == (PyObject *)q && pending_taken(q, &t) < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            goto done;
        }
        PyObject *args[4] = {r->rec, t, mgr, value ? value : Py_None};
        PyObject *res = PyObject_VectorcallMethod(s_fq_call_raised, args, 4, NULL);
        if (res == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        } else {
            Py_DECREF(res);
            PyErr_Restore(type, value, tb);
        }
        goto done;
    }
    /* hot.steady = False; node = hot.node; hot.node = None;
     * other = hot.other; hot.other = False */
    PART_CLOCK(ppost);
    if (SSET(hot, steady, Py_False) < 0 || (node = SGET(hot, node)) == NULL || SSET(hot, node, Py_None) < 0
        || (other = SGET(hot, other)) == NULL || SSET(hot, other, Py_False) < 0) {
        Py_CLEAR(out);
        goto done;
    }
    /* try: ... finally: tls.depth = 0; tls.node = None */
    int t_ = STRUE(hot, off);
    if (t_ < 0)
        goto finally_error;
#if CGT_CUT == 3
    if (t == Py_Ellipsis) { /* (the floor: no check after the call) */
        clean = other == Py_False;
        goto finally;
    }
#endif
    if (!t_) {
        PyObject *fargs[6] = {a, node, other, out, mgr, r->dead_objs};
        PART(fq_post, ppost);
        PART_CLOCK(pa);
        x = fresh_after(NULL, fargs, 6);
        PART(fresh_after, pa);
        ppost = pa;
        int ok = x == NULL ? -1 : PyObject_IsTrue(x);
        if (ok > 0) {
            /* node = None; fq.append(t); the queue's bound */
            Py_CLEAR(node);
            /* (the finally's tls.depth = 0; tls.node = None finds them so
             * where the tree did only the queue's replay (not other): this
             * call began at depth 0, where node is None, and only the
             * general path's noting (_general_noting, which sets other) or
             * a call of _fq_other moves them; two writes to the
             * thread-local's dict, each of them a module lookup, skipped) */
            clean = other == Py_False;
#if CGT_CUT == 4
            if (t == Py_Ellipsis) /* (nothing queued) */
                goto finally;
#endif
            Py_ssize_t n, u;
            PyObject *unw = NULL;
            if (t == (PyObject *)q) {
                /* (the list holds the Compact for its entries) */
                if (cq_commit(q) < 0)
                    goto after_failed;
                n = PyList_GET_SIZE(r->fq) - 1 + compact_len(q);
            } else if (PyList_Append(r->fq, t) < 0 || (n = PyObject_Length(r->fq)) < 0)
                goto after_failed;
            if ((unw = SGET(r->hot, unwritten)) == NULL
                || ((u = PyLong_AsSsize_t(unw)) == -1 && PyErr_Occurred())) {
                Py_XDECREF(unw);
                goto after_failed;
            }
            Py_DECREF(unw);
            PyObject *bound = r->fq_bound;
            Py_ssize_t b = PyLong_AsSsize_t(bound);
            if (b == -1 && PyErr_Occurred())
                goto after_failed;
            if (n + u > b) {
                PART(fq_post, ppost);
                int rc = fq_at_bound(r, a);
                PART(fq_bound, ppost);
                if (rc < 0)
                    goto finally_error;
            } else if (CGT_CUT != 5 && call_if_due(hot, r->rec, s_fq_due, a) < 0) /* (Recorder.JOURNAL_MS) */
                goto after_failed;
        } else if (ok == 0) {
#if CGT_CUT == 4
            if (t == Py_Ellipsis) /* (a measure: the call is lost) */
                goto finally;
#endif
            if (t == (PyObject *)q && pending_taken(q, &t) < 0)
                goto finally_error;
            PyObject *args[7] = {r->rec, t, a, mgr, out, node, other};
            PyObject *res = PyObject_VectorcallMethod(s_fq_other, args, 7, NULL);
            if (res == NULL)
                goto finally_error;
            Py_DECREF(res);
        } else
            goto after_failed;
    }
    goto finally;
after_failed:
    /* except Exception as err: rec._fail("after a call", err); rec._flush() */
    if (recorder_failed(r->rec, s_after_call) < 0)
        goto finally_error;
    {
        PyObject *res = PyObject_CallMethodNoArgs(r->rec, s_flush);
        if (res == NULL)
            goto finally_error;
        Py_DECREF(res);
    }
finally:
    if (!clean && tls_reset(r->tls) < 0)
        Py_CLEAR(out);
    PART(fq_post, ppost);
done:
    /* (a call still pending: the recording stopped or failed meanwhile) */
    if (t == (PyObject *)q)
        cq_drop_pending(q);
    Py_XDECREF(x);
    Py_XDECREF(a);
    Py_XDECREF(node);
    Py_XDECREF(other);
    Py_DECREF(t);
    return out;
finally_error: {
    /* (the finally's own error replaces the one raised, as Python's) */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (tls_reset(r->tls) < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    } else
        PyErr_Restore(type, value, tb);
    Py_CLEAR(out);
    goto done;
}
}

/* The branch of an unarmed call (the lock held): see hooks._run. */
static PyObject *
runner_unarmed(Runner *r, PyObject *mgr, PyObject *new_inputs, PyObject *function_id, int nested)
{
    /* (r->tls is rec.tls, set once with the recorder; its depth read only
     * where the lock was this thread's before: runner_body) */
    int t = nested ? attr_true(r->tls, s_depth) : 0;
    if (t < 0)
        return NULL;
    if (t)
        return call3(r->orig_run, mgr, new_inputs, function_id);
    PyObject *fl = SGET(r->hot, fql);
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
            t = STRUE(r->hot, off);
            if (t < 0) {
                Py_DECREF(fl);
                return NULL;
            }
            t = !t;
        }
        if (t) {
            PyObject *out = runner_fresh(r, fl, mgr, new_inputs, function_id);
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
            t = STRUE(r->hot, off);
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
    PART_CLOCK(pt);
    if ((c = PyObject_GetAttr(r->box, s_mark_step_counter)) == NULL
        || (mc = SGET(r->hot, mark_counter)) == NULL || (left = SGET(r->hot, left)) == NULL)
        goto error;
    {
        PyObject *args[11] = {lean, function_id, mgr, new_inputs, c, mc, left, probed ? Py_True : Py_False,
                              r->dead_objs, r->ptrs_equal, r->data_ptr};
        x = steady_ok(NULL, args, 11);
    }
    if (x != NULL) {
        ok = x == Py_True;
        Py_CLEAR(x);
        if (ok && PyTuple_GET_ITEM(lean, L_POLLED) == Py_None)
            ok = truth(PyObject_CallNoArgs(r->watch_alive));
    } else
        ok = -1;
    if (ok < 0) {
        if (recorder_failed(r->rec, s_before_call) < 0)
            goto error;
        ok = 0;
    }
    PART(steady_checks, pt);
    plan = Py_NewRef(PyTuple_GET_ITEM(lean, L_PLAN));
    if (ok) {
        PyObject *code = SGET(plan, src_code);
        if (code == NULL)
            goto error;
        if (code != Py_None) {
            /* (plan.src_d frames past the tree's: one up from _run's frame,
             * three when _steady armed this call) */
            PyObject *d = SGET(plan, src_d);
            Py_ssize_t depth = d == NULL ? -1 : PyLong_AsSsize_t(d);
            Py_XDECREF(d);
            if (!(depth == -1 && PyErr_Occurred()))
                src = frame_src_impl(depth + (probed ? 3 : 1), code, plan);
            if (src == NULL) {
                if (recorder_failed(r->rec, s_before_call) < 0) {
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
    PART(steady_src, pt);
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
    if ((x = PyNumber_Subtract(left, one)) == NULL || SSET(r->hot, left, x) < 0
        || SSET(r->hot, mark_counter, c) < 0 || (inv = PyObject_GetAttr(r->gen, s_generation)) == NULL
        || (steps = PyNumber_Subtract(mc, c)) == NULL || SSET(r->hot, steady, Py_True) < 0)
        goto error;
    Py_CLEAR(x);
    PART(steady_before, pt);
    PART_CLOCK(ptree);
    out = call3(r->orig_run, mgr, new_inputs, function_id);
    PART(steady_tree, ptree);
    PART_CLOCK(pa);
    if (out == NULL) {
        /* except BaseException as err: rec._steady_raised(...); raise */
        PyObject *type, *value, *tb;
        fetch_exception(&type, &value, &tb);
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
    if (SSET(r->hot, steady, Py_False) < 0 || (node = SGET(r->hot, node)) == NULL
        || SSET(r->hot, node, Py_None) < 0) {
        Py_XDECREF(node);
        Py_CLEAR(out);
        goto error;
    }
    PyObject *other = SGET(r->hot, other);
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
            /* (the journal's calls waited long enough: Recorder.JOURNAL_MS;
             * written, disarmed) */
            if (res != NULL && call_if_due(r->hot, r->rec, s_flush, NULL) < 0)
                Py_CLEAR(res);
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
        if (recorder_failed(r->rec, s_after_call) < 0) {
            Py_CLEAR(out);
            goto error;
        }
    }
    Py_CLEAR(x);
    PART(steady_after, pa);
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
runner_body(Runner *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((nargs != 3 && nargs != 4) || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "Runner(mgr, new_inputs, function_id, probed=False)");
        return NULL;
    }
    PyObject *mgr = args[0], *new_inputs = args[1], *function_id = args[2];
#if CGT_CUT == 1
    return call3(r->orig_run, mgr, new_inputs, function_id);
#endif
    int probed = 0;
    if (nargs == 4 && (probed = PyObject_IsTrue(args[3])) < 0)
        return NULL;
    /* A call re-entering the tree's _run inside a steady call: passed
     * through in this thread; another thread's waits in _steady. */
    int t = STRUE(r->hot, steady);
    if (t < 0)
        return NULL;
    /* (The recorder's own RLock is asked in place; another lock, as the
     * Python _run asks it.) */
    RLock *lock = Py_IS_TYPE(r->lock, &RLockType) ? (RLock *)r->lock : NULL;
    if (t) {
        if ((t = lock ? rlock_owned(lock) : truth(PyObject_CallNoArgs(r->owned))) < 0)
            return NULL;
        return call3(t ? r->orig_run : r->steady, mgr, new_inputs, function_id);
    }
    PART_CLOCK(pt);
    if ((t = lock ? rlock_take(lock, 0) : truth(PyObject_CallOneArg(r->acquire, Py_False))) < 0)
        return NULL;
    if (!t)
        return call3(r->steady, mgr, new_inputs, function_id);
    PART(run_lock, pt);
    /* (first: this thread held the lock before this call, or did not:
     * then it is in no call of the recorder's, and tls.depth is 0, as
     * only a call holding the lock sets it, and sets it back before
     * letting go) */
    int nested = lock == NULL || lock->count > 1;
    PyObject *out = NULL, *lean = NULL, *lfid = SGET(r->hot, lfid);
    if (lfid != NULL) {
        if (lfid == function_id)
            lean = SGET(r->hot, lean);
        else if (PyDict_CheckExact(r->armed) && PyDict_GET_SIZE(r->armed) == 0)
            lean = Py_NewRef(Py_None); /* (armed.get's answer, no key made) */
        else {
            PyObject *key = PyLong_FromVoidPtr(function_id);
            if (key != NULL) {
                lean = dict_get(r->armed, key, NULL);
                Py_DECREF(key);
            }
        }
        Py_DECREF(lfid);
    }
    PART(run_lookup, pt);
    if (lean != NULL) {
        if (lean == Py_None)
            out = runner_unarmed(r, mgr, new_inputs, function_id, nested);
        else if (check_tuple(lean, L_LEN, "the lean tuple") == 0)
            out = runner_armed(r, lean, mgr, new_inputs, function_id, probed);
        Py_DECREF(lean);
    }
    /* finally: release() (its own error replaces the call's, as Python's) */
    PyObject *type, *value, *tb;
    PART_CLOCK(pr);
    PyErr_Fetch(&type, &value, &tb);
    PyObject *res = lock ? (rlock_give(lock) < 0 ? NULL : Py_NewRef(Py_None)) : PyObject_CallNoArgs(r->release);
    if (res == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        Py_XDECREF(out);
        return NULL;
    }
    Py_DECREF(res);
    PyErr_Restore(type, value, tb);
    PART(run_release, pr);
    return out;
}

/* The Runner's call: its body, timed whole in a CGT_PARTS build (run_all;
 * the outermost call only: 2.11's _run calls itself inside a root's
 * replay, and that call passes through the Runner again). */
#ifdef CGT_PARTS
static int runner_depth;
#endif
static PyObject *
runner_call(Runner *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
#ifdef CGT_PARTS
    int outer = runner_depth++ == 0;
    PART_CLOCK(pall);
    PyObject *out = runner_body(r, args, nargsf, kwnames);
    if (outer)
        PART(run_all, pall);
    runner_depth--;
    return out;
#else
    return runner_body(r, args, nargsf, kwnames);
#endif
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

/* slot_get(o, name) and slot_set(o, name, v): sget and sset, for the
 * tests (tests/test_fastpath.py), through a Slot of their own (emptied
 * when the name changes). */
static Slot sl_test;
static PyObject *sl_test_name;

static int
test_slot(PyObject *name)
{
    if (!PyUnicode_CheckExact(name)) {
        PyErr_SetString(PyExc_TypeError, "slot_get/slot_set: the name is a str");
        return -1;
    }
    if (sl_test_name == NULL || PyUnicode_Compare(sl_test_name, name) != 0) {
        Py_XSETREF(sl_test_name, Py_NewRef(name));
        memset(&sl_test, 0, sizeof sl_test);
    }
    return 0;
}

static PyObject *
slot_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "slot_get");
    return test_slot(args[1]) < 0 ? NULL : sget(args[0], &sl_test, sl_test_name);
}

static PyObject *
slot_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "slot_set");
    if (test_slot(args[1]) < 0 || sset(args[0], &sl_test, sl_test_name, args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* A METH_FASTCALL function of this module, by its C name. */
#define FASTCALL(f, doc) {#f, (PyCFunction)(void (*)(void))f, METH_FASTCALL, doc}

#ifdef CGT_PARTS
/* The functions the recorder's Python calls between the lean parts,
 * each timed whole as a part. */
#define TIMED(f, p)                                                                                   \
    static PyObject *f##_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs)               \
    {                                                                                                 \
        PART_CLOCK(t0);                                                                               \
        PyObject *r = f(self, args, nargs);                                                           \
        PART(p, t0);                                                                                  \
        return r;                                                                                     \
    }
TIMED(fresh_after, fresh_after)
TIMED(fq_run, fq_write)
TIMED(fq_tail, fq_write)
#define FASTCALL_TIMED(f, doc) {#f, (PyCFunction)(void (*)(void))f##_timed, METH_FASTCALL, doc}

/* parts(): [(name, ns, count)] of each part since the last parts(), zeroed. */
static PyObject *
parts(PyObject *self, PyObject *unused)
{
    PyObject *out = PyList_New(P_COUNT);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < P_COUNT; i++) {
        PyObject *row = Py_BuildValue("(sKK)", part_names[i], part_ns[i], part_n[i]);
        if (row == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, row);
        part_ns[i] = part_n[i] = 0;
    }
    return out;
}
#else
#define FASTCALL_TIMED(f, doc) FASTCALL(f, doc)
#endif

static PyMethodDef methods[] = {
    FASTCALL(used_contains, "name in used as the writer asks it (tests)."),
    FASTCALL(slot_get, "getattr(o, name) as SGET reads it (tests)."),
    FASTCALL(slot_set, "setattr(o, name, v) as SSET sets it (tests)."),
    FASTCALL(steady_ok, "fastpath.steady_ok, in C."),
    FASTCALL(steady_after, "fastpath.steady_after, in C."),
    FASTCALL(frame_src, "fastpath.frame_src, in C."),
    FASTCALL(probes_same, "fastpath.probes_same, in C."),
    FASTCALL(kept_same, "fastpath.kept_same, in C."),
    FASTCALL(used_contains_fresh, "The writer's test of a name it makes of a base (tests)."),
    FASTCALL(fresh_src, "fastpath.fresh_src, in C."),
    FASTCALL(fresh_input, "fastpath.fresh_input, in C."),
    FASTCALL(use_cpp, "use_cpp(fns, tensor_type[, new_input]): the C++ module's FNS for used_twice and fresh_input."),
    {"polled_alive", polled_alive, METH_O, "fastpath.polled_alive, in C."},
    {"watch_dead", watch_dead, METH_O, "fastpath.watch_dead, in C."},
    FASTCALL(read_run, "the read wrapper's body (hooks._install_reads), in C."),
    FASTCALL(bind_all, "names.bind_all, in C."),
    FASTCALL(forget_all, "names.forget_all, in C."),
    FASTCALL(fresh_deaths, "fastpath.fresh_deaths, in C."),
    FASTCALL(fresh_queue, "fastpath.fresh_queue, in C."),
    FASTCALL(replay_run, "fastpath.replay_run, in C."),
    FASTCALL_TIMED(fq_tail, "fastpath.fq_tail, in C."),
    FASTCALL_TIMED(fq_run, "fastpath.fq_run, in C."),
    FASTCALL_TIMED(fresh_after, "fastpath.fresh_after, in C."),
#ifdef CGT_PARTS
    {"parts", parts, METH_NOARGS, "[(part, ns, count)] since the last parts(), zeroed (CGT_PARTS builds)."},
#endif
    {NULL, NULL, 0, NULL},
};

/* ---- StorageRef: a storage's weak reference without Python frames ----
 *
 * torch's StorageWeakRef is a Python class: its __init__, __del__ and
 * expired() each run Python frames (and TypedStorage's classmethods
 * beneath), several microseconds a lean fresh call on a GPU host whose
 * caches the program's own call emptied (tools/gpu/torch-primitives.py).
 * StorageRefs(free_weak_ref, expired)(storage) takes the same weak
 * reference (storage._weak_ref()) and gives it back on dealloc through the
 * C functions beneath (UntypedStorage._free_weak_ref, _expired): the
 * same reference counts, held as long, as the Python class holds them. */

/* No keyword arguments in kwds (a tp_new's or tp_call's): 1, else 0 with
 * what's TypeError set. */
static int
no_keywords(PyObject *kwds, const char *what)
{
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_Format(PyExc_TypeError, "%s takes no keyword arguments", what);
        return 0;
    }
    return 1;
}

typedef struct {
    PyObject_HEAD PyObject *free_fn, *expired_fn, *make_fn; /* make_fn: NULL, or cpp.storage_weak_ref */
    const CppFns *fns; /* or, given the FNS capsule as make: the three in C (make_fn NULL) */
} StorageRefs;

struct StorageRef {
    PyObject_HEAD PyObject *cdata; /* the weak reference's handle (an int); NULL with fns */
    StorageRefs *maker;
    void *h; /* the handle, made by the maker's fns */
};

static PyObject *s_weak_ref;

/* Whether the storage died: 1, 0, -1. */
static int
storage_ref_dead(StorageRef *self)
{
    if (self->h != NULL)
        return self->maker->fns->weak_expired(self->h);
    return truth(PyObject_CallOneArg(self->maker->expired_fn, self->cdata));
}

static PyObject *
storage_ref_expired(StorageRef *self, PyObject *Py_UNUSED(unused))
{
    int t = storage_ref_dead(self);
    return t < 0 ? NULL : PyBool_FromLong(t);
}

static void
storage_ref_dealloc(StorageRef *self)
{
    if (self->h != NULL)
        self->maker->fns->weak_free(self->h); /* (no Python: nothing raised to keep) */
    else if (self->cdata != NULL && self->maker != NULL) {
        /* (as a __del__ runs: whatever was being raised stays raised) */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *r = PyObject_CallOneArg(self->maker->free_fn, self->cdata);
        if (r == NULL)
            PyErr_WriteUnraisable(self->maker->free_fn); /* (not self: it is being freed) */
        Py_XDECREF(r);
        PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(self->cdata);
    Py_XDECREF((PyObject *)self->maker);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
storage_ref_get_cdata(StorageRef *self, void *Py_UNUSED(closure))
{
    return self->h != NULL ? PyLong_FromVoidPtr(self->h) : Py_NewRef(self->cdata);
}

static PyMethodDef storage_ref_methods[] = {
    {"expired", (PyCFunction)storage_ref_expired, METH_NOARGS, "Whether the storage died."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef storage_ref_getset[] = {
    {"cdata", (getter)storage_ref_get_cdata, NULL, "the weak reference's handle", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StorageRefType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.StorageRef",
    .tp_basicsize = sizeof(StorageRef),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A storage's weak reference (StorageRefs makes them): expired(), cdata.",
    .tp_dealloc = (destructor)storage_ref_dealloc,
    .tp_methods = storage_ref_methods,
    .tp_getset = storage_ref_getset,
};

static PyObject *
storage_refs_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *free_fn, *expired_fn, *make_fn = Py_None;
    if (!no_keywords(kwds, "StorageRefs")
        || !PyArg_ParseTuple(args, "OO|O:StorageRefs", &free_fn, &expired_fn, &make_fn))
        return NULL;
    const CppFns *fns = NULL;
    if (PyCapsule_CheckExact(make_fn) && (fns = cpp_fns_of(make_fn)) == NULL)
        return NULL;
    if (!PyCallable_Check(free_fn) || !PyCallable_Check(expired_fn)
        || (make_fn != Py_None && fns == NULL && !PyCallable_Check(make_fn))) {
        PyErr_SetString(PyExc_TypeError, "StorageRefs(free_weak_ref, expired[, make]): callables (make: or FNS)");
        return NULL;
    }
    StorageRefs *self = (StorageRefs *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->free_fn = Py_NewRef(free_fn);
    self->expired_fn = Py_NewRef(expired_fn);
    self->make_fn = make_fn == Py_None || fns != NULL ? NULL : Py_NewRef(make_fn);
    self->fns = fns;
    return (PyObject *)self;
}

static void
storage_refs_dealloc(StorageRefs *self)
{
    Py_XDECREF(self->free_fn);
    Py_XDECREF(self->expired_fn);
    Py_XDECREF(self->make_fn);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The StorageRef of stor: a call of self, without its argument parsed
 * (the lean fresh path makes one at every call). */
static PyObject *
storage_ref_of(PyObject *o, PyObject *stor)
{
    StorageRefs *self = (StorageRefs *)o;
    StorageRef *r = PyObject_New(StorageRef, &StorageRefType);
    if (r == NULL)
        return NULL;
    r->maker = NULL;
    r->cdata = NULL;
    r->h = NULL;
    if (self->fns != NULL) {
        /* (the handle cpp.storage_weak_ref(tensor) gives, without an int) */
        if ((r->h = self->fns->weak_make(stor)) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "StorageRefs: a tensor without a storage");
            Py_DECREF(r);
            return NULL;
        }
        r->maker = (StorageRefs *)Py_NewRef((PyObject *)self);
        return (PyObject *)r;
    }
    /* (make(tensor) gives the handle stor._weak_ref() would: cpp.py) */
    r->cdata = self->make_fn != NULL ? PyObject_CallOneArg(self->make_fn, stor) : PyObject_CallMethodNoArgs(stor, s_weak_ref);
    if (r->cdata == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    r->maker = (StorageRefs *)Py_NewRef((PyObject *)self);
    return (PyObject *)r;
}

static PyObject *
storage_refs_call(StorageRefs *self, PyObject *args, PyObject *kwds)
{
    PyObject *stor;
    if (!no_keywords(kwds, "a StorageRefs call") || !PyArg_ParseTuple(args, "O:StorageRefs.__call__", &stor))
        return NULL;
    return storage_ref_of((PyObject *)self, stor);
}

static PyTypeObject StorageRefsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.StorageRefs",
    .tp_basicsize = sizeof(StorageRefs),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "StorageRefs(free_weak_ref, expired[, make])(x): the StorageRef of storage x (x._weak_ref()), or of\n"
              "tensor x's storage (make(x)).",
    .tp_new = storage_refs_new,
    .tp_dealloc = (destructor)storage_refs_dealloc,
    .tp_call = (ternaryfunc)storage_refs_call,
};

/* ---- Died: the session's weak-reference callback without a frame ----
 *
 * Died(dead_objs, clock)(wr) appends (wr, clock() or 0 without a clock) to
 * dead_objs, as Session._died does, with no Python frame: it runs at every
 * death of a tensor the recorder holds a weak reference to (each new
 * input of a loop), wherever torch or the GC drops it. */

typedef struct {
    PyObject_HEAD PyObject *dead_objs, *clock;
    PyObject *owner, *attr; /* or, given: the clock is getattr(owner, attr), read here (NULL: clock() called) */
    vectorcallfunc vectorcall; /* (the weakref module calls it with one argument: no tuple, no parsing) */
} Died;

static PyObject *died_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *
died_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *dead_objs, *clock, *owner = NULL, *attr = NULL;
    if (!no_keywords(kwds, "Died")
        || !PyArg_ParseTuple(args, "O!O|OU:Died", &PyList_Type, &dead_objs, &clock, &owner, &attr))
        return NULL;
    if (owner != NULL && attr == NULL) {
        PyErr_SetString(PyExc_TypeError, "Died(dead_objs, clock, owner, attr): the attribute's name too");
        return NULL;
    }
    Died *self = (Died *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->dead_objs = Py_NewRef(dead_objs);
    self->clock = Py_NewRef(clock);
    self->owner = Py_XNewRef(owner);
    self->attr = Py_XNewRef(attr);
    self->vectorcall = died_vectorcall;
    return (PyObject *)self;
}

static int
died_traverse(Died *self, visitproc visit, void *arg)
{
    Py_VISIT(self->dead_objs);
    Py_VISIT(self->clock);
    Py_VISIT(self->owner);
    Py_VISIT(self->attr);
    return 0;
}

static int
died_clear(Died *self)
{
    Py_CLEAR(self->dead_objs);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->attr);
    return 0;
}

static void
died_dealloc(Died *self)
{
    PyObject_GC_UnTrack(self);
    died_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
died_vectorcall(PyObject *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Died *self = (Died *)o;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Died(...)(wr): one argument");
        return NULL;
    }
    PyObject *wr = args[0];
    if (self->dead_objs == NULL) /* (cleared by the GC) */
        Py_RETURN_NONE;
    /* (the step counter read as the clock reads it, without calling it:
     * the recorder's clock is partial(getattr, MarkStepBox, name), a
     * partial's and a builtin's call at every death of a loop's input) */
    PyObject *when = self->owner != NULL   ? PyObject_GetAttr(self->owner, self->attr)
                     : self->clock == Py_None ? Py_NewRef(zero)
                                              : PyObject_CallNoArgs(self->clock);
    if (when == NULL)
        return NULL;
    PyObject *pair = PyTuple_Pack(2, wr, when);
    Py_DECREF(when);
    if (pair == NULL)
        return NULL;
    int rc = PyList_Append(self->dead_objs, pair);
    Py_DECREF(pair);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyTypeObject DiedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.Died",
    .tp_basicsize = sizeof(Died),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Died(dead_objs, clock[, owner, attr])(wr): dead_objs.append((wr, clock() or 0)), Session._died's\n"
              "(given owner and attr, the clock is getattr(owner, attr), read without calling it).",
    .tp_new = died_new,
    .tp_dealloc = (destructor)died_dealloc,
    .tp_traverse = (traverseproc)died_traverse,
    .tp_clear = (inquiry)died_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Died, vectorcall),
};

/* -- Noter: hooks.execute_node's wrapper in C (Noter(hot, tls,
 * orig_exec, rec, py)): what the tree's execute_node does noted before
 * it runs, without a Python frame at every replay. A method descriptor
 * as a function is (the tree's self.execute_node(node, new_inputs) calls
 * it with the manager first, no bound method made); a call of another
 * shape is the Python wrapper's (py). -- */

enum { N_HOT, N_TLS, N_ORIG_EXEC, N_REC, N_PY, N_FIELDS };

typedef struct {
    PyObject_HEAD PyObject *f[N_FIELDS]; /* (hot, tls, orig_exec, rec, py: Noter's arguments) */
    vectorcallfunc vectorcall;
} Noter;

static PyObject *
noter_call(Noter *n, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 3 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0))
        return PyObject_Vectorcall(n->f[N_PY], args, nargsf, kwnames);
    PyObject *mgr = args[0], *node = args[1], *new_inputs = args[2], *hot = n->f[N_HOT], *tls = n->f[N_TLS];
    /* if hot.steady: the steady call's one replay noted in hot (a second:
     * rec._general_noting(), from here the general path's noting) */
    int t = STRUE(hot, steady);
    if (t < 0)
        return NULL;
    if (t) {
        PyObject *was = SGET(hot, node);
        if (was == NULL)
            return NULL;
        t = was == Py_None;
        Py_DECREF(was);
        if (t) {
            if (SSET(hot, node, node) < 0)
                return NULL;
            return call3(n->f[N_ORIG_EXEC], mgr, node, new_inputs);
        }
        PyObject *res = PyObject_CallMethodNoArgs(n->f[N_REC], s_general_noting);
        if (res == NULL)
            return NULL;
        Py_DECREF(res);
    }
    /* if tls.depth: tls.actions.append("replay"); tls.node = node */
    if ((t = attr_true(tls, s_depth)) < 0)
        return NULL;
    if (t) {
        PyObject *actions = PyObject_GetAttr(tls, s_actions);
        if (actions == NULL)
            return NULL;
        int rc = PyList_CheckExact(actions)
                     ? PyList_Append(actions, s_replay)
                     : (truth(PyObject_CallMethodOneArg(actions, s_append, s_replay)) < 0 ? -1 : 0);
        Py_DECREF(actions);
        if (rc < 0 || PyObject_SetAttr(tls, s_node, node) < 0)
            return NULL;
    }
    return call3(n->f[N_ORIG_EXEC], mgr, node, new_inputs);
}

static PyObject *
noter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (!no_keywords(kwds, "Noter"))
        return NULL;
    if (PyTuple_GET_SIZE(args) != N_FIELDS) {
        PyErr_Format(PyExc_TypeError, "Noter(hot, tls, orig_exec, rec, py): %d arguments", N_FIELDS);
        return NULL;
    }
    Noter *n = (Noter *)type->tp_alloc(type, 0);
    if (n == NULL)
        return NULL;
    for (int i = 0; i < N_FIELDS; i++)
        n->f[i] = Py_NewRef(PyTuple_GET_ITEM(args, i));
    n->vectorcall = (vectorcallfunc)noter_call;
    return (PyObject *)n;
}

static int
noter_traverse(Noter *n, visitproc visit, void *arg)
{
    for (int i = 0; i < N_FIELDS; i++)
        Py_VISIT(n->f[i]);
    return 0;
}

static int
noter_clear(Noter *n)
{
    for (int i = 0; i < N_FIELDS; i++)
        Py_CLEAR(n->f[i]);
    return 0;
}

static void
noter_dealloc(Noter *n)
{
    PyObject_GC_UnTrack(n);
    noter_clear(n);
    Py_TYPE(n)->tp_free((PyObject *)n);
}

/* (n.__get__(mgr): bound to the manager, as a function is) */
static PyObject *
noter_get(PyObject *n, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(n);
    return PyMethod_New(n, obj);
}

static PyTypeObject NoterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_cgtrace_fastpath.Noter",
    .tp_basicsize = sizeof(Noter),
    .tp_vectorcall_offset = offsetof(Noter, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "hooks.execute_node's wrapper in C: Noter(hot, tls, orig_exec, rec, py)(mgr, node, new_inputs).",
    .tp_new = noter_new,
    .tp_dealloc = (destructor)noter_dealloc,
    .tp_traverse = (traverseproc)noter_traverse,
    .tp_clear = (inquiry)noter_clear,
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = noter_get,
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
    INTERN(s_fact, "fact");
    INTERN(s_probe, "probe");
    INTERN(s_tree_ref, "tree_ref");
    INTERN(s_extra_ref_check, "extra_ref_check");
    INTERN(s_check, "check");
    INTERN(s_rule, "rule");
    INTERN(s_wr, "wr");
    INTERN(s_alive, "alive");
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
    INTERN(s_steps, "steps");
    INTERN(s_name, "name");
    INTERN(s_order, "order");
    INTERN(s_devices, "devices");
    INTERN(s_fresh, "_fresh");
    INTERN(s_fmt_inv_src, "\"], \"invocation\": %d, \"src\": %s}");
    INTERN(s_fmt_inv, "\"], \"invocation\": %d}");
    INTERN(s_probes, "probes");
    INTERN(s_probe_vals, "probe_vals");
    INTERN(s_moved, "moved");
    INTERN(s_obj_id, "obj_id");
    INTERN(s_in_memo, "in_memo");
    INTERN(s_storage, "storage");
    INTERN(s_view_key, "view_key");
    INTERN(s_held, "held");
    INTERN(s_getattribute, "__getattribute__");
    INTERN(s_setattr, "__setattr__");
    if ((object_getattribute = PyObject_GetAttr((PyObject *)&PyBaseObject_Type, s_getattribute)) == NULL
        || (object_setattr = PyObject_GetAttr((PyObject *)&PyBaseObject_Type, s_setattr)) == NULL)
        return NULL;
    INTERN(s_tmpl, "tmpl");
    INTERN(s_src, "src");
    INTERN(s_inv, "inv");
    INTERN(s_oid, "oid");
    INTERN(s_ptr, "ptr");
    INTERN(s_cd, "cd");
    INTERN(s_spec, "spec");
    INTERN(s_groups, "groups");
    INTERN(s_data_ptr, "data_ptr");
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
    INTERN(s_depth, "depth");
    INTERN(s_fid_cache, "_fid_cache");
    INTERN(s_fresh_tok, "fresh_tok");
    INTERN(s_fail, "_fail");
    INTERN(s_settle, "_settle");
    INTERN(s_on_read, "_on_read");
    INTERN(s_queue_read, "_queue_read");
    INTERN(s_read_named, "_read_named");
    INTERN(s_is_library_file, "_is_library_file");
    INTERN(s_entries, "entries");
    INTERN(s_fq_reads, "_fq_reads");
    INTERN(s_pending_reads, "_pending_reads");
    INTERN(s_lean_reads, "lean_reads");
    INTERN(s_busy, "busy");
    INTERN(s_recording_a_read, "recording a read");
    INTERN(s_rec_src_of, "_src_of");
    INTERN(s_on_run, "_on_run");
    INTERN(s_steady_raised, "_steady_raised");
    INTERN(s_steady_other, "_steady_other");
    INTERN(s_fresh_call, "_fresh_call");
    INTERN(s_via_run, "_via_run");
    INTERN(s_fq_call_raised, "_fq_call_raised");
    INTERN(s_fq_bound, "_fq_bound");
    INTERN(s_fq_due, "_fq_due");
    INTERN(s_fq_other, "_fq_other");
    INTERN(s_unwritten, "unwritten");
    INTERN(s_flush, "_flush");
    INTERN(s_due, "due");
    INTERN(s_before_call, "before a call");
    INTERN(s_after_call, "after a call");
    if ((zero = PyLong_FromLong(0)) == NULL || (one = PyLong_FromLong(1)) == NULL)
        return NULL;
    INTERN(s_weak_ref, "_weak_ref");
    INTERN(s_general_noting, "_general_noting");
    INTERN(s_actions, "actions");
    INTERN(s_replay, "replay");
    INTERN(s_append, "append");
    /* The module's types (StorageRef is made by StorageRefs only) */
    struct {
        const char *name;
        PyTypeObject *type;
    } types[] = {{NULL, &StorageRefType}, {"Runner", &RunnerType}, {"Compact", &CompactType}, {"StorageRefs", &StorageRefsType},
                 {"KeptSet", &KeptSetType},
                 {"Died", &DiedType}, {"RLock", &RLockType}, {"Noter", &NoterType},
#ifdef CGT_JOURNAL_THREAD
                 {"JournalWriter", &JournalWriterType},
#endif
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyType_Ready(types[i].type) < 0)
            return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (types[i].name == NULL)
            continue;
        Py_INCREF(types[i].type);
        if (PyModule_AddObject(m, types[i].name, (PyObject *)types[i].type) < 0) {
            Py_DECREF(types[i].type);
            Py_DECREF(m);
            return NULL;
        }
    }
#ifdef CGT_FAST_FRAMES
    const long fast_frames = 1;
#else
    const long fast_frames = 0;
#endif
    if (PyModule_AddIntConstant(m, "FAST_FRAMES", fast_frames) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "API", API_VERSION) < 0 || PyModule_AddIntConstant(m, "CUT", CGT_CUT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
