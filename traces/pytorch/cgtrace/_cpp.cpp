// _cpp.cpp: the torch reads the recorder's lean paths make at a call,
// through libtorch's C++ API (cpp.py builds it against the installed
// torch, once, and says why not where it cannot).
//
// Why: a new input's class, layout, dtype, shape, strides, offset,
// device, storage, size and data pointer read through torch's Python
// bindings are ten calls of torch's binding code, each 3.5 to 6 us with
// the caches as a real program's call leaves them (BENCHMARKS.md,
// session 17); read here they are fields of the tensor's TensorImpl and
// StorageImpl. Each function has the contract of the Python reads it
// replaces (cpp.py's reference, tested against torch's own reads on
// the GPU: tools/gpu/cpp-check.py), and reads, never changes, the
// tensors (data() where Python's data_ptr() calls mutable_data(): a
// lazily cloned tensor is not materialized by the recording).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <exception>

namespace {

constexpr int kApi = 3;

// The TensorImpl of t when t is a defined tensor, else nullptr (an error
// set only when asking raised).
c10::TensorImpl *impl_of(PyObject *t) {
  if (!THPVariable_Check(t))
    return nullptr;
  const at::Tensor &x = THPVariable_Unpack(t);
  return x.defined() ? x.unsafeGetTensorImpl() : nullptr;
}

// The TensorImpl of t, or nullptr with TypeError (or what asking
// raised) set: for the functions whose argument must be a tensor.
c10::TensorImpl *tensor_impl(PyObject *t, const char *what) {
  c10::TensorImpl *ti = impl_of(t);
  if (ti == nullptr && !PyErr_Occurred())
    PyErr_Format(PyExc_TypeError, "%s: a tensor expected", what);
  return ti;
}

// Python's t.get_device(): the index, -1 on the CPU.
long device_of(c10::TensorImpl *ti) {
  c10::Device d = ti->device();
  return d.is_cpu() ? -1 : (long)d.index();
}

// r equals the tuple of ints t (a torch.Size or a tuple): 1, 0, -1.
int same_ints(c10::IntArrayRef r, PyObject *t) {
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != (Py_ssize_t)r.size())
    return 0;
  for (size_t i = 0; i < r.size(); i++) {
    PyObject *o = PyTuple_GET_ITEM(t, (Py_ssize_t)i);
    if (!PyLong_CheckExact(o))
      return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
      return -1;
    if (overflow || v != (long long)r[i])
      return 0;
  }
  return 1;
}

