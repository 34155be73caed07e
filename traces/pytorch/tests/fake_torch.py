"""The recorder's tests' stand-in for the parts of torch it touches (the
tree manager's entry points, storages and their weak references,
mark_step, config modules, Dynamo's frame hook), and "compiled functions"
a program calls through it, so the patching, the naming from the caller's
frame, liveness through storages and the error path run without a GPU.
The real thing runs on the GPU machine (programs/record_all.sh). The
tests are test_recorder*.py; tools/gpu/recorder-overhead.py --fake times
the recorder against it.

Importing it puts the recorder beside these tests on sys.path (unless
CGTRACE_TEST_INSTALLED=1: tests/venv_check.sh tests the installed
package)."""

import collections
import contextlib
import contextvars
import enum
import functools
import json
import os
import queue
import sys
import tempfile
import threading
import types
import unittest
import weakref

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the folder beside these tests.
if os.environ.get("CGTRACE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cgtrace  # noqa: E402


# ---- the stand-in -----------------------------------------------------------

class Storage:
    _live = weakref.WeakValueDictionary()
    _n = [0]

    def __init__(self, nbytes=None):
        Storage._n[0] += 1
        self._cdata = Storage._n[0]
        self._nbytes = nbytes
        self._users = weakref.WeakSet()  # the tensors over it: its use count
        Storage._live[self._cdata] = self

    @staticmethod
    def use_count(cdata):
        """torch._C._storage_Use_Count: the tensors holding the storage."""
        s = Storage._live.get(cdata)
        return len(s._users) if s is not None else 0

    def nbytes(self):
        return self._nbytes

    # A storage's weak references as torch's C functions hand them out
    # (UntypedStorage._weak_ref, _expired, _free_weak_ref): a handle each,
    # counted while held, so a test sees one never given back, or given
    # back twice.
    weak_held = {}

    def _weak_ref(self):
        Storage.weak_held[self._cdata] = Storage.weak_held.get(self._cdata, 0) + 1
        return self._cdata

    @staticmethod
    def _expired(cdata):
        return cdata not in Storage._live

    @staticmethod
    def _new_with_weak_ptr(cdata):
        """The storage of a weak handle, or None once it died."""
        return Storage._live.get(cdata)

    @staticmethod
    def _free_weak_ref(cdata):
        n = Storage.weak_held.get(cdata, 0)
        if n <= 0:
            raise RuntimeError("_free_weak_ref of a handle not held: %r" % (cdata,))
        if n == 1:
            del Storage.weak_held[cdata]
        else:
            Storage.weak_held[cdata] = n - 1


class DType:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return "torch." + self.name


float32, int64, bfloat16, boolean = (DType("float32", 4), DType("int64", 8),
                                     DType("bfloat16", 2), DType("bool", 1))


class Device:
    type, index = "cuda", 0


STRIDED = object()  # torch.strided


class _Layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


SPARSE_COO = _Layout("torch.sparse_coo")


class CPU:
    type, index = "cpu", None


class Tensor:
    def __init__(self, shape, storage=None, values=None, dtype=float32, offset=0, stride=None, base=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._storage = storage or Storage(cgtrace.numel(shape) * dtype.size)
        self._storage._users.add(self)
        self._values = values
        self._offset = offset
        self._stride = tuple(stride) if stride is not None else cgtrace.contiguous_strides(self.shape)
        self._base = base
        self.device = Device()
        self.layout = STRIDED

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def get_device(self):
        return self.device.index if self.device.index is not None else -1

    def untyped_storage(self):
        return self._storage

    # c10's references to the TensorImpl (Tensor._use_count): more than one
    # while C++ holds the tensor too (with one Python reference of its own).
    _c10_uses = 1

    def _use_count(self):
        return self._c10_uses

    def data_ptr(self):
        if self.layout is not STRIDED:  # (torch's C method, called unbound or not)
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        self._check()  # (an overwritten output's data pointer raises, as torch's does)
        return id(self._storage) + self._offset * self.dtype.size

    def element_size(self):
        return self.dtype.size

    def storage_offset(self):
        return self._offset

    def stride(self):
        return self._stride

    def __getitem__(self, idx):
        """t[:, j] of a 2-d tensor (the only slice the tests take)."""
        _, j = idx
        return Tensor([self.shape[0]], storage=self._storage, dtype=self.dtype,
                      offset=self._offset + j * self._stride[1], stride=[self._stride[0]],
                      base=self._base if self._base is not None else self)

    def numel(self):
        return cgtrace.numel(self.shape)

    # Comparison and truth value as torch has them: == is elementwise and
    # returns a bool tensor, and the truth value of a tensor of more (or
    # fewer) than one element raises. So `t in list`, `list.index(t)`, a
    # dict or weakref comparison that reaches ==, and `t or u` raise for
    # the tensors a training step makes, as on the GPU.
    __hash__ = object.__hash__  # torch hashes a tensor by identity

    def _compare(self, other, op):
        mine = list(self._values) if self._values is not None else [0.0] * self.numel()
        if isinstance(other, Tensor):
            theirs = list(other._values) if other._values is not None else [0.0] * other.numel()
            if len(theirs) == 1:
                theirs = theirs * len(mine)
            elif other.shape != self.shape and len(mine) != 1:
                raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d)"
                                   % (len(mine), len(theirs)))
            elif len(mine) == 1:
                mine = mine * len(theirs)
        elif isinstance(other, (int, float, bool)):
            theirs = [other] * len(mine)
        else:
            return NotImplemented
        shape = self.shape if len(mine) == self.numel() else other.shape
        return Tensor(shape, values=[float(op(a, b)) for a, b in zip(mine, theirs)], dtype=boolean)

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._compare(other, lambda a, b: a != b)

    def __bool__(self):
        n = self.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._values[0]) if self._values is not None else False

    def detach(self):
        return self

    def reshape(self, *_):
        return self

    def float(self):
        return self

    def cpu(self):
        self._check()
        return self

    def tolist(self):
        self._check()
        return list(self._values) if self._values is not None else [0.0] * self.numel()

    overwritten = False

    # The message the tree marked this output with (each output's names
    # where it was made, in torch), raised as the error's text.
    _overwritten_msg = None

    def _check(self):
        if self.overwritten or getattr(self._storage, "overwritten", False):
            raise RuntimeError(self._overwritten_msg or "Error: accessing tensor output of CUDAGraphs that has been "
                               "overwritten by a subsequent run.\nStack trace: ...")

    def item(self):
        self._check()
        return self.tolist()[0]

    def __repr__(self):
        return "tensor(%s)" % self.tolist()



