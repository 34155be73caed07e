#!/usr/bin/env python3
"""cpp-reads.py: what a new input's reads would cost through libtorch's
C++ API instead of torch's Python bindings (issue 33 item 5), and what
building such a helper costs on this host.

    python3 tools/gpu/cpp-reads.py [--device cuda] [--evict-mb 8] [--keep DIR]

Builds two small CPython extensions against the installed torch with the
host's g++ (timed): "c10", which includes only c10's headers and is
given a tensor's TensorImpl address (t._cdata), and "full", which
includes torch's python_variable.h and is given the tensor itself. Each
reads what the recorder's lean fresh call reads of a new input (sizes,
strides, offset, dtype, device, layout, storage, its size, the data
pointer), checks them against torch's own Python reads on a few layouts,
and is timed warm and cold beside those Python reads, as
torch-primitives.py times them. Prints a markdown table; nothing is
kept unless --keep names a folder for the sources and builds.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#ifdef CGT_FULL
#include <torch/csrc/autograd/python_variable.h>
#endif
#include <c10/core/TensorImpl.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>
#include <exception>

static c10::TensorImpl *impl_of(PyObject *o) {
#ifdef CGT_FULL
  if (!THPVariable_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "a tensor expected");
    return nullptr;
  }
  return THPVariable_Unpack(o).unsafeGetTensorImpl();
#else
  void *p = PyLong_AsVoidPtr(o);
  if (p == nullptr && !PyErr_Occurred())
    PyErr_SetString(PyExc_ValueError, "a null TensorImpl");
  return static_cast<c10::TensorImpl *>(p);
#endif
}

static PyObject *ints(c10::IntArrayRef r) {
  PyObject *t = PyTuple_New((Py_ssize_t)r.size());
  if (t == nullptr)
    return nullptr;
  for (size_t i = 0; i < r.size(); i++) {
    PyObject *v = PyLong_FromLongLong(r[i]);
    if (v == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
}

/* (sizes, strides, offset, scalar type, device type, device index,
 * strided, storage impl, storage nbytes, data pointer) */
static PyObject *facts(PyObject *, PyObject *o) {
  try {
    c10::TensorImpl *ti = impl_of(o);
    if (ti == nullptr)
      return nullptr;
    const c10::Storage &st = ti->storage();
    c10::Device d = ti->device();
    return Py_BuildValue("(NNLiiiONnN)", ints(ti->sizes()), ints(ti->strides()),
                         (long long)ti->storage_offset(), (int)ti->dtype().toScalarType(), (int)d.type(),
                         (int)d.index(), ti->layout() == c10::kStrided ? Py_True : Py_False,
                         PyLong_FromVoidPtr(st.unsafeGetStorageImpl()), (Py_ssize_t)st.nbytes(),
                         PyLong_FromVoidPtr(const_cast<void *>(ti->data())));
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

static int same_ints(c10::IntArrayRef r, PyObject *t) {
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != (Py_ssize_t)r.size())
    return 0;
  for (size_t i = 0; i < r.size(); i++) {
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(t, (Py_ssize_t)i));
    if (v == -1 && PyErr_Occurred())
      return -1;
    if (v != r[i])
      return 0;
  }
  return 1;
}

/* match(t, sizes, strides, scalar type, device index, nbytes): (storage
 * impl, data pointer) when t has them all (offset 0, strided), else None. */
static PyObject *match(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (n != 6) {
    PyErr_SetString(PyExc_TypeError, "match: 6 arguments");
    return nullptr;
  }
  try {
    c10::TensorImpl *ti = impl_of(args[0]);
    if (ti == nullptr)
      return nullptr;
    int t;
    if (ti->layout() != c10::kStrided || ti->storage_offset() != 0
        || (int)ti->dtype().toScalarType() != (int)PyLong_AsLong(args[3])
        || (int)ti->device().index() != (int)PyLong_AsLong(args[4]))
      Py_RETURN_NONE;
    if ((t = same_ints(ti->sizes(), args[1])) <= 0 || (t = same_ints(ti->strides(), args[2])) <= 0) {
      if (t < 0)
        return nullptr;
      Py_RETURN_NONE;
    }
    const c10::Storage &st = ti->storage();
    if ((Py_ssize_t)st.nbytes() != PyLong_AsSsize_t(args[5]))
      Py_RETURN_NONE;
    if (PyErr_Occurred())
      return nullptr;
    return Py_BuildValue("(NN)", PyLong_FromVoidPtr(st.unsafeGetStorageImpl()),
                         PyLong_FromVoidPtr(const_cast<void *>(ti->data())));
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

/* ptrs_equal(tensors, ptrs): every tensor's data pointer is its ptr. */
static PyObject *ptrs_equal(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (n != 2 || !PyList_Check(args[0]) || !PyList_Check(args[1])
      || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
    PyErr_SetString(PyExc_TypeError, "ptrs_equal: two lists of one length");
    return nullptr;
  }
  try {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[0]); i++) {
      c10::TensorImpl *ti = impl_of(PyList_GET_ITEM(args[0], i));
      if (ti == nullptr)
        return nullptr;
      void *want = PyLong_AsVoidPtr(PyList_GET_ITEM(args[1], i));
      if (want == nullptr && PyErr_Occurred())
        return nullptr;
      if (ti->data() != want)
        Py_RETURN_FALSE;
    }
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_TRUE;
}

/* weak(storage impl): a weak handle as UntypedStorage._weak_ref makes it
 * (UntypedStorage._expired and _free_weak_ref take it). */
static PyObject *weak(PyObject *, PyObject *o) {
  void *p = PyLong_AsVoidPtr(o);
  if (p == nullptr)
    return PyErr_Occurred() ? nullptr : PyLong_FromLong(0);
  return PyLong_FromVoidPtr(c10::raw::intrusive_ptr::make_weak(static_cast<c10::StorageImpl *>(p)));
}

static PyMethodDef methods[] = {
    {"facts", (PyCFunction)facts, METH_O, nullptr},
    {"match", (PyCFunction)(void (*)(void))match, METH_FASTCALL, nullptr},
    {"ptrs_equal", (PyCFunction)(void (*)(void))ptrs_equal, METH_FASTCALL, nullptr},
    {"weak", (PyCFunction)weak, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, MODNAME, nullptr, -1, methods};

#define INIT2(n) PyInit_##n
#define INIT(n) INIT2(n)
PyMODINIT_FUNC INIT(MODNAME_RAW)(void) { return PyModule_Create(&mod); }
"""