PyObject *ints(c10::IntArrayRef r) {
  PyObject *t = PyTuple_New((Py_ssize_t)r.size());
  if (t == nullptr)
    return nullptr;
  for (size_t i = 0; i < r.size(); i++) {
    PyObject *v = PyLong_FromLongLong((long long)r[i]);
    if (v == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
}

// A C++ exception as the RuntimeError torch's binding raises for it.
PyObject *raised(const std::exception &e) {
  if (!PyErr_Occurred())
    PyErr_SetString(PyExc_RuntimeError, e.what());
  return nullptr;
}

// new_input_c(v, dtype, shape, stride, device, nbytes, &storage, &data):
// 1 with *storage (v.untyped_storage()._cdata) and *data (v.data_ptr())
// set when v is a strided tensor of that dtype, shape, strides, offset
// 0, device (get_device()) over a storage of nbytes bytes; 0 when not;
// -1 with an error set. _fastpath.c calls it through FNS at every lean
// fresh call (no argument tuple, no answer tuple, no ints made here).
int new_input_c(PyObject *v, PyObject *dtype, PyObject *shape, PyObject *stride, PyObject *device,
                PyObject *nbytes, void **storage, void **data) {
  try {
    c10::TensorImpl *ti = impl_of(v);
    if (ti == nullptr)
      return PyErr_Occurred() ? -1 : 0;
    if (!THPDtype_Check(dtype) || ti->layout() != c10::kStrided
        || ti->dtype().toScalarType() != reinterpret_cast<THPDtype *>(dtype)->scalar_type
        || ti->has_symbolic_sizes_strides() || ti->storage_offset() != 0 || !PyLong_Check(device)
        || !PyLong_Check(nbytes))
      return 0;
    int t;
    if ((t = same_ints(ti->sizes(), shape)) <= 0 || (t = same_ints(ti->strides(), stride)) <= 0)
      return t < 0 ? -1 : 0;
    long dev = PyLong_AsLong(device);
    if (dev == -1 && PyErr_Occurred())
      return -1;
    if (device_of(ti) != dev)
      return 0;
    const c10::Storage &st = ti->storage();
    Py_ssize_t want = PyLong_AsSsize_t(nbytes);
    if (want == -1 && PyErr_Occurred())
      return -1;
    if ((Py_ssize_t)st.nbytes() != want)
      return 0;
    *storage = st.unsafeGetStorageImpl();
    *data = const_cast<void *>(ti->data());
    return 1;
  } catch (const std::exception &e) {
    raised(e);
    return -1;
  }
}

// new_input(v, dtype, shape, stride, device, nbytes): new_input_c's
// (storage, data pointer) as ints when v is taken; else None.
PyObject *new_input(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (n != 6) {
    PyErr_SetString(PyExc_TypeError, "new_input(v, dtype, shape, stride, device, nbytes)");
    return nullptr;
  }
  void *storage = nullptr, *data = nullptr;
  int t = new_input_c(args[0], args[1], args[2], args[3], args[4], args[5], &storage, &data);
  if (t < 0)
    return nullptr;
  if (t == 0)
    Py_RETURN_NONE;
  return Py_BuildValue("(NN)", PyLong_FromVoidPtr(storage), PyLong_FromVoidPtr(data));
}

// read(ti) of tensor t's TensorImpl, for a function of one tensor
// argument (what: its name): TypeError for another object, a C++
// exception as RuntimeError.
template <typename Read> PyObject *of_tensor(PyObject *t, const char *what, Read read) {
  try {
    c10::TensorImpl *ti = tensor_impl(t, what);
    return ti == nullptr ? nullptr : read(ti);
  } catch (const std::exception &e) {
    return raised(e);
  }
}

// storage_weak_ref(v): a weak reference to v's storage, the handle
// v.untyped_storage()._weak_ref() gives (torch.UntypedStorage._expired
// and _free_weak_ref take it).
PyObject *storage_weak_ref(PyObject *, PyObject *v) {
  return of_tensor(v, "storage_weak_ref", [](c10::TensorImpl *ti) {
    return PyLong_FromVoidPtr(c10::raw::intrusive_ptr::make_weak(ti->storage().unsafeGetStorageImpl()));
  });
}

// data_ptr(t): t.data_ptr().
PyObject *data_ptr(PyObject *, PyObject *t) {
  return of_tensor(t, "data_ptr",
                   [](c10::TensorImpl *ti) { return PyLong_FromVoidPtr(const_cast<void *>(ti->data())); });
}

// ptrs_equal(tensors, ptrs, indices): torch._C's
// _tensors_data_ptrs_at_indices_equal: each tensor at an index of
// indices is at the data pointer ptrs holds at that index (three lists).
PyObject *ptrs_equal(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (n != 3 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "ptrs_equal(tensors, ptrs, indices): three lists");
    return nullptr;
  }
  try {
    PyObject *idx = args[2];
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(idx); k++) {
      Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(idx, k));
      if (i == -1 && PyErr_Occurred())
        return nullptr;
      if (i < 0 || i >= PyList_GET_SIZE(args[0]) || i >= PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_IndexError, "ptrs_equal: an index out of range");
        return nullptr;
      }
      c10::TensorImpl *ti = tensor_impl(PyList_GET_ITEM(args[0], i), "ptrs_equal");
      if (ti == nullptr)
        return nullptr;
      PyObject *want = PyList_GET_ITEM(args[1], i);
      if (!PyLong_Check(want))
        Py_RETURN_FALSE;
      void *p = PyLong_AsVoidPtr(want);
      if (p == nullptr && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_FALSE;
      }
      if (const_cast<void *>(ti->data()) != p)
        Py_RETURN_FALSE;
    }
  } catch (const std::exception &e) {
    return raised(e);
  }
  Py_RETURN_TRUE;
}