def _set_storage_access_error_msg(t, msg):
    """What the tree does to a live output it deallocates (dealloc_current_path_weakrefs)."""
    t.overwritten = True
    t._overwritten_msg = msg


def _set_storage_data_ptr_access_error_msg(cdata, msg):
    """And to a live storage of the path, by the weak handle its
    StorageWeakRefWrapper holds: every tensor over it raises."""
    Storage._live[cdata].overwritten = True


def stack(tensors):
    """torch.stack's part the recorder meets: each tensor's data read, in
    order (an overwritten output raises, as torch's op does)."""
    for t in tensors:
        t.data_ptr()
    return Tensor([len(tensors)] + list(tensors[0].shape) if tensors else [0])


class NoStorage(Tensor):
    """A tensor the format cannot hold, whose data pointer torch refuses
    (a sparse or meta tensor, a subclass without storage)."""

    def __init__(self, shape):
        super().__init__(shape)
        self.layout = SPARSE_COO


class StorageWeakRef:
    def __init__(self, storage):
        self.cdata = storage._cdata

    def expired(self):
        return self.cdata not in Storage._live


class Mode:
    def __init__(self, name):
        self.name = name


class FunctionID:
    """A frozen dataclass with slots in 2.11: no weak reference to it."""
    __slots__ = ("id",)

    def __init__(self, i):
        self.id = i

    def __hash__(self):
        return hash(self.id)

    def __eq__(self, other):
        return isinstance(other, FunctionID) and other.id == self.id


class Wrapped:
    def __init__(self, fid, static=(), mutated=(), placeholders=(), model=None):
        self.id = fid
        if model is not None:  # (the compiled graph's callable: a dynamic graph's sizes share it)
            self.model = model
        self.static_input_idxs = list(static)
        self.mutated_input_idxs = list(mutated)
        self.placeholders = [types.SimpleNamespace(name=p) for p in placeholders]


class StorageWeakRefWrapper:
    """cudagraph_trees.StorageWeakRefWrapper as 2.11 has it: with an
    extra_ref_check (a cached replay output) the tensor is dead once only
    the tree's own cache holds it, whatever its storage says."""

    def __init__(self, t, extra_ref_check=None):
        self.ref = StorageWeakRef(t.untyped_storage())
        self.extra_ref_check = extra_ref_check

    def expired(self):
        if self.extra_ref_check is not None and not self.extra_ref_check():
            return False
        count = sys.modules["torch"]._C._storage_Use_Count(self.ref.cdata)
        return (count - (self.extra_ref_check is not None)) == 0