def compiler():
    for c in (os.environ.get("CXX"), shutil.which("g++"), "/opt/gcc/bin/g++", shutil.which("c++")):
        if c and os.path.exists(c):
            return c
    return None


def build(torch, kind, folder):
    """The extension of this kind built in folder: (module, seconds, log)."""
    from torch.utils import cpp_extension
    name = "cgt_reads_" + kind
    src = os.path.join(folder, name + ".cpp")
    with open(src, "w") as f:
        f.write(SOURCE)
    out = os.path.join(folder, name + sysconfig.get_config_var("EXT_SUFFIX"))
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    cmd = [compiler(), "-O2", "-std=c++17", "-shared", "-fPIC", "-w",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI),
           '-DMODNAME="%s"' % name, "-DMODNAME_RAW=" + name]
    if kind == "full":
        cmd.append("-DCGT_FULL")
    cmd += ["-I" + p for p in cpp_extension.include_paths()]
    cmd += ["-I" + sysconfig.get_paths()["include"], src, "-o", out, "-L" + lib, "-lc10",
            "-Wl,-rpath," + lib]
    if kind == "full":
        cmd += ["-ltorch", "-ltorch_cpu", "-ltorch_python"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        return None, secs, (" ".join(cmd) + "\n" + p.stderr)[-4000:]
    import importlib.machinery
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, out,
                                                  loader=importlib.machinery.ExtensionFileLoader(name, out))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m, secs, ""


def python_facts(torch, t):
    st = t.untyped_storage()
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype, t.device.type,
            t.device.index if t.device.index is not None else -1, t.layout is torch.strided, st._cdata,
            st.nbytes(), t.data_ptr())