// ptrs_are(objs, n, want): each of the n objects a tensor at the data
// pointer want holds at its index: 1; 0 where one is not (or is no
// tensor); -1 with an error. Not a Python function: _fastpath.c's
// KeptSet calls it through the module's PTRS_ARE capsule at every lean
// fresh call, on the kept inputs it already found by identity (no
// argument tuple, no lists of ints to read: ptrs_equal's are each a
// line of its own, cold at a real program's call).
int ptrs_are(PyObject *const *objs, Py_ssize_t n, void *const *want) {
  try {
    for (Py_ssize_t i = 0; i < n; i++) {
      c10::TensorImpl *ti = impl_of(objs[i]);
      if (ti == nullptr)
        return PyErr_Occurred() ? -1 : 0;
      if (const_cast<void *>(ti->data()) != want[i])
        return 0;
    }
    return 1;
  } catch (const std::exception &e) {
    raised(e);
    return -1;
  }
}

// The weak storage handles of storage_weak_ref and a tensor's use
// count, as C functions for _fastpath.c (the module's FNS capsule, a
// CppFns, new_input_c with them): a lean fresh call makes a handle for
// its new input, asks whether the last input's storage died and frees
// its handle, and reads an output's use count, each otherwise a call of
// torch's bindings
// (UntypedStorage._weak_ref, _expired, _free_weak_ref, Tensor._use_count:
// an argument parsed, an int or a bool made, their code's lines cold at
// a real program's call). Each does what the binding's C++ does.

// weak_make(t): storage_weak_ref(t)'s handle, or nullptr with an error
// set.
void *weak_make(PyObject *t) {
  try {
    c10::TensorImpl *ti = tensor_impl(t, "storage_weak_ref");
    return ti == nullptr ? nullptr : c10::raw::intrusive_ptr::make_weak(ti->storage().unsafeGetStorageImpl());
  } catch (const std::exception &e) {
    raised(e);
    return nullptr;
  }
}

// weak_expired(h): UntypedStorage._expired(h), 1 or 0.
int weak_expired(void *h) {
  return c10::raw::weak_intrusive_ptr::use_count(static_cast<c10::StorageImpl *>(h)) == 0;
}

// weak_free(h): UntypedStorage._free_weak_ref(h).
void weak_free(void *h) { c10::raw::weak_intrusive_ptr::decref(static_cast<c10::StorageImpl *>(h)); }

// use_count(t): t._use_count(), or -1 with an error set (t no tensor:
// TypeError).
Py_ssize_t use_count(PyObject *t) {
  try {
    if (!THPVariable_Check(t)) {
      PyErr_SetString(PyExc_TypeError, "use_count: a tensor expected");
      return -1;
    }
    return (Py_ssize_t)THPVariable_Unpack(t).use_count();
  } catch (const std::exception &e) {
    raised(e);
    return -1;
  }
}

// The FNS capsule's struct; _fastpath.c declares the same (its size
// first: a struct of another size is refused there).
struct CppFns {
  size_t size;
  void *(*weak_make)(PyObject *);
  int (*weak_expired)(void *);
  void (*weak_free)(void *);
  Py_ssize_t (*use_count)(PyObject *);
  int (*new_input)(PyObject *, PyObject *, PyObject *, PyObject *, PyObject *, PyObject *, void **, void **);
};

const CppFns fns = {sizeof(CppFns), weak_make, weak_expired, weak_free, use_count, new_input_c};