class Node:
    def __init__(self, wrapped, parent):
        self.wrapped_function = wrapped
        self.parent = parent
        self.children = {}
        self.cached_tensor_outputs = []
        self.outputs_weakrefs = []

    # The cached outputs' check as torch before 2.11 has it (dead at a
    # refcount of 2), not 2.11's (3 while c10 holds the tensor too).
    before_211 = False

    def cache_outputs(self, outs, static=()):
        """What CUDAGraphNode._initialize_cached_tensors does after a
        recording: one tensor object per output over the recorded output's
        storage, handed out by every replay, judged by its refcount; an
        output that is one of the static inputs (static: those objects; a
        training forward returns a weight it saves for the backward) is
        handed out as is at every replay, with no wrapper of the tree's
        (torch's static_output_tensors)."""
        self_ref = weakref.ref(self)

        def check_refcount_before_211(i):
            node = self_ref()
            return node is not None and node.get_output_refcount(i) == 2

        def check_refcount_211(i):
            node = self_ref()
            if node is None:
                return False
            refcount = node.get_output_refcount(i)
            if node.cached_tensor_outputs[i]._use_count() > 1:
                assert refcount >= 3
                return refcount == 3
            assert refcount >= 2
            return refcount == 2

        check_refcount = check_refcount_before_211 if self.before_211 else check_refcount_211

        for i, o in enumerate(outs):
            if o is None:  # (a backward's gradient of an input needing none)
                self.cached_tensor_outputs.append(None)
                self.outputs_weakrefs.append(None)
                continue
            if any(o is x for x in static):
                self.cached_tensor_outputs.append(o)
                self.outputs_weakrefs.append(None)
                continue
            c = Tensor(o.shape, storage=o._storage, dtype=o.dtype)
            self.cached_tensor_outputs.append(c)
            self.outputs_weakrefs.append(StorageWeakRefWrapper(c, functools.partial(check_refcount, i)))

    def get_output_refcount(self, index):
        return sys.getrefcount(self.cached_tensor_outputs[index])


class CUDAGraphTreeManager:
    """Warmup, record, replay, per function, with outputs x+1 of each input;
    a function whose model raises makes _run raise."""

    def __init__(self):
        self.device_index = 0
        self.ids_to_funcs = {}
        self.id_to_mode = {}
        self.id_to_compile_id = {}
        self.debug_checkpointing_counter = 0
        self.roots = {}
        self.current_node = None
        self.calls = {}
        self.fail = set()
        # function id -> model(new_inputs) -> outputs, for functions whose
        # outputs are not x+1 of each input (a training step's forward
        # returns its parameters for autograd to save, a backward returns
        # None for an input needing no gradient).
        self.models = {}
        # As PyTorch does: a replay hands out the node's cached output
        # objects (one per output, the same every replay) instead of new
        # tensors. Off by default: most tests here predate it.
        self.cache_replays = False
        # As 2.11's _run does at a new generation: a replay of a root
        # function while the path has a current node (the last replay) finds
        # no child to replay, ends the path and calls run() again, which
        # replays the root: _run is entered twice (the second inside the
        # first). Tests that want one entry a call turn it off.
        self.recurse_roots = True
        self._again = False

    def add(self, fid, mode="INFERENCE", **kw):
        f = FunctionID(fid)
        self.ids_to_funcs[f] = Wrapped(f, **kw)
        self.id_to_mode[f] = Mode(mode)
        return f

    def run(self, new_inputs, function_id):
        return self._run(new_inputs, function_id)

    def _run(self, new_inputs, function_id):
        if self._again:  # (run() again from the roots, below: the same call)
            self._again = False
            return self.execute_node(self.roots[function_id][0], new_inputs)
        n = self.calls.get(function_id, 0)
        self.calls[function_id] = n + 1
        if function_id.id in self.fail:
            raise RuntimeError(getattr(self, "fail_text", "accessing tensor output of CUDAGraphs that has been "
                                                          "overwritten\nstack..."))
        if n == 0:
            return self.run_eager(new_inputs, function_id)
        if n == 1:
            return self.record_function(new_inputs, function_id)
        if self.recurse_roots and self.current_node is not None:
            self.current_node = None
            self._again = True
            return self.run(new_inputs, function_id)
        return self.execute_node(self.roots[function_id][0], new_inputs)

    def _outs(self, new_inputs, function_id=None):
        model = self.models.get(getattr(function_id, "id", None))
        if model is not None:
            outs = model(list(new_inputs))
        else:
            outs = [Tensor(t.shape) for t in new_inputs if isinstance(t, Tensor)]
        new_inputs.clear()
        return outs

    def run_eager(self, new_inputs, function_id):
        return self._outs(new_inputs, function_id)

    def record_function(self, new_inputs, function_id):
        # (torch.cuda.graph empties the cache as it starts a capture)
        sys.modules["torch"].cuda.empty_cache()
        node = Node(self.ids_to_funcs[function_id], None)
        self.roots.setdefault(function_id, []).append(node)
        self.current_node = node
        static = [new_inputs[i] for i in self.ids_to_funcs[function_id].static_input_idxs if i < len(new_inputs)]
        outs = self._outs(new_inputs, function_id)
        if self.cache_replays:
            node.cache_outputs(outs, static)
        return outs

    def set_to_running_backward(self):
        self.pending_backward = False

    def execute_node(self, node, new_inputs):
        self.current_node = node
        if self.cache_replays:
            new_inputs.clear()
            return list(node.cached_tensor_outputs)
        return self._outs(new_inputs, node.wrapped_function.id)