def checked(torch, m, arg_of, device):
    """Each layout's C++ facts against torch's Python reads: a list of
    mismatches (empty when all agree)."""
    base = torch.arange(4 * 6 * 8, dtype=torch.float32, device=device).reshape(4, 6, 8)
    cases = {
        "contiguous": base,
        "transposed": base.transpose(0, 2),
        "offset view": base[1:, 2:, ::2],
        "half": torch.ones(5, 3, dtype=torch.float16, device=device),
        "int64 scalar": torch.tensor(7, device=device),
        "cpu": torch.ones(2, 3),
    }
    dt_codes = {}
    bad = []
    for name, t in cases.items():
        c = m.facts(arg_of(t))
        p = python_facts(torch, t)
        dt_codes.setdefault(p[3], c[3])
        got = (c[0], c[1], c[2], dt_codes[p[3]] == c[3], c[5] if c[5] >= 0 else -1, c[6], c[7], c[8], c[9])
        want = (p[0], p[1], p[2], True, p[5], p[6], p[7], p[8], p[9])
        if got != want:
            bad.append("%s: c++ %r, python %r" % (name, got, want))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--cold-iters", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--evict-mb", type=int, default=8)
    ap.add_argument("--keep", help="a folder to keep the sources and builds in")
    a = ap.parse_args()
    import torch
    if compiler() is None:
        print("no C++ compiler on this host: nothing to build")
        return 1
    folder = a.keep or tempfile.mkdtemp(prefix="cgt-reads-")
    os.makedirs(folder, exist_ok=True)
    print("torch %s, Python %s, %s; device %s" % (torch.__version__, sys.version.split()[0], compiler(), a.device))
    mods = {}
    for kind in ("c10", "full"):
        m, secs, log = build(torch, kind, folder)
        print("- build %s: %.1f s%s" % (kind, secs, "" if m else ", FAILED:\n```\n%s\n```" % log))
        if m:
            mods[kind] = m
    args_of = {"c10": lambda t: t._cdata, "full": lambda t: t}
    for kind, m in mods.items():
        bad = checked(torch, m, args_of[kind], a.device)
        print("- %s facts against torch's Python reads, 6 layouts: %s" % (kind, "all equal" if not bad else "; ".join(bad)))
        if bad:
            return 1

    t = torch.randn(32, 64, device=a.device)
    strided = torch.strided

    def new_input_reads():
        st = t.untyped_storage()
        return (t.__class__, t.layout is strided, t.dtype, t.shape, t.stride(), t.storage_offset(),
                t.get_device(), st._cdata, st.nbytes(), t.data_ptr())

    ops = [("python: a new input's 10 reads", new_input_reads),
           ("python: t._cdata", lambda: t._cdata)]
    dev = t.get_device()
    shape, stride, nbytes = tuple(t.shape), tuple(t.stride()), t.untyped_storage().nbytes()
    inputs = [torch.randn(4, device=a.device) for _ in range(7)]
    ptrs = [x.data_ptr() for x in inputs]
    idx = list(range(7))
    eq = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)
    if eq is not None:
        ops.append(("python: _tensors_data_ptrs_at_indices_equal (7)", lambda: eq(inputs, ptrs, idx)))
    U = torch.UntypedStorage
    s = t.untyped_storage()
    ops.append(("python: s._weak_ref() + _free_weak_ref", lambda: U._free_weak_ref(s._weak_ref())))
    if "c10" in mods:
        m = mods["c10"]
        ops.append(("c10: facts(t._cdata)", lambda: m.facts(t._cdata)))
    if "full" in mods:
        m2 = mods["full"]
        code = m2.facts(t)[3]
        if m2.match(t, shape, stride, code, dev, nbytes) is None:
            print("- full: match() declined its own tensor")
            return 1
        if m2.ptrs_equal(inputs, ptrs) is not True or m2.ptrs_equal(inputs, ptrs[::-1]) is not False:
            print("- full: ptrs_equal wrong")
            return 1
        h = m2.weak(s._cdata)
        if U._expired(h):
            print("- full: weak handle expired at once")
            return 1
        U._free_weak_ref(h)
        ops += [("full: facts(t)", lambda: m2.facts(t)),
                ("full: match(t, ...) (the checks, 2 values back)", lambda: m2.match(t, shape, stride, code, dev, nbytes)),
                ("full: ptrs_equal (7)", lambda: m2.ptrs_equal(inputs, ptrs)),
                ("full: weak(cd) + _free_weak_ref", lambda: U._free_weak_ref(m2.weak(s._cdata)))]
    ops.append(("nothing (the loop's own cost)", lambda: None))

    buf = bytearray(a.evict_mb << 20)
    view = memoryview(buf)[::64]

    def timed(fn, n, cold):
        if not cold:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            return (time.perf_counter_ns() - t0) / n
        ns = 0
        for _ in range(n):
            bytes(view)
            t0 = time.perf_counter_ns()
            fn()
            ns += time.perf_counter_ns() - t0
        return ns / n

    print("\nns an operation, medians of %d rounds (warm: %d in a loop; cold: %d, %d MiB read before each)"
          % (a.rounds, a.iters, a.cold_iters, a.evict_mb))
    print("| operation | warm | cold |")
    print("| --- | --- | --- |")
    for name, fn in ops:
        warm = statistics.median(timed(fn, a.iters, False) for _ in range(a.rounds))
        cold = statistics.median(timed(fn, a.cold_iters, True) for _ in range(a.rounds))
        print("| %s | %.0f | %.0f |" % (name, warm, cold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