// weak_expired_py(h), weak_free_py(h), use_count_py(t): the three as
// Python functions, for cpp-check.py and the tests (an int handle).
void *handle_of(PyObject *h) {
  void *p = PyLong_AsVoidPtr(h);
  if (p == nullptr && !PyErr_Occurred())
    PyErr_SetString(PyExc_ValueError, "a null handle");
  return p;
}

PyObject *weak_expired_py(PyObject *, PyObject *h) {
  void *p = handle_of(h);
  return p == nullptr ? nullptr : PyBool_FromLong(weak_expired(p));
}

PyObject *weak_free_py(PyObject *, PyObject *h) {
  void *p = handle_of(h);
  if (p == nullptr)
    return nullptr;
  weak_free(p);
  Py_RETURN_NONE;
}

PyObject *use_count_py(PyObject *, PyObject *t) {
  Py_ssize_t n = use_count(t);
  return n < 0 ? nullptr : PyLong_FromSsize_t(n);
}

// facts(t): what the functions above read of t, for tests and tools:
// (shape, strides, offset, strided, device, storage, nbytes, data pointer).
PyObject *facts(PyObject *, PyObject *t) {
  return of_tensor(t, "facts", [](c10::TensorImpl *ti) {
    const c10::Storage &st = ti->storage();
    return Py_BuildValue("(NNLOlNnN)", ints(ti->sizes()), ints(ti->strides()), (long long)ti->storage_offset(),
                         ti->layout() == c10::kStrided ? Py_True : Py_False, device_of(ti),
                         PyLong_FromVoidPtr(st.unsafeGetStorageImpl()), (Py_ssize_t)st.nbytes(),
                         PyLong_FromVoidPtr(const_cast<void *>(ti->data())));
  });
}

PyMethodDef methods[] = {
    {"new_input", (PyCFunction)(void (*)(void))new_input, METH_FASTCALL, "A new input's reads and checks."},
    {"storage_weak_ref", (PyCFunction)storage_weak_ref, METH_O, "v.untyped_storage()._weak_ref()."},
    {"data_ptr", (PyCFunction)data_ptr, METH_O, "t.data_ptr()."},
    {"ptrs_equal", (PyCFunction)(void (*)(void))ptrs_equal, METH_FASTCALL,
     "torch._C._tensors_data_ptrs_at_indices_equal."},
    {"facts", (PyCFunction)facts, METH_O, "What the others read of a tensor."},
    {"weak_expired", (PyCFunction)weak_expired_py, METH_O, "UntypedStorage._expired(h), as FNS's C function."},
    {"weak_free", (PyCFunction)weak_free_py, METH_O, "UntypedStorage._free_weak_ref(h), as FNS's."},
    {"use_count", (PyCFunction)use_count_py, METH_O, "t._use_count(), as FNS's."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cgtrace_cpp", "The lean paths' torch reads in C++.", -1, methods};

} // namespace

PyMODINIT_FUNC PyInit__cgtrace_cpp(void) {
  PyObject *m = PyModule_Create(&module);
  if (m == nullptr)
    return nullptr;
  // (the capsule's name is _fastpath.c's KeptSet's: PyCapsule_GetPointer
  // refuses another)
  PyObject *cap = PyCapsule_New(reinterpret_cast<void *>(&ptrs_are), "_cgtrace_cpp.ptrs_are", nullptr);
  if (PyModule_AddIntConstant(m, "API", kApi) < 0 || cap == nullptr || PyModule_AddObject(m, "PTRS_ARE", cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(m);
    return nullptr;
  }
  // (and the struct of the weak handles' and the use count's functions:
  // _fastpath.c's StorageRefs and used_twice, by the name "_cgtrace_cpp.fns")
  cap = PyCapsule_New(const_cast<CppFns *>(&fns), "_cgtrace_cpp.fns", nullptr);
  if (cap == nullptr || PyModule_AddObject(m, "FNS", cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