_UNSET = object()  # torch.utils._config_module._UNSET_SENTINEL


class ConfigEntry:
    """torch.utils._config_module._ConfigEntry, the fields a read looks at.
    With contextvar, user_override is a ContextVar made per entry (newer
    PyTorch), else a plain attribute (2.11) whose unset value is the
    dataclass field's default: a class attribute, absent from the entry's
    own __dict__ until the knob is first set, as in torch."""

    user_override = _UNSET  # (2.11: `user_override: Any = _UNSET_SENTINEL`)

    def __init__(self, name, default, contextvar=False):
        self.default = default
        self.hide = False
        self.alias = None
        self.env_value_force = self.env_value_default = _UNSET
        self.justknob = None
        if contextvar:
            self.user_override = contextvars.ContextVar(name, default=_UNSET)

    def get(self):
        u = self.user_override
        return u.get() if isinstance(u, contextvars.ContextVar) else u

    def set(self, value):
        if isinstance(self.user_override, contextvars.ContextVar):
            self.user_override.set(value)
        else:
            self.user_override = value


class SubConfigProxy:
    """torch.utils._config_module.SubConfigProxy: `config.triton.x` is the
    module's "triton.x"."""

    def __init__(self, config, prefix):
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        return self._config.__getattr__(self._prefix + name)

    def __setattr__(self, name, value):
        self._config.__setattr__(self._prefix + name, value)


class ConfigModule(types.ModuleType):
    """torch.utils._config_module.ConfigModule as far as the recorder reads
    it: values live in _config entries, not in the module's dict, so an
    attribute read fails the module lookup first and then runs
    __getattr__ (what makes a read cost microseconds in PyTorch). A knob a
    test sets that this stand-in lacks is made then (torch would refuse:
    the tests set knobs of newer PyTorch this way)."""

    _bypass = frozenset(("_config", "_contextvar"))

    def __init__(self, name, defaults, contextvar=False):
        super().__init__(name)
        object.__setattr__(self, "_contextvar", contextvar)
        object.__setattr__(self, "_config", {k: ConfigEntry(k, v, contextvar) for k, v in defaults.items()})
        for prefix in {k.split(".")[0] for k in defaults if "." in k}:
            types.ModuleType.__setattr__(self, prefix, SubConfigProxy(self, prefix + "."))

    def __getattr__(self, name):
        try:
            entry = self._config[name]
        except KeyError as e:
            raise AttributeError("%s.%s does not exist" % (self.__name__, name)) from e
        if entry.hide:
            raise AttributeError("%s.%s does not exist" % (self.__name__, name))
        if entry.alias is not None:  # (torch's _get_alias_val: the target's value)
            mod, key = entry.alias.rsplit(".", 1)
            return getattr(sys.modules[mod], key)
        if entry.env_value_force is not _UNSET:
            return entry.env_value_force
        u = entry.get()
        if u is not _UNSET:
            return u
        if entry.env_value_default is not _UNSET:
            return entry.env_value_default
        return entry.default

    def __setattr__(self, name, value):
        if name in self._bypass or name.startswith("__"):
            types.ModuleType.__setattr__(self, name, value)
            return
        entry = self._config.get(name)
        if entry is None:
            entry = self._config[name] = ConfigEntry(name, None, self._contextvar)
        if entry.alias is not None:  # (torch's _set_alias_val: the target is set)
            mod, key = entry.alias.rsplit(".", 1)
            setattr(sys.modules[mod], key, value)
            return
        entry.set(value)
        entry.hide = False

    def alias(self, name, target):
        """Makes name an alias of target ("torch._dynamo.config.x"), as
        Config(alias=...) does: it holds no value of its own."""
        entry = self._config[name] = ConfigEntry(name, None, self._contextvar)
        entry.alias = target

    def __delattr__(self, name):
        # what mock.patch's undo starts with (torch's ConfigModule.__delattr__)
        entry = self._config[name]
        entry.set(_UNSET)
        entry.hide = True

    @contextlib.contextmanager
    def patch(self, name, value):
        """config.patch("name", value) as 2.11's ConfigPatch does it: the
        prior value read, the new one set through __setattr__, the prior
        one set back the same way on exit (so the knob ends set, not
        unset)."""
        prior = self.__getattr__(name)
        self.__setattr__(name, value)
        try:
            yield
        finally:
            self.__setattr__(name, prior)


class MarkStepBox:
    mark_step_counter = 0


def _mark_step_begin():
    MarkStepBox.mark_step_counter -= 1


def _reset_cudagraph_trees():
    """torch._inductor.cudagraph_trees.reset_cudagraph_trees: the managers
    go and the mark-step counter is back to 0."""
    MarkStepBox.mark_step_counter = 0


class FrameAction(enum.Enum):
    DEFAULT = 0
    SKIP = 1
    RUN_ONLY = 2


FrameExecStrategy = collections.namedtuple("FrameExecStrategy", "cur_action recursive_action")
CODE_STRATEGY = {}  # code object -> the FrameExecStrategy the recorder set


def _tensors_data_ptrs_at_indices_equal(tensors, data_ptrs, indices):
    """torch._C's: each tensor at an index of indices at the data pointer
    data_ptrs holds at that index. Its binding takes three lists (pybind's
    py::list&): anything else raises TypeError there, and here."""
    if type(tensors) is not list or type(data_ptrs) is not list or type(indices) is not list:
        raise TypeError("_tensors_data_ptrs_at_indices_equal(): incompatible function arguments")
    return all(tensors[i].data_ptr() == data_ptrs[i] for i in indices)


class CppReads:
    """cgtrace/_cpp.cpp's functions over the stand-in's tensors, with
    its contracts (cpp.py): what the recorder's tests give the lean
    paths for the module built against a real torch; calls counts each
    function's calls."""

    API = 1

    def __init__(self, fns=True):
        self.calls = {}
        self.errors = []  # (what the FNS callbacks raised)
        # (one object, as a module's function is at every look: the C
        # module knows the maps' new_input by it, use_cpp's third argument)
        self.new_input = self.new_input
        if fns:
            self.FNS = self._fns()

    def _count(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    def _fns(self):
        """The module's FNS capsule (_cpp.cpp's CppFns: the weak storage
        handles made, asked and freed, and a tensor's use count, as C
        functions), its functions ctypes callbacks over the stand-in's
        (each counted)."""
        import ctypes
        make_t = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.py_object)
        expired_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
        free_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
        uses_t = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.py_object)
        P = ctypes.py_object
        new_input_t = ctypes.CFUNCTYPE(ctypes.c_int, P, P, P, P, P, P, ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_void_p))

        class CppFns(ctypes.Structure):
            _fields_ = [("size", ctypes.c_size_t), ("weak_make", make_t), ("weak_expired", expired_t),
                        ("weak_free", free_t), ("use_count", uses_t), ("new_input", new_input_t)]

        def weak_make(t):
            self._count("weak_make")
            return t.untyped_storage()._weak_ref()

        def weak_expired(h):
            self._count("weak_expired")
            return int(Storage._expired(h))

        def weak_free(h):
            self._count("weak_free")
            try:
                Storage._free_weak_ref(h)
            except RuntimeError as e:  # (a ctypes callback's error is only printed: kept for the test)
                self.errors.append(str(e))

        def use_count(t):
            self._count("use_count")
            return t._use_count()

        def new_input_c(v, dtype, shape, stride, device, nbytes, storage, data):
            # (new_input's answer as the C function gives it: 1 with the
            # two words set, 0; what it raised: only printed by ctypes, so
            # kept for the test, and -1 with no error set, which the
            # caller must not take for a refusal)
            self._count("new_input_c")
            try:
                got = self._new_input(v, dtype, shape, stride, device, nbytes)
            except Exception as e:
                self.errors.append(repr(e))
                return -1
            if got is None:
                return 0
            storage[0], data[0] = got
            return 1

        fns = CppFns(ctypes.sizeof(CppFns), make_t(weak_make), expired_t(weak_expired), free_t(weak_free),
                     uses_t(use_count), new_input_t(new_input_c))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
        self._fns_held = (fns, b"_cgtrace_cpp.fns")  # (the struct and the capsule's name outlive it)
        return new(ctypes.addressof(fns), self._fns_held[1], None)

    def new_input(self, v, dtype, shape, stride, device, nbytes):
        self._count("new_input")
        return self._new_input(v, dtype, shape, stride, device, nbytes)

    def _new_input(self, v, dtype, shape, stride, device, nbytes):
        if not isinstance(v, Tensor):
            return None
        st = v.untyped_storage()
        if (v.layout is not STRIDED or v.dtype is not dtype or tuple(v.shape) != tuple(shape)
                or tuple(v.stride()) != tuple(stride) or v.storage_offset() != 0 or v.get_device() != device
                or st.nbytes() != nbytes):
            return None
        return st._cdata, v.data_ptr()

    def storage_weak_ref(self, v):
        self._count("storage_weak_ref")
        if not isinstance(v, Tensor):
            raise TypeError("storage_weak_ref: a tensor expected")
        return v.untyped_storage()._weak_ref()

    def data_ptr(self, t):
        self._count("data_ptr")
        if not isinstance(t, Tensor):
            raise TypeError("data_ptr: a tensor expected")
        return t.data_ptr()

    def ptrs_equal(self, tensors, ptrs, indices):
        self._count("ptrs_equal")
        return _tensors_data_ptrs_at_indices_equal(tensors, ptrs, indices)


def _plain_cudagraphify_impl(model, inputs, static_input_idxs=()):
    """compile_fx.cudagraphify_impl's stand-in (a CUDA graph outside the
    trees): the graph runs as itself."""
    return model


def _cudagraphify(model, static_input_idxs=()):
    """compile_fx.cudagraphify as 2.11 has it with triton.cudagraph_trees
    off: the implementation looked up in compile_fx at the graph's first
    run, then that run's callable for every call."""
    compiled = [None]

    def run(new_inputs):
        if compiled[0] is None:
            compiled[0] = sys.modules["torch._inductor.compile_fx"].cudagraphify_impl(
                model, new_inputs, static_input_idxs)
        return compiled[0](new_inputs)

    return run


EMPTIED = [0]


def _empty_cache():
    """torch.cuda.empty_cache's stand-in: counts its calls."""
    EMPTIED[0] += 1


def install_fake_torch():
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.__file__ = "/nonexistent/fake-torch/torch/__init__.py"
    torch.Tensor = Tensor
    torch.UntypedStorage = Storage
    torch.strided = STRIDED
    torch.stack = stack
    torch._C = types.ModuleType("torch._C")
    vars(torch._C).update(_is_cached_tensor=lambda t: False,
                                     _storage_Use_Count=Storage.use_count,
                                     _tensors_data_ptrs_at_indices_equal=_tensors_data_ptrs_at_indices_equal,
                                     _set_storage_access_error_msg=_set_storage_access_error_msg,
                                     _set_storage_data_ptr_access_error_msg=_set_storage_data_ptr_access_error_msg)
    torch.nn = types.SimpleNamespace(Module=type("Module", (), {}))
    # (empty_cache: counted in EMPTIED, torch.cuda.memory's the same function)
    torch.cuda = types.ModuleType("torch.cuda")
    torch.cuda.memory = types.ModuleType("torch.cuda.memory")
    torch.cuda.is_available = lambda: False
    torch.cuda.empty_cache = torch.cuda.memory.empty_cache = _empty_cache
    torch.compiler = types.SimpleNamespace(is_compiling=lambda: COMPILING[0])
    inductor = types.ModuleType("torch._inductor")
    cgt = types.ModuleType("torch._inductor.cudagraph_trees")
    cgt.CUDAGraphTreeManager = CUDAGraphTreeManager
    cgt.MarkStepBox = MarkStepBox
    cgt.mark_step_begin = _mark_step_begin
    cgt.reset_cudagraph_trees = _reset_cudagraph_trees
    cgt.local = types.SimpleNamespace(tree_manager_containers={})
    config = ConfigModule("torch._inductor.config", {
        "triton.skip_cudagraph_warmup": False, "triton.cudagraph_unexpected_rerecord_limit": 128})
    inductor.cudagraph_trees, inductor.config = cgt, config
    cfx = types.ModuleType("torch._inductor.compile_fx")
    cfx.cudagraphify, cfx.cudagraphify_impl = _cudagraphify, _plain_cudagraphify_impl
    inductor.compile_fx = cfx
    dynamo = types.ModuleType("torch._dynamo")
    dconfig = ConfigModule("torch._dynamo.config", {
        "recompile_limit": 8, "automatic_dynamic_shapes": True, "assume_static_by_default": True})
    dynamo.config = dconfig
    guard = types.ModuleType("torch._dynamo.mutation_guard")
    guard.GenerationTracker = types.SimpleNamespace(generation=0)
    # Dynamo's frame hook's strategies (torch._C._dynamo.eval_frame), as
    # 2.11 names them: what the recorder sets is kept in CODE_STRATEGY.
    c_dynamo = types.ModuleType("torch._C._dynamo")
    c_eval = types.ModuleType("torch._C._dynamo.eval_frame")
    c_eval.set_code_exec_strategy = CODE_STRATEGY.__setitem__
    c_dynamo.eval_frame = c_eval
    torch._C._dynamo = c_dynamo
    dtypes = types.ModuleType("torch._dynamo.types")
    dtypes.FrameAction = FrameAction
    dtypes.FrameExecStrategy = FrameExecStrategy
    dynamo.types = dtypes
    mp = types.ModuleType("torch.multiprocessing")
    red = types.ModuleType("torch.multiprocessing.reductions")
    red.StorageWeakRef = StorageWeakRef
    torch._inductor, torch._dynamo, torch.multiprocessing = inductor, dynamo, mp
    mods = {"torch": torch, "torch._inductor": inductor, "torch._inductor.cudagraph_trees": cgt,
            "torch._inductor.config": config, "torch._inductor.compile_fx": cfx, "torch._dynamo": dynamo, "torch._dynamo.config": dconfig,
            "torch._dynamo.mutation_guard": guard, "torch.multiprocessing": mp,
            "torch.multiprocessing.reductions": red, "torch._C": torch._C, "torch._C._dynamo": c_dynamo,
            "torch._C._dynamo.eval_frame": c_eval, "torch._dynamo.types": dtypes}
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    # The start-up line (a torch the recorder was not made for) is the
    # user's, once per process; a stand-in is no user's torch.
    cgtrace.compat._SAID[0] = True
    return saved


class CUDAGraphTreeManager214(CUDAGraphTreeManager):
    """The manager as torch 2.14's cudagraph_trees.py has it, in what the
    recorder can see: the same entry points and signatures as 2.11's, and
    what 2.12-2.14 added (generation cloning's flag, the active warmup
    function that mark_warmup_incomplete reads, kernel-free and
    user-visible outputs on the wrapped function)."""

    def __init__(self):
        super().__init__()
        self.has_live_user_visible_output_cloning = False
        self.active_warmup_function = None

    def add(self, fid, mode="INFERENCE", **kw):
        f = super().add(fid, mode, **kw)
        w = self.ids_to_funcs[f]
        w.kernel_free_cudagraph = False
        w.user_visible_output_idxs = frozenset()
        return f

    def run_eager(self, new_inputs, function_id):
        self.active_warmup_function = function_id
        try:
            return super().run_eager(new_inputs, function_id)
        finally:
            self.active_warmup_function = None

    def mark_warmup_incomplete(self):
        self.active_warmup_function = None

    # The entry points are the class's own, as in torch (the recorder
    # patches the class's attributes).
    def _run(self, new_inputs, function_id):
        return super()._run(new_inputs, function_id)

    def record_function(self, new_inputs, function_id):
        return super().record_function(new_inputs, function_id)

    def execute_node(self, node, new_inputs):
        return super().execute_node(node, new_inputs)

    def set_to_running_backward(self):
        return super().set_to_running_backward()


def shape_as(version):
    """Makes the installed stand-in look like that torch: "2.14.0" has
    2.14's names (mark_warmup_incomplete, generation cloning's config knob,
    CUDAGraphTreeManager214). Returns the manager class programs use."""
    torch = sys.modules["torch"]
    torch.__version__ = version
    if version.startswith("2.14"):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        cgt.CUDAGraphTreeManager = CUDAGraphTreeManager214

        def mark_warmup_incomplete():
            pass

        cgt.mark_warmup_incomplete = mark_warmup_incomplete
        return CUDAGraphTreeManager214
    return CUDAGraphTreeManager


def two_functions(cls=None):
    """A tree of two functions f and g, each on a static param (input 0)
    and handing out a new [16, 8] output, replays handing out cached
    outputs, as torch's do. cls: the manager's class (a test's subclass).
    Returns (the cudagraph_trees module, the manager, f, g)."""
    mgr = (cls or CUDAGraphTreeManager)()
    mgr.cache_replays = True
    f = mgr.add(0, static=[0])
    g = mgr.add(1, static=[0])
    mgr.models[0] = lambda ins: [Tensor([16, 8])]
    mgr.models[1] = lambda ins: [Tensor([16, 8])]
    return sys.modules["torch._inductor.cudagraph_trees"], mgr, f, g


def each_way(test, loop, envs):
    """loop(path) recorded once under each environment of envs (the
    variables each adds), each after the first on a fresh stand-in (test's
    tearDown and setUp between), always from one line (at_one_line), so
    that their traces compare line by line: each run's answer."""
    from unittest import mock
    got = []
    for k, env in enumerate(envs):
        if k:
            test.tearDown()
            test.setUp()
        with mock.patch.dict(os.environ, env):
            got.append(at_one_line(loop, os.path.join(test.dir.name, "way%d.cgt.jsonl" % k)))
    return got


def at_one_line(program, *args, **kwargs):
    """program(*args, **kwargs), called from this one line. A call's src is
    the line that called the function that called the tree (that function
    stands for the compiled one: Dynamo runs a compiled function's code in
    its own frame), so two recordings of one program that a test compares
    line by line call it through here, from one line."""
    return program(*args, **kwargs)


# The stand-in autograd engine's device thread, as code of the stand-in
# torch's own files: no frame of the program's is above a backward it runs.
_ENGINE_SRC = """
def engine_loop(todo, done):
    while True:
        job = todo.get()
        if job is None:
            return
        fn, args = job
        try:
            done.put((fn(*args), None))
        except BaseException as e:
            done.put((None, e))
"""


class AutogradEngine:
    """Runs each backward in a thread of its own, the caller waiting, as
    torch's autograd engine runs a GPU's backward in its device thread:
    no frame of the program's is above the tree's call then (its call
    has no src)."""

    def __init__(self):
        ns = {}
        exec(compile(_ENGINE_SRC, "/nonexistent/fake-torch/torch/autograd/graph.py", "exec"), ns)
        self.todo, self.done = queue.SimpleQueue(), queue.SimpleQueue()
        self.thread = threading.Thread(target=ns["engine_loop"], args=(self.todo, self.done), daemon=True)
        self.thread.start()

    def run(self, fn, *args):
        """fn(*args) in the engine's thread; its result, or its error raised here."""
        self.todo.put((fn, args))
        out, err = self.done.get()
        if err is not None:
            raise err
        return out

    def stop(self):
        self.todo.put(None)
        self.thread.join()


def remove_fake_torch(saved):
    for k, v in saved.items():
        if v is None:
            sys.modules.pop(k, None)
        else:
            sys.modules[k] = v


# ---- "compiled functions" as a program would call them -----------------------

MGR = None


def _invocation():
    """What Dynamo does on entering a top-level compiled frame: one bump of
    GenerationTracker.generation (OptimizeContext's on_enter)."""
    sys.modules["torch._dynamo.mutation_guard"].GenerationTracker.generation += 1


def foo(x):
    _invocation()
    return MGR._run([x], FOO)


def fee(y):
    _invocation()
    return MGR._run([y], FEE)


def foo_with_break(x):
    """A compiled frame with a graph break: the graph before the break and
    the resume function after it run in one invocation."""
    _invocation()
    a, = MGR._run([x], FOO)
    return MGR._run([a], FEE)


FOO = FEE = None


def new_manager():
    """A fresh tree manager with foo (function 0) and fee (1) on it: what
    a test of the recorder starts from."""
    global MGR, FOO, FEE
    MGR = CUDAGraphTreeManager()
    FOO = MGR.add(0)
    FEE = MGR.add(1)
# COMPILING[0] is what the fake torch.compiler.is_compiling() says: True
# while "Dynamo traces" a function.
COMPILING = [False]


class TraceFileTest(unittest.TestCase):
    """A test of one recorded trace file: the stand-in torch installed, a
    temporary folder with the trace's path, and the records read back."""

    trace_name = "t.cgt.jsonl"

    def setUp(self):
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, self.trace_name)

    def tearDown(self):
        remove_fake_torch(self.saved)
        self.dir.cleanup()

    def records(self):
        """The header and the records of the trace at self.path."""
        with open(self.path) as fh:
            lines = [json.loads(x) for x in fh if x.strip()]
        return lines[0], lines[1:]


def training_tree(fwd_outs=1, grads=3, saves_weight=False):
    """A tree manager of a training step's two functions, its replays
    handing out their cached output objects as PyTorch's do: a forward
    (two static parameters and one input; fwd_outs outputs of [16, 8],
    the loss and activations saved for the backward, and with
    saves_weight its first parameter as is after them, which the tree
    does not wrap) and its backward (a saved activation and a gradient;
    grads gradients, of [8, 8], [8] and [16, 8] in that order). Returns
    (mgr, fwd, bwd)."""
    mgr = CUDAGraphTreeManager()
    mgr.cache_replays = True
    fwd = mgr.add(0, static=[0, 1])
    bwd = mgr.add(1, mode="BACKWARD", placeholders=["saved_0", "tangents_1"])
    mgr.models[0] = lambda ins: [Tensor([16, 8]) for _ in range(fwd_outs)] + ([ins[0]] if saves_weight else [])
    mgr.models[1] = lambda ins: [Tensor(s) for s in ([8, 8], [8], [16, 8])[:grads]]
    return mgr, fwd, bwd


class FakeTorchTest(unittest.TestCase):
    """The stand-in installed, the mark-step counter at 0, a folder for
    traces (self.dir)."""

    def setUp(self):
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        remove_fake_torch(self.saved)
        self.dir.cleanup()
