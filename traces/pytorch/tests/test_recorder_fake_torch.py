"""Drives cgtrace.Recorder's hooks against a stand-in for the parts of torch
it touches (the tree manager's entry points, storages and their weak
references, mark_step), so the patching, the naming from the caller's frame,
liveness through storages and the error path run without a GPU. The real
thing runs on the GPU machine (programs/record_all.sh)."""

import collections
import contextlib
import contextvars
import enum
import functools
import io
import json
import os
import sys
import tempfile
import types
import unittest
import warnings
import weakref

# CGTRACE_TEST_INSTALLED=1 tests the installed package (tests/venv_check.sh)
# instead of the file beside these tests.
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

    def _check(self):
        if self.overwritten:
            raise RuntimeError("Error: accessing tensor output of CUDAGraphs that has been overwritten "
                               "by a subsequent run.\nStack trace: ...")

    def item(self):
        self._check()
        return self.tolist()[0]

    def __repr__(self):
        return "tensor(%s)" % self.tolist()



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
    def __init__(self, fid, static=(), mutated=(), placeholders=()):
        self.id = fid
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

    def cache_outputs(self, outs):
        """What CUDAGraphNode._initialize_cached_tensors does after a
        recording: one tensor object per output over the recorded output's
        storage, handed out by every replay, judged by its refcount."""
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
            raise RuntimeError("accessing tensor output of CUDAGraphs that has been overwritten\nstack...")
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
        node = Node(self.ids_to_funcs[function_id], None)
        self.roots.setdefault(function_id, []).append(node)
        self.current_node = node
        outs = self._outs(new_inputs, function_id)
        if self.cache_replays:
            node.cache_outputs(outs)
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


def install_fake_torch():
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.__file__ = "/nonexistent/fake-torch/torch/__init__.py"
    torch.Tensor = Tensor
    torch.strided = STRIDED
    torch._C = types.SimpleNamespace(_is_cached_tensor=lambda t: False,
                                     _storage_Use_Count=Storage.use_count)
    torch.nn = types.SimpleNamespace(Module=type("Module", (), {}))
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
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
            "torch._inductor.config": config, "torch._dynamo": dynamo, "torch._dynamo.config": dconfig,
            "torch._dynamo.mutation_guard": guard, "torch.multiprocessing": mp,
            "torch.multiprocessing.reductions": red, "torch._C": torch._C, "torch._C._dynamo": c_dynamo,
            "torch._C._dynamo.eval_frame": c_eval, "torch._dynamo.types": dtypes}
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    return saved


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
# COMPILING[0] is what the fake torch.compiler.is_compiling() says: True
# while "Dynamo traces" a function.
COMPILING = [False]


class ProbeTest(unittest.TestCase):
    """Liveness as the tree judges it: a cached replay output by the tree's
    own wrapper, anything else by its object, then its storage."""

    class Wrapper:
        def __init__(self):
            self.extra_ref_check = lambda: True
            self.dead = False

        def expired(self):
            return self.dead

    def test_cached_output_follows_tree_wrapper(self):
        t = Tensor([4])
        p = cgtrace._Probe(weakref.ref(t), StorageWeakRef(t.untyped_storage()))
        p.tree_ref = w = self.Wrapper()
        self.assertTrue(p.alive())
        w.dead = True  # the tree counts it dead although the object lives on in its cache
        self.assertFalse(p.alive())
        w.extra_ref_check = None  # un-cached (a checkpoint): the object decides
        self.assertTrue(p.alive())

    def test_storage_outlives_object(self):
        t = Tensor([4])
        keep = Tensor([4], storage=t.untyped_storage())  # a view, or autograd's saved copy
        p = cgtrace._Probe(weakref.ref(t), StorageWeakRef(t.untyped_storage()))
        del t
        self.assertTrue(p.alive())
        del keep
        self.assertFalse(p.alive())


class KnobsTest(unittest.TestCase):
    """PyTorch's settings are looked at at every call through probes of
    their _ConfigEntry (an attribute in 2.11, a ContextVar later), never
    through the config module's __getattr__, yet every change is seen."""

    def setUp(self):
        self.saved = install_fake_torch()

    def tearDown(self):
        remove_fake_torch(self.saved)

    def knobs(self, contextvar):
        ind = ConfigModule("torch._inductor.config", {
            "triton.skip_cudagraph_warmup": False, "triton.cudagraph_unexpected_rerecord_limit": 128,
            "triton.cudagraph_dynamic_shape_warn_limit": 8, "triton.force_cudagraph_sync": False})
        dyn = ConfigModule("torch._dynamo.config", {"recompile_limit": 8}, contextvar=contextvar)
        return ind, dyn, cgtrace._Knobs(ind, dyn)

    def test_probes_see_every_change(self):
        for contextvar in (False, True):
            with self.subTest(contextvar=contextvar):
                ind, dyn, k = self.knobs(contextvar)
                self.assertTrue(k.changed())  # the first time
                self.assertEqual(k.read(all_knobs=False)["recompile_limit"], 8)
                self.assertFalse(k.changed())
                dyn.recompile_limit = 3
                self.assertTrue(k.changed())
                self.assertEqual(k.read(all_knobs=False)["recompile_limit"], 3)
                self.assertFalse(k.changed())
                ind.triton.skip_cudagraph_warmup = True
                self.assertTrue(k.changed())
                self.assertIs(k.read(all_knobs=False)["triton.skip_cudagraph_warmup"], True)
                # a knob the format has no key for moves only the probes of all knobs
                self.assertTrue(k.changed(all_knobs=True))
                ind.triton.force_cudagraph_sync = True
                self.assertFalse(k.changed())
                self.assertTrue(k.changed(all_knobs=True))
                self.assertFalse(k.changed(all_knobs=True))
                dyn.made_later = 1  # a knob this torch lacked (only a stand-in makes one)
                self.assertFalse(k.changed())

    def test_probes_read_no_knob(self):
        ind, dyn, k = self.knobs(False)
        self.assertEqual(k.read_per_call, [])
        k.changed()
        reads = []
        real = ConfigModule.__getattr__
        ConfigModule.__getattr__ = lambda mod, name: reads.append(name) or real(mod, name)
        try:
            for _ in range(10):
                k.changed()
                k.changed(all_knobs=True)
        finally:
            ConfigModule.__getattr__ = real
        self.assertEqual(reads, [])

    def test_probes_of_slotted_entries(self):
        """An entry class with __slots__ (no instance __dict__) is probed the
        same way: its user_override, read by getattr, never the knob."""
        class SlottedEntry:
            __slots__ = ("default", "hide", "alias", "env_value_force", "env_value_default",
                         "justknob", "user_override")

            def __init__(self, default):
                self.default, self.hide, self.alias, self.justknob = default, False, None, None
                self.env_value_force = self.env_value_default = self.user_override = _UNSET

            def get(self):
                return self.user_override

            def set(self, value):
                self.user_override = value

        ind, dyn, _ = self.knobs(False)
        dyn._config["recompile_limit"] = SlottedEntry(8)
        k = cgtrace._Knobs(ind, dyn)
        k.changed()
        reads = []
        real = ConfigModule.__getattr__
        ConfigModule.__getattr__ = lambda mod, name: reads.append(name) or real(mod, name)
        try:
            self.assertFalse(k.changed())
            dyn.recompile_limit = 2
            self.assertTrue(k.changed())
            self.assertFalse(k.changed())
        finally:
            ConfigModule.__getattr__ = real
        self.assertEqual(reads, [])
        self.assertEqual(k.read(all_knobs=False)["recompile_limit"], 2)

    def test_alias_is_probed_at_its_target(self):
        """An aliased knob (Config(alias=...), as 2.11's cache_size_limit is
        of recompile_limit) keeps no value: its probe is its target's
        entry, so a set through either name is seen, without a read."""
        for contextvar in (False, True):
            with self.subTest(contextvar=contextvar):
                dyn = ConfigModule("torch._dynamo.config", {"recompile_limit": 8}, contextvar=contextvar)
                dyn.alias("old_limit", "torch._dynamo.config.recompile_limit")
                saved = sys.modules.get("torch._dynamo.config")
                sys.modules["torch._dynamo.config"] = dyn
                try:
                    probe = cgtrace._Knobs._probe(dyn, "old_limit", lambda: self.fail("read the knob"))
                    first = probe()
                    dyn.old_limit = 3
                    self.assertEqual(dyn.recompile_limit, 3)
                    moved = probe()
                    self.assertNotEqual(moved, first)
                    dyn.recompile_limit = 5
                    self.assertNotEqual(probe(), moved)
                    # a target this torch cannot resolve: the alias is read
                    dyn.alias("lost", "torch._nowhere.config.x")
                    getter = object()
                    self.assertIs(cgtrace._Knobs._probe(dyn, "lost", getter), getter)
                finally:
                    sys.modules["torch._dynamo.config"] = saved

    def test_config_of_another_shape_is_read(self):
        """A config that is not a ConfigModule (a plain module) is probed by
        reading its knobs: a change is still seen."""
        ind = types.ModuleType("torch._inductor.config")
        ind.triton = types.SimpleNamespace(skip_cudagraph_warmup=False)
        dyn = types.ModuleType("torch._dynamo.config")
        dyn.recompile_limit = 8
        k = cgtrace._Knobs(ind, dyn)
        # (what recorder-overhead.py reports: reads at every call, of the
        # knobs it has and of those it lacks, which read None)
        self.assertLessEqual({"recompile_limit", "triton.skip_cudagraph_warmup"}, set(k.read_per_call))
        k.changed()
        self.assertFalse(k.changed())
        ind.triton.skip_cudagraph_warmup = True
        dyn.recompile_limit = 2
        self.assertTrue(k.changed())
        self.assertEqual(cgtrace.settings_from_knobs(k.read(all_knobs=False)),
                         {"warmup_runs": 0, "recompile_limit": 2})


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


class AutogradSavedTest(TraceFileTest):
    """A forward's replay returns its saved tensors as cached outputs, which
    the tree counts dead as soon as the program holds no Python reference,
    while autograd keeps them for the backward (PyTorch's
    test_multi_dispatch_parent_node)."""

    def setUp(self):
        super().setUp()
        self.mgr = CUDAGraphTreeManager()
        self.mgr.cache_replays = True
        self.fw = self.mgr.add(0, mode="FORWARD")
        self.bw = self.mgr.add(1, mode="BACKWARD", static=[0])
        self.mgr.models[0] = lambda ins: [Tensor([4]), Tensor([4])]  # an output, a saved activation
        self.mgr.models[1] = lambda ins: [Tensor([4])]
        self.other = self.mgr.add(3)

    def test_dead_cached_output_handed_to_backward_is_saved(self):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path) as rec:
            for i in range(4):
                cgt.mark_step_begin()
                _invocation()
                y, act = self.mgr._run([Tensor([4])], self.fw)
                # autograd keeps act (C++ side: no Python reference the
                # tree's refcount check sees); the program drops its own
                node = self.mgr.roots.get(self.fw, [None])[0]
                keep = node is not None and i >= 2
                if not keep:
                    autograd = act  # a recording's output: its storage is held
                del act
                # the program goes on (another compiled call): the tree
                # counts the replay's cached act dead by now
                _invocation()
                z, = self.mgr._run([y], self.other)
                # the backward gets the saved tensor back: on replays the
                # same object as the node's cached output
                act = node.cached_tensor_outputs[1] if keep else autograd
                autograd = None
                g, = self.mgr._run([act, Tensor([4])], self.bw)
                del y, z, g, act
        self.assertIsNone(rec.error)
        _, recs = self.records()
        saved = [r for r in recs if r["op"] == "saved"]
        self.assertEqual(len(saved), 2, [r for r in recs if r["op"] not in ("expect",)])
        outs = {o: r for r in recs if r["op"] == "call" for o in r.get("out", [])}
        for s in saved:
            # of: the forward's dead second output, deleted before the record
            fw = next(r["fn"] for r in recs if r["op"] == "def" and r["mode"] == "forward")
            self.assertEqual((outs[s["of"]]["fn"], outs[s["of"]]["out"].index(s["of"])), (fw, 1))
            i = recs.index(s)
            dels = [n for r in recs[:i] if r["op"] == "del" for n in r["names"]]
            self.assertIn(s["of"], dels)
            # the backward's first argument is the saved name, which dies after it
            call = next(r for r in recs[i:] if r["op"] == "call")
            self.assertEqual(call["args"][0], s["name"])
            later = [n for r in recs[recs.index(call):] if r["op"] == "del" for n in r["names"]]
            self.assertIn(s["name"], later)

    def test_defs_say_their_static_inputs(self):
        with cgtrace.record(self.path):
            for _ in range(3):
                _invocation()
                y, act = self.mgr._run([Tensor([4])], self.fw)
                g, = self.mgr._run([act, Tensor([4])], self.bw)
                del y, act, g
        _, recs = self.records()
        static = {r["fn"]: r.get("static") for r in recs if r["op"] == "def"}
        self.assertEqual(sorted(static.values()), [[], [0]])

    def test_replaced_param_data_comes_before_new_inputs(self):
        """`p.data = new; f(torch.rand(...))`: the new data was made first, so
        its record comes before the new input's, and the old data's del
        before the input (which may take its memory)."""
        fid = self.mgr.add(2, static=[1])
        self.mgr.models[2] = lambda ins: [Tensor([4])]
        w = Tensor([4])
        with cgtrace.record(self.path):
            for _ in range(3):
                _invocation()
                out, = self.mgr._run([Tensor([4]), w], fid)
                del out
                w._storage = Storage(16)  # w.data = new data
        _, recs = self.records()
        ops = [(r["op"], r.get("name") or r.get("names")) for r in recs if r["op"] in ("tensor", "param", "del")]
        params = [n for op, n in ops if op == "param"]
        for p in params[1:]:
            i = ops.index(("param", p))
            self.assertEqual(ops[i + 1][0], "del", ops)  # the old data's name
            self.assertEqual(ops[i + 2][0], "tensor", ops)  # then the call's new input


class SteadyLoopTest(TraceFileTest):
    """What a steady replay loop costs the recorder: no question to torch
    about a tensor it already holds, no read of a config knob."""

    def setUp(self):
        super().setUp()
        self.mgr = CUDAGraphTreeManager()
        self.mgr.cache_replays = True
        self.fid = self.mgr.add(0, static=[0, 1])
        self.mgr.models[0] = lambda ins: [Tensor([2, 4])]

    def test_steady_replays_ask_torch_nothing(self):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        asked = []
        real_storage, real_getattr = Tensor.untyped_storage, ConfigModule.__getattr__
        out = None
        with cgtrace.record(self.path) as rec:
            for i in range(200):
                if i == 10:  # warmup, record and the first replays are behind
                    Tensor.untyped_storage = lambda t: asked.append("storage") or real_storage(t)
                    ConfigModule.__getattr__ = lambda mod, name: asked.append(name) or real_getattr(mod, name)
                cgt.mark_step_begin()
                _invocation()
                out = self.mgr._run(params + [x], self.fid)
            Tensor.untyped_storage, ConfigModule.__getattr__ = real_storage, real_getattr
        self.assertIsNone(rec.error)
        self.assertEqual(asked, [])
        self.assertEqual(rec.session.counts["replay"], 198)
        _, recs = self.records()
        # each replay retires the previous binding of the one cached output
        dels = [r["names"] for r in recs if r["op"] == "del"]
        fn = "test_steady_replays_ask_torch_nothing_0"
        self.assertEqual(dels[5:8], [[fn + "_c7_0"], [fn + "_c8_0"], [fn + "_c9_0"]])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])
        del out

    def test_chained_replay_names_the_latest_output(self):
        """g takes f's cached output, renamed at every f call: g's memo of
        its inputs must not give the name of the call before."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        g = self.mgr.add(1)
        self.mgr.models[1] = lambda ins: [Tensor([2, 4])]
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        with cgtrace.record(self.path) as rec:
            for i in range(30):
                cgt.mark_step_begin()
                y, = self.mgr._run(params + [x], self.fid)
                z, = self.mgr._run([y], g)
                if i == 20:
                    params[1] = Tensor([4, 4])  # a new parameter: its first use names it
        self.assertIsNone(rec.error)
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        for a, b in zip(calls[0::2], calls[1::2]):
            self.assertEqual(b["args"], a["out"])
        self.assertEqual([c["args"][:2] for c in calls[0::2]][20:23],
                         [["param", "param_1"], ["param", "param_2"], ["param", "param_2"]])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])

    def test_many_inputs(self):
        """A model's hundreds of parameters: every call names them all, the
        same names, and a parameter swapped mid-loop is named anew."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        fid = self.mgr.add(2, static=list(range(300)))
        self.mgr.models[2] = lambda ins: [Tensor([2])]
        params = [Tensor([2]) for _ in range(300)]
        with cgtrace.record(self.path) as rec:
            for i in range(12):
                cgt.mark_step_begin()
                if i == 8:
                    params[150] = Tensor([2])
                out = self.mgr._run(params + [Tensor([2])], fid)
            del out
        self.assertIsNone(rec.error)
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual(len(calls), 12)
        first = calls[0]["args"][:300]
        self.assertEqual(len(set(first)), 300)
        for c in calls[1:8]:
            self.assertEqual(c["args"][:300], first)
        for c in calls[8:]:
            self.assertEqual(c["args"][:150] + c["args"][151:300], first[:150] + first[151:])
            self.assertEqual(c["args"][150], "param_300")
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])


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


class FastPathTest(FakeTorchTest):
    """A replay like the last one of its function takes the recorder's short
    path (Recorder._fast_after): it must write what the general path writes,
    record for record, through whatever a program does between two
    replays (a knob set, patched or mocked; an output dropped; a fresh
    input; a parameter swapped; chained functions; two outputs)."""

    def scenario(self, path, follow=False):
        """Records the program into path (streamed, with follow); returns
        (the recorder, how many calls took the short path)."""
        from unittest import mock
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        ind = sys.modules["torch._inductor.config"]
        dyn = sys.modules["torch._dynamo.config"]
        ind.triton.skip_cudagraph_warmup = False
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=[0, 1])
        g = mgr.add(1)
        two = mgr.add(2, static=[0])
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        mgr.models[1] = lambda ins: [Tensor([2, 4])]
        mgr.models[2] = lambda ins: [Tensor([3]), Tensor([5])]
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        fast = [0]
        real = cgtrace.Recorder._fast_after

        def counted(rec, *a):
            took = real(rec, *a)
            fast[0] += took
            return took

        with mock.patch.object(cgtrace.Recorder, "_fast_after", counted):
            with cgtrace.record(path, follow=follow) as rec, contextlib.ExitStack() as patched:
                y = z = pair = None
                for i in range(40):
                    cgt.mark_step_begin()
                    _invocation()
                    if i == 12:
                        ind.triton.skip_cudagraph_warmup = True  # a plain set between two replays
                    if i == 16:
                        y = None  # the program drops the output before the next call
                    if i == 20:
                        x = Tensor([2, 4])  # a fresh input: named at its first call
                    if i == 24:
                        params[1] = Tensor([4, 4])  # a swapped parameter
                    if i == 26:  # config.patch entered here, left at i == 29
                        patched.enter_context(ind.patch("triton.cudagraph_unexpected_rerecord_limit", 3))
                    if i == 29:
                        patched.close()
                    if i == 30:
                        with mock.patch.object(dyn, "recompile_limit", 2):
                            y, = mgr._run(params + [x], f)
                    else:
                        y, = mgr._run(params + [x], f)
                    if i >= 5:
                        z, = mgr._run([y], g)  # chained: g takes f's renamed output
                    pair = mgr._run([params[0]], two)
                del y, z, pair
        self.assertIsNone(rec.error)
        return rec, fast[0]

    def read(self, path):
        with open(path) as fh:
            return fh.read().splitlines()

    def test_short_path_writes_what_the_general_path_writes(self):
        fast_path = os.path.join(self.dir.name, "fast.cgt.jsonl")
        slow_path = os.path.join(self.dir.name, "slow.cgt.jsonl")
        _, took = self.scenario(fast_path)
        self.assertGreater(took, 60)  # most of the 115 calls: the test compares something
        from unittest import mock
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        with mock.patch.object(cgtrace.Recorder, "_fast_after", lambda *a: False):
            _, none = self.scenario(slow_path)
        self.assertEqual(none, 0)
        fast, slow = self.read(fast_path), self.read(slow_path)
        self.assertEqual(len(fast), len(slow))
        for i, (a, b) in enumerate(zip(fast[1:], slow[1:])):  # (the header names the file)
            self.assertEqual(a, b, "line %d" % (i + 2))
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(fast_path), [])

    def test_streamed_short_path_writes_the_same_records(self):
        """Followed, the short path's lines are streamed as they are made:
        the same records as the whole trace's (defs and notes aside, which
        a stream places otherwise)."""
        whole = os.path.join(self.dir.name, "whole.cgt.jsonl")
        streamed = os.path.join(self.dir.name, "streamed.cgt.jsonl")
        _, took = self.scenario(whole)
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        _, took_streamed = self.scenario(streamed, follow=True)
        # (Unfollowed, some of the replays _fast_after takes when followed
        # are deferred instead: DeferredReplayTest.)
        self.assertGreater(took_streamed, 60)

        def body(path):
            return [x for x in self.read(path)[1:] if json.loads(x)["op"] not in ("def", "note")]
        self.assertEqual(body(streamed), body(whole))

    def test_config_changes_between_replays_are_written(self):
        path = os.path.join(self.dir.name, "cfg.cgt.jsonl")
        self.scenario(path)
        recs = [json.loads(x) for x in self.read(path)[1:]]
        cfgs = [(i, r) for i, r in enumerate(recs) if r["op"] == "config"]
        self.assertEqual([r for _, r in cfgs], [
            {"op": "config", "warmup_runs": 0},  # the plain set
            {"op": "config", "rerecord_limit": 3},  # config.patch entered ...
            {"op": "config", "rerecord_limit": 128},  # ... and left
            {"op": "config", "recompile_limit": 2},  # mock.patch.object set ...
            {"op": "config", "recompile_limit": 8},  # ... and undone
        ])
        # each lands right before the first call that runs under it: f's
        # 13th call, its 27th (the patch's first), 30th (after it), 31st
        # (mocked), and g's 26th, the call after the mock's undo
        f, _, g = [r["fn"] for r in recs if r["op"] == "def"]  # (in first-call order)
        seen, before = {}, {}
        for i, r in enumerate(recs):
            if r["op"] == "call":
                seen[r["fn"]] = seen.get(r["fn"], 0) + 1
                for j in [j for j in before if before[j] is None]:
                    before[j] = (r["fn"], seen[r["fn"]])
            elif r["op"] == "config":
                before[i] = None
        self.assertEqual([before[i] for i, _ in cfgs], [(f, 13), (f, 27), (f, 30), (f, 31), (g, 26)])


class DeferredReplayTest(FakeTorchTest):
    """A steady replay is deferred by the _run wrapper (Recorder._defer) and
    written at the next other event: the trace must be, byte for byte, the
    one the recorder writes without deferring, through whatever a program
    does between two replays."""

    def scenario(self, path, recurse=True):
        """Records the program into path; returns (the recorder, how many
        calls were deferred). recurse: the tree's _run entered again from
        inside itself at each root replay, as 2.11's is."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        ind = sys.modules["torch._inductor.config"]
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        mgr.recurse_roots = recurse
        f = mgr.add(0, static=[0, 1])
        h = mgr.add(1, static=[0])
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        mgr.models[1] = lambda ins: [Tensor([3]), Tensor([5])]  # two outputs
        ind.triton.force_cudagraph_sync = False  # (a knob the format has no key for)
        params = [Tensor([4, 4]), Tensor([4, 4])]
        x = Tensor([2, 4])
        deferred = [0]
        real = cgtrace.Recorder._write_pending

        def counted(rec):
            deferred[0] += len(rec._pending)
            return real(rec)

        from unittest import mock
        with mock.patch.object(cgtrace.Recorder, "_write_pending", counted):
            with cgtrace.record(path) as rec:
                y = pair = None
                for i in range(90):
                    steps = {5: 2, 7: 0, 40: 64, 75: 64}.get(i, 1)  # two steps; none; 64th steps
                    for _ in range(steps):
                        cgt.mark_step_begin()
                    _invocation()
                    if i == 11:
                        y = None  # dropped before the next call: the tree counts it dead
                    if i == 13:
                        x = Tensor([2, 4])  # a fresh input
                    if i == 15:
                        params[1] = Tensor([4, 4])  # the old parameter dies (a weakref callback)
                    if i == 17:
                        ind.triton.skip_cudagraph_warmup = True  # a knob with a format key
                    if i == 19:
                        ind.triton.force_cudagraph_sync = True  # one without: noted at a 64th step
                    if i == 26:
                        mgr.fail.add(0)  # the call raises
                    if i == 27:
                        mgr.fail.discard(0)
                    if i == 31:
                        mgr.debug_checkpointing_counter += 1  # the tree checkpointed
                    if i == 45:
                        rec.session.names_used.add(rec.session.fns[next(iter(rec.session.fns))].name + "_c50_0")
                    if i == 50:
                        pair = None  # h's outputs go: f's alone are polled from here
                    if i == 53:
                        # c10 holds f's output too, with a Python reference
                        # of its own (2.11's check: dead at a count of 3)
                        held = mgr.roots[f][0].cached_tensor_outputs[0]
                        held._c10_uses, keeper = 2, [held]
                        held = None
                    if i == 55:
                        y = None  # dropped again, now that the poll is the refcount's
                    if i == 57:
                        keeper[0]._c10_uses = 1
                        keeper = None
                    ins = params + [x]
                    if i == 58:
                        # another view of x's data, x kept: the same data pointers
                        ins = params + [Tensor([8], storage=x._storage)]
                    if i == 70:
                        ind.triton.force_cudagraph_sync = False  # noted at the 64th step of call 75
                    if i == 80:
                        # the tree's wrapper of f's output made anew, without
                        # the refcount check (same node, same object): from
                        # here the output is alive while its object is
                        node = mgr.roots[f][0]
                        node.outputs_weakrefs[0] = StorageWeakRefWrapper(node.cached_tensor_outputs[0])
                        node = None
                    if i == 85:
                        y = None
                    if i == 60:
                        cgt.reset_cudagraph_trees()
                    try:
                        y, = mgr._run(ins, f)
                    except RuntimeError:
                        pass
                    ins = None
                    if i in (9, 35):
                        y.item()  # a host read of the output
                    if 20 <= i < 50:
                        pair = mgr._run([params[0]], h)  # interleaved with f's replays
                    if i == 64:
                        # a tensor named by h's call, whose storage another
                        # object keeps: once it goes (65), its name is polled
                        # by its storage, which dies at 67, among f's replays
                        z = Tensor([4, 4])
                        keep = Tensor([4, 4], storage=z._storage)
                        mgr._run([z], h)
                    if i == 65:
                        z = None
                    if i == 67:
                        keep = None
                del y, pair
                # What the session holds once the deferred replays are
                # written: the same names, in the same order, everywhere.
                # (Not by_obj: it is keyed by id(), and a dead object's id
                # is given to the next object made, which differs.)
                with rec.lock:
                    rec._settle()
                ss = rec.session
                state = (list(ss.entries), [list(v) for v in ss.by_storage.values()], list(ss._watch),
                         sorted(ss.by_view.values()), ss.order, sorted(ss.names_used), dict(ss.counts),
                         [(e.name, e.order) for e in ss.entries.values()])
        self.assertIsNone(rec.error)
        return rec, deferred[0], state

    def test_deferred_replays_write_what_the_general_path_writes(self):
        self.deferred_against_general()

    def test_deferred_replays_with_the_check_before_211(self):
        from unittest import mock
        with mock.patch.object(Node, "before_211", True):
            self.deferred_against_general()

    def test_cgtrace_defer_0_takes_the_general_path(self):
        from unittest import mock
        with mock.patch.dict(os.environ, {"CGTRACE_DEFER": "0"}):
            rec, deferred, _ = self.scenario(os.path.join(self.dir.name, "general.cgt.jsonl"))
        self.assertEqual(deferred, 0)
        self.assertEqual(rec.armings, 0)

    def test_refcount_rules_read_from_the_check(self):
        t = Tensor([2])
        for before, want in ((False, cgtrace.USE_COUNT), (True, cgtrace.REFCOUNT)):
            node = Node(None, None)
            node.before_211 = before
            node.cache_outputs([t])
            self.assertEqual(cgtrace._refcount_rule(node.outputs_weakrefs[0]), want)
        other = StorageWeakRefWrapper(t, lambda: sys.getrefcount(t) == 4)
        self.assertEqual(cgtrace._refcount_rule(other), cgtrace.NO_RULE)
        self.assertEqual(cgtrace._refcount_rule(StorageWeakRefWrapper(t)), cgtrace.NO_RULE)

    def named_inputs_scenario(self, path):
        """A loop over new inputs with 40 parameters, through what changes a
        named input: a parameter's data replaced, a parameter named again
        (another function's output), a new parameter object, a tensor
        without storage,
        a view of the input kept, the same input twice, an int input, the
        input dying inside the call, a call that raises. Returns the trace's
        text."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=list(range(1, 41)))
        g = mgr.add(1)
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        mgr.models[1] = lambda ins: [ins[0]]  # (its warmup returns its input as is)
        params = [Tensor([4, 4]) for _ in range(40)]
        kept = []
        nostore = NoStorage([4])
        with cgtrace.record(path) as rec:
            y = x = None
            for i in range(60):
                cgt.mark_step_begin()
                _invocation()
                if i == 10:
                    st = Storage(64)
                    st._users.add(params[7])
                    params[7]._storage = st  # `p.data = new`: the object keeps, its data moves
                if i == 15:
                    out, = mgr._run([params[3]], g)  # a parameter named again, as g's output
                    out = None
                if i == 20:
                    params[30] = Tensor([4, 4])
                if i != 31:
                    x = Tensor([2, 4])  # (31: the same input again)
                if i == 25:
                    kept.append(Tensor([4], storage=x._storage))
                ins = [x] + params
                if i == 35:
                    ins.append(3)
                if 36 <= i < 39:
                    ins.append(nostore)  # a tensor without storage, left out
                if 40 <= i < 45:
                    x = None  # the new input dies inside the call
                if i == 50:
                    mgr.fail.add(0)
                if i == 51:
                    mgr.fail.discard(0)
                try:
                    y, = mgr._run(ins, f)
                except RuntimeError:
                    pass
                ins = None
            del y, x
        self.assertIsNone(rec.error)
        with open(path) as fh:
            return fh.read()

    def test_inputs_named_by_the_last_calls_entries_as_one_by_one(self):
        """_before_call names a call's inputs by the entries that named the
        last call's, checked in passes over all of them (Recorder.
        _by_last_entries), and the rest one by one: the same trace as one
        by one throughout."""
        from unittest import mock
        seen = []
        real = cgtrace._FACT_OF

        def counted(e):
            seen.append(e)
            return real(e)

        with mock.patch.object(cgtrace.calls, "_FACT_OF", counted):  # (where _before_call reads it)
            by_last = self.named_inputs_scenario(os.path.join(self.dir.name, "last.cgt.jsonl"))
        self.assertGreater(len(seen), 40 * 40)  # the passes named most calls' parameters
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        with mock.patch.object(cgtrace.Recorder, "_by_last_entries", False):
            one_by_one = self.named_inputs_scenario(os.path.join(self.dir.name, "one.cgt.jsonl"))
        strip = lambda t: t.split("\n", 1)[1]  # (the header names its file)
        self.assertEqual(strip(by_last), strip(one_by_one))
        self.assertEqual(strip(by_last).count('"op": "param"'), 42)  # 40, the new data, the new object

    def test_probe_judges_a_cached_output_as_the_tree_does(self):
        """_Probe.alive answers a cached output's liveness from its refcount
        when that says alive for sure, and asks the tree's wrapper
        otherwise: the answer is the wrapper's for every count of Python
        holders, with c10 holding the tensor or not, under either check."""
        for before in (False, True):
            for holders in (0, 1, 2, 3):
                for uses in (1, 2):
                    with self.subTest(before_211=before, holders=holders, c10_uses=uses):
                        node = Node(None, None)
                        node.before_211 = before
                        node.cache_outputs([Tensor([2])])
                        out = node.cached_tensor_outputs[0]
                        w = node.outputs_weakrefs[0]
                        probe = cgtrace._Probe(weakref.ref(out), StorageWeakRef(out.untyped_storage()))
                        probe.tree_ref = w
                        out._c10_uses = uses
                        keep = [out] * holders
                        out = None
                        if uses > 1 and not before and holders == 0:
                            continue  # (the 2.11 check asserts a Python holder while c10 holds one)
                        self.assertEqual(probe.alive(), not w.expired())
                        del keep

    def deferred_against_general(self):
        on = os.path.join(self.dir.name, "on.cgt.jsonl")
        off = os.path.join(self.dir.name, "off.cgt.jsonl")
        rec, deferred, state_on = self.scenario(on)
        self.assertGreater(deferred, 60)  # most replays: the test compares something
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        from unittest import mock
        with mock.patch.object(cgtrace.Recorder, "_defer", False):
            _, none, state_off = self.scenario(off)
        self.assertEqual(none, 0)
        self.assertEqual(state_on, state_off)
        with open(on) as a, open(off) as b:
            got, want = a.read().splitlines(), b.read().splitlines()
        self.assertEqual(len(got), len(want))
        for i, (a, b) in enumerate(zip(got[1:], want[1:])):  # (the header names the file)
            self.assertEqual(a, b, "line %d" % (i + 2))
        recs = [json.loads(x) for x in got[1:]]
        ops = [r["op"] for r in recs]
        for op in ("read", "reset", "config", "note"):
            self.assertIn(op, ops)
        self.assertIn("error", [k for r in recs if r["op"] == "expect" for k in r])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(on), [])

    def test_a_replay_entering_run_twice_is_recorded_as_one_call(self):
        # 2.11's _run ends the path and calls run() again before a root's
        # replay: the recorder's _run wrapper is entered a second time
        # inside the first, deferred or not; the trace is the one a tree
        # entering it once gives.
        twice = os.path.join(self.dir.name, "twice.cgt.jsonl")
        once = os.path.join(self.dir.name, "once.cgt.jsonl")
        _, deferred, state_twice = self.scenario(twice)
        self.assertGreater(deferred, 60)
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        _, deferred_once, state_once = self.scenario(once, recurse=False)
        self.assertEqual(deferred_once, deferred)
        self.assertEqual(state_twice, state_once)
        with open(twice) as a, open(once) as b:
            self.assertEqual(a.read().splitlines()[1:], b.read().splitlines()[1:])

    @staticmethod
    def one_function():
        """A manager handing out cached replay outputs, one function of a
        static parameter and an input, and those two tensors."""
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        f = mgr.add(0, static=[0])
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        return mgr, f, Tensor([4, 4]), Tensor([2, 4])

    def steady_with_writes(self, path):
        """Replays of one function, deferred, with knobs set between them
        (set, config.patch entered and left, mock.patch.object), each
        after several deferred calls."""
        from unittest import mock
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        ind = sys.modules["torch._inductor.config"]
        dyn = sys.modules["torch._dynamo.config"]
        mgr, f, p, x = self.one_function()
        with cgtrace.record(path) as rec, contextlib.ExitStack() as patched:
            y = None
            for i in range(60):
                cgt.mark_step_begin()
                _invocation()
                if i == 10:
                    ind.triton.cudagraph_unexpected_rerecord_limit = 5
                if i == 20:
                    patched.enter_context(ind.patch("triton.cudagraph_unexpected_rerecord_limit", 7))
                if i == 30:
                    patched.close()
                if i == 40:
                    patched.enter_context(mock.patch.object(dyn, "recompile_limit", 2))
                if i == 50:
                    patched.close()
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        return rec

    def test_config_writes_between_deferred_replays(self):
        on = os.path.join(self.dir.name, "on.cgt.jsonl")
        off = os.path.join(self.dir.name, "off.cgt.jsonl")
        rec = self.steady_with_writes(on)
        self.assertIsNotNone(rec._knobs.homes)  # the writes are counted, not probed
        self.assertGreater(rec.short_calls, 40)
        remove_fake_torch(self.saved)
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        from unittest import mock
        with mock.patch.object(cgtrace.Recorder, "_defer", False):
            self.steady_with_writes(off)
        with open(on) as a, open(off) as b:
            got, want = a.read().splitlines()[1:], b.read().splitlines()[1:]
        self.assertEqual(got, want)
        recs = [json.loads(x) for x in got]
        calls = 0
        before = []
        for r in recs:
            if r["op"] == "call":
                calls += 1
            elif r["op"] == "config":
                before.append((calls + 1, r))
        self.assertEqual(before, [
            (11, {"op": "config", "rerecord_limit": 5}), (21, {"op": "config", "rerecord_limit": 7}),
            (31, {"op": "config", "rerecord_limit": 5}), (41, {"op": "config", "recompile_limit": 2}),
            (51, {"op": "config", "recompile_limit": 8})])

    def test_lean_path_armed_once_in_64_calls(self):
        """A steady loop with a step before each call: every call but the
        first few is deferred, and _steady (the plan's lookup and checks,
        the knobs' probes) runs once in 64 calls, at the 64th step, where
        the 64th call's probes are read as well."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, f, p, x = self.one_function()
        path = os.path.join(self.dir.name, "lean.cgt.jsonl")
        with cgtrace.record(path) as rec:
            y = None
            for _ in range(640):
                cgt.mark_step_begin()
                _invocation()
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        self.assertGreaterEqual(rec.short_calls, 636)
        self.assertGreaterEqual(rec.armings, 10)  # (at least once in 64 calls: the probes are read)
        self.assertLessEqual(rec.armings, 12)

    def test_functions_alternating_are_each_armed(self):
        """Two functions called in turn (a forward and a backward, a graph
        break's two graphs) are each deferred through their own arming:
        _steady runs for one only at a 64th step or when the knobs are
        due, never because the other was called between."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, f, p, x = self.one_function()
        h = mgr.add(1, static=[0])
        mgr.models[1] = lambda ins: [Tensor([3])]
        path = os.path.join(self.dir.name, "two.cgt.jsonl")
        with cgtrace.record(path) as rec:
            y = z = None
            for _ in range(256):
                cgt.mark_step_begin()
                _invocation()
                y, = mgr._run([p, x], f)
                z, = mgr._run([p], h)
            del y, z
        self.assertIsNone(rec.error)
        self.assertGreaterEqual(rec.short_calls, 500)
        self.assertLessEqual(rec.armings, 40)
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(path), [])

    def hooked_replay(self, mgr, f, hook):
        """Makes f's node run hook() inside every replay of it, as the tree
        hands out its outputs."""
        class Hooked(list):
            def __iter__(self):
                hook()
                return list.__iter__(self)

        node = mgr.roots[f][0]
        node.cached_tensor_outputs = Hooked(node.cached_tensor_outputs)

    def other_thread_during_a_steady_call(self, mgr, f, p, x, other):
        """Four steady calls of f(p, x), then a fifth during whose replay
        another thread runs other(y) (y: the calls' output) while this one
        holds the recorder's lock; returns once both are done."""
        import threading
        import time
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        in_call, started = threading.Event(), threading.Event()
        y = None
        for _ in range(4):
            cgt.mark_step_begin()
            _invocation()
            y, = mgr._run([p, x], f)

        def during():
            if not in_call.is_set():
                in_call.set()
                self.assertTrue(started.wait(5))
                time.sleep(0.05)  # (the other thread is waiting for the lock by now)

        def run_other():
            self.assertTrue(in_call.wait(5))
            started.set()
            other(y)

        self.hooked_replay(mgr, f, during)
        t = threading.Thread(target=run_other)
        t.start()
        cgt.mark_step_begin()
        _invocation()
        y, = mgr._run([p, x], f)
        t.join(5)
        self.assertFalse(t.is_alive())

    def test_read_from_another_thread_during_a_steady_call(self):
        """A host read made by another thread while a deferred replay runs
        is the program's (the steady call is not that thread's), and is
        recorded after the call, with the name the call gave the output."""
        mgr, f, p, x = self.one_function()
        path = os.path.join(self.dir.name, "thread.cgt.jsonl")
        with cgtrace.record(path) as rec:
            self.other_thread_during_a_steady_call(mgr, f, p, x, lambda y: y.item())
        self.assertIsNone(rec.error)
        self.assertGreater(rec.short_calls, 0)
        with open(path) as fh:
            recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
        reads = [i for i, r in enumerate(recs) if r["op"] == "read"]
        self.assertEqual(len(reads), 1, recs)
        calls = [r for r in recs[:reads[0]] if r["op"] == "call"]
        self.assertEqual(len(calls), 5)  # (after the fifth call, in which it was made)
        self.assertEqual(recs[reads[0]]["name"], calls[-1]["out"][0])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(path), [])

    def test_call_from_another_thread_during_a_steady_call_is_recorded(self):
        """A call of the tree by another thread while a deferred replay runs
        is the program's own call, not the steady call's re-entry: it waits
        for the steady call, then is recorded."""
        mgr, f, p, x = self.one_function()
        g = mgr.add(1)
        path = os.path.join(self.dir.name, "thread-call.cgt.jsonl")
        got = []
        with cgtrace.record(path) as rec:
            self.other_thread_during_a_steady_call(mgr, f, p, x, lambda y: got.append(mgr._run([Tensor([3])], g)))
        self.assertIsNone(rec.error)
        self.assertEqual(len(got), 1)
        with open(path) as fh:
            recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
        fns = [r["fn"] for r in recs if r["op"] == "call"]
        self.assertEqual(len(fns), 6, fns)
        self.assertEqual(fns[:5], fns[:1] * 5)  # (f's five calls, then the other thread's)
        self.assertNotEqual(fns[5], fns[0])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(path), [])

    def test_call_reentering_a_steady_call_passes_through(self):
        """A call of the tree made inside a deferred replay (the tree's own
        re-entry) is part of that call: not recorded as one of its own."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        mgr, f, p, x = self.one_function()
        g = mgr.add(1)
        path = os.path.join(self.dir.name, "reenter.cgt.jsonl")
        inner = []
        with cgtrace.record(path) as rec:
            y = None
            for i in range(6):
                cgt.mark_step_begin()
                _invocation()
                if i == 4:
                    self.hooked_replay(mgr, f, lambda: inner.append(mgr._run([Tensor([3])], g)))
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        self.assertEqual(len(inner), 2)  # (calls 5 and 6 replayed f)
        with open(path) as fh:
            recs = [json.loads(line) for line in fh.read().splitlines()[1:]]
        fns = [r["fn"] for r in recs if r["op"] == "call"]
        self.assertEqual(fns, fns[:1] * 6)

    def test_config_write_past_setattr_is_seen_within_64_calls(self):
        """A knob's entry written directly (no __setattr__ to count it) is
        seen by the probes the steady path reads every 64th call: late, by
        less than 64 calls, never lost (no steps here: no 64th step)."""
        ind = sys.modules["torch._inductor.config"]
        mgr, f, p, x = self.one_function()
        path = os.path.join(self.dir.name, "direct.cgt.jsonl")
        with cgtrace.record(path) as rec:
            y = None
            for i in range(150):
                _invocation()
                if i == 5:
                    ind._config["triton.cudagraph_unexpected_rerecord_limit"].user_override = 9
                y, = mgr._run([p, x], f)
            del y
        self.assertIsNone(rec.error)
        self.assertGreater(rec.short_calls, 100)
        with open(path) as fh:
            recs = [json.loads(x) for x in fh.read().splitlines()[1:]]
        calls, at = 0, None
        for r in recs:
            if r["op"] == "call":
                calls += 1
            elif r == {"op": "config", "rerecord_limit": 9}:
                at = calls + 1
        self.assertIsNotNone(at)
        self.assertGreater(at, 6)  # (late: the count saw no write)
        self.assertLessEqual(at, 6 + 64)

    def test_refcount_rule_is_read_from_the_check(self):
        """The poll without torch's Python holds only for a check that
        compares the refcount with 2, as 2.11's does."""
        node = Node(Wrapped(FunctionID(0)), None)
        node.cache_outputs([Tensor([2])])
        self.assertTrue(cgtrace._refcount_rule(node.outputs_weakrefs[0]))

        def three(i):
            return sys.getrefcount(node.cached_tensor_outputs[i]) in (2, 3)

        other = StorageWeakRefWrapper(node.cached_tensor_outputs[0], functools.partial(three, 0))
        self.assertFalse(cgtrace._refcount_rule(other))
        self.assertFalse(cgtrace._refcount_rule(StorageWeakRefWrapper(node.cached_tensor_outputs[0])))
        # and the count it reads is the tree's: 2 once only the cache holds it
        ref = weakref.ref(node.cached_tensor_outputs[0])
        self.assertEqual(sys.getrefcount(ref()), node.get_output_refcount(0))
        held = ref()
        self.assertEqual(sys.getrefcount(ref()), 3)
        self.assertFalse(node.outputs_weakrefs[0].extra_ref_check())
        del held
        self.assertTrue(node.outputs_weakrefs[0].extra_ref_check())


class FollowTest(unittest.TestCase):
    """A followed trace is written as the program runs, one flush per
    event, and holds what the whole-file trace holds: the defs just before
    the calls that need them, the counts as a closing note."""

    def setUp(self):
        self.saved = install_fake_torch()
        MarkStepBox.mark_step_counter = 0
        self.dir = tempfile.TemporaryDirectory()
        self.cgt = sys.modules["torch._inductor.cudagraph_trees"]

    def tearDown(self):
        remove_fake_torch(self.saved)
        self.dir.cleanup()

    def program(self, path, follow, seen=None):
        mgr = CUDAGraphTreeManager()
        mgr.cache_replays = True
        fa, fb = mgr.add(0, static=[0]), mgr.add(1)
        mgr.models[0] = lambda ins: [Tensor([2, 4])]
        w = Tensor([4, 4])
        with cgtrace.record(path, name="followed", follow=follow) as rec:
            for i in range(6):
                self.cgt.mark_step_begin()
                y, = mgr._run([w, Tensor([2, 4])], fa)
                if seen is not None and i == 0:
                    seen.append(self.lines(path))
                z = mgr._run([y], fb)
                if i == 3:
                    y.item()
                del y, z
        self.assertIsNone(rec.error)

    @staticmethod
    def lines(path):
        with open(path, encoding="utf-8") as fh:
            return [json.loads(x) for x in fh if x.strip()]

    def test_streamed_trace_holds_the_same_records(self):
        whole = os.path.join(self.dir.name, "whole.cgt.jsonl")
        streamed = os.path.join(self.dir.name, "streamed.cgt.jsonl")
        self.program(whole, False)
        MarkStepBox.mark_step_counter = 0
        seen = []
        self.program(streamed, True, seen)
        # written while the program ran: the first call, its expect, and
        # the del of its input, which died inside it
        first = seen[0]
        self.assertEqual([r["op"] for r in first[1:]], ["step", "param", "tensor", "def", "call", "expect", "del"])
        self.assertEqual(first[-1]["names"], ["in"])
        w, st = self.lines(whole), self.lines(streamed)
        self.assertEqual(st[0]["meta"]["streamed"], True)
        self.assertNotIn("recorded", st[0]["meta"])
        body = [r for r in st[1:] if r["op"] not in ("def", "note")]
        self.assertEqual(body, [r for r in w[1:] if r["op"] not in ("def", "note")])
        self.assertEqual([r for r in st[1:] if r["op"] == "def"], [r for r in w[1:] if r["op"] == "def"])
        # each def lands right before the first call of its function
        for i, r in enumerate(st[1:], start=1):
            if r["op"] == "call":
                self.assertIn(r["fn"], [d["fn"] for d in st[1:i] if d["op"] == "def"])
        note = st[-1]["text"]
        self.assertTrue(note.startswith("cgtrace recorded: "), note)
        self.assertEqual(json.loads(note[len("cgtrace recorded: "):])["calls"], w[0]["meta"]["recorded"]["calls"])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(streamed), [])

    @unittest.skipUnless(hasattr(os, "mkfifo"), "no named pipes here")
    def test_named_pipe_is_followed(self):
        """A named pipe is streamed to without being asked: a reader gets
        the records of a call before the recording ends."""
        import threading
        fifo = os.path.join(self.dir.name, "trace.pipe")
        os.mkfifo(fifo)
        got, first_call = [], threading.Event()

        def reader():
            with open(fifo, encoding="utf-8") as fh:
                for line in fh:
                    got.append(json.loads(line))
                    if got[-1].get("op") == "call":
                        first_call.set()

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        mgr = CUDAGraphTreeManager()
        fid = mgr.add(0)
        with cgtrace.record(fifo) as rec:
            self.assertTrue(rec.follow)
            mgr._run([Tensor([2])], fid)
            self.assertTrue(first_call.wait(10), "no call record reached the reader during the recording")
            mgr._run([Tensor([2])], fid)
        t.join(10)
        self.assertIsNone(rec.error)
        self.assertEqual([r["op"] for r in got if r.get("op") == "call"], ["call", "call"])
        self.assertEqual(got[0]["cgtviz"], 1)

    def test_unopenable_stream_falls_back_to_the_whole_file(self):
        path = os.path.join(self.dir.name, "no", "such", "dir", "t.cgt.jsonl")
        mgr = CUDAGraphTreeManager()
        fid = mgr.add(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with cgtrace.record(path, follow=True) as rec:
                out = mgr._run([Tensor([2])], fid)
        said = [str(w.message) for w in caught]
        self.assertEqual(len(said), 2, said)
        self.assertIn("cannot stream the trace", said[0])
        self.assertIn("could not write the trace", said[1])  # the directory is missing for that too
        self.assertIn("writing", rec.error)
        self.assertEqual(out[0].shape, (2,))

    def test_environment_asks_for_follow(self):
        os.environ["CGTRACE_FOLLOW"] = "1"
        try:
            rec = cgtrace.record(os.path.join(self.dir.name, "e.cgt.jsonl"))
        finally:
            del os.environ["CGTRACE_FOLLOW"]
        self.assertTrue(rec.follow)
        self.assertFalse(cgtrace.record(os.path.join(self.dir.name, "e.cgt.jsonl")).follow)


class RecorderTest(TraceFileTest):
    trace_name = "r.cgt.jsonl"

    def setUp(self):
        global MGR, FOO, FEE
        super().setUp()
        MGR = CUDAGraphTreeManager()
        FOO = MGR.add(0)
        FEE = MGR.add(1)

    def test_seed_program_shape(self):
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path, name="fake seed"):
            for _ in range(3):
                cgt.mark_step_begin()
                inp = Tensor([4])
                a, = foo(inp)
                del a
                b, = fee(inp)
            MarkStepBox.mark_step_counter -= 1  # a step the wrapper did not see
            c, = foo(inp)
        # patches are gone after the recording
        self.assertIs(cgt.mark_step_begin, _mark_step_begin)
        self.assertEqual(CUDAGraphTreeManager.__dict__["_run"].__qualname__, "CUDAGraphTreeManager._run")
        header, recs = self.records()
        self.assertEqual(header["name"], "fake seed")
        self.assertEqual(header["meta"]["torch"], "0.0-fake")
        self.assertEqual(header["config"], {"warmup_runs": 1, "rerecord_limit": 128, "recompile_limit": 8,
                                            "automatic_dynamic_shapes": True, "assume_static_by_default": True})
        self.assertEqual([r["fn"] for r in recs if r["op"] == "def"], ["foo_0", "fee_1"])
        acts = [r["action"] for r in recs if r["op"] == "expect"]
        self.assertEqual(acts, ["warmup", "warmup", "record", "record", "replay", "replay", "replay"])
        self.assertEqual(sum(r["op"] == "step" for r in recs), 4)
        nodes = [r["node"] for r in recs if r["op"] == "expect" and "node" in r]
        self.assertEqual(nodes[0], {"fn": "foo_0", "parent_fn": None})
        # `del a` shows before the fee call that follows it
        ops = [r["op"] for r in recs if r["op"] != "def"]
        self.assertEqual(ops[:7], ["step", "tensor", "call", "expect", "del", "call", "expect"])
        self.assertEqual(header["meta"]["recorded"]["trees"]["0"]["nodes"], 2)

    def test_recorder_keeps_no_manager_node_or_tensor_alive(self):
        """While a recording runs, what the program lets go of dies: the tree
        manager (with its graphs and pool), its nodes and the tensors. PyTorch's
        own tests assert no cudagraph segment is left after
        torch._dynamo.reset() inside the recorded tearDown."""
        global MGR, FOO
        import gc
        with cgtrace.record(self.path):
            mgr = MGR = CUDAGraphTreeManager()
            FOO = mgr.add(0)
            for _ in range(3):
                sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin()
                inp = Tensor([4])
                a, = foo(inp)
            refs = [weakref.ref(mgr), weakref.ref(mgr.roots[FOO][0]), weakref.ref(inp), weakref.ref(a)]
            del mgr, inp, a
            MGR = FOO = None
            gc.collect()
            self.assertEqual([r() is None for r in refs], [True] * len(refs))

    def test_param_data_swapped_is_a_new_tensor(self):
        """`m.weight.data = torch.rand(...)` between calls (PyTorch's
        test_unstable_ptr): the same Python object over a new storage is a
        new param in the trace, the old name deleted, so the replay sees the
        static input's address change as PyTorch does."""
        global FOO
        FOO = MGR.add(0, static=(0,))
        w = Tensor([4])
        with cgtrace.record(self.path):
            for _ in range(3):
                a, = foo(w)
                del a
                w._storage = Storage(16)  # w.data = new data
        _, recs = self.records()
        calls = [r["args"][0] for r in recs if r["op"] == "call"]
        self.assertEqual(len(set(calls)), 3, calls)
        params = [r["name"] for r in recs if r["op"] == "param"]
        self.assertEqual(params, calls)
        # The old name dies after the new data's record: both lived at once.
        order = [(r["op"], r.get("name") or r.get("names")) for r in recs if r["op"] in ("param", "del")]
        self.assertLess(order.index(("param", calls[1])), order.index(("del", [calls[0]])))
        self.assertLess(order.index(("param", calls[2])), order.index(("del", [calls[1]])))

    def test_backward_without_cudagraphs(self):
        """A compiled backward that skipped cudagraphs calls the manager's
        set_to_running_backward() and runs eagerly: a skipped_backward record."""
        with cgtrace.record(self.path):
            a, = foo(Tensor([4]))
            MGR.set_to_running_backward()
        _, recs = self.records()
        self.assertEqual([r["op"] for r in recs if r["op"] in ("call", "skipped_backward")],
                         ["call", "skipped_backward"])
        self.assertEqual(CUDAGraphTreeManager.__dict__["set_to_running_backward"].__qualname__,
                      "CUDAGraphTreeManager.set_to_running_backward")

    def test_two_devices_two_trees(self):
        """One tree manager per device (issue 18): calls on cuda:1 go to its
        own manager; the trace has two devices, the tensors and the expects
        name their device, and a reset of one device's manager names it."""
        global MGR, FOO
        mgr1 = CUDAGraphTreeManager()
        mgr1.device_index = 1
        bar = mgr1.add(0)

        class Dev1:
            type, index = "cuda", 1

        def on1(x):
            _invocation()
            return mgr1._run([x], bar)

        with cgtrace.record(self.path):
            for _ in range(3):
                sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin()
                a, = foo(Tensor([4]))
                t = Tensor([4])
                t.device = Dev1()
                b, = on1(t)
            MGR = CUDAGraphTreeManager()  # device 0's manager ended
            FOO = MGR.add(0)
            c, = foo(Tensor([4]))
        header, recs = self.records()
        self.assertEqual(header["devices"], 2)
        self.assertEqual(sorted({r.get("device", 0) for r in recs if r["op"] == "tensor"}), [0, 1])
        exp = [(r["action"], r.get("device", 0)) for r in recs if r["op"] == "expect"]
        self.assertEqual(exp, [("warmup", 0), ("warmup", 1), ("record", 0), ("record", 1),
                               ("replay", 0), ("replay", 1), ("warmup", 0)])
        self.assertIn({"op": "reset", "device": 0}, recs)
        self.assertEqual(header["meta"]["recorded"]["trees"]["1"]["nodes"], 1)

    def test_resets_of_the_trees(self):
        """torch._dynamo.reset() (reset_cudagraph_trees) is a reset record for
        every device; a new manager on a device without it (its container
        let the old one go) is a reset of that device. The counters after a
        reset start again."""
        global MGR, FOO, FEE
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path):
            cgt.mark_step_begin()
            a, = foo(Tensor([4]))
            cgt.reset_cudagraph_trees()
            MGR = CUDAGraphTreeManager()
            FOO, FEE = MGR.add(0), MGR.add(1)
            b, = foo(Tensor([4]))
            MGR = CUDAGraphTreeManager()  # no reset seen: the manager changed
            FOO = MGR.add(0)
            c, = foo(Tensor([4]))
            cgt.mark_step_begin()
        self.assertIs(cgt.reset_cudagraph_trees, _reset_cudagraph_trees)
        _, recs = self.records()
        ops = [(r["op"], r.get("device")) for r in recs if r["op"] in ("reset", "step", "call")]
        self.assertEqual(ops, [("step", None), ("call", None), ("reset", None), ("call", None),
                               ("reset", 0), ("call", None), ("step", None)])
        self.assertEqual(len({r["fn"] for r in recs if r["op"] == "call"}), 3)

    def test_counter_back_at_zero_is_a_reset(self):
        """A reset_cudagraph_trees the recorder did not wrap (imported by name
        before the recording) still shows: the mark-step counter is at 0."""
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        with cgtrace.record(self.path):
            cgt.mark_step_begin()
            a, = foo(Tensor([4]))
            _reset_cudagraph_trees()
            b, = foo(Tensor([4]))
        _, recs = self.records()
        ops = [r["op"] for r in recs if r["op"] in ("reset", "step", "call")]
        self.assertEqual(ops, ["step", "call", "reset", "call"])

    def test_invocation_from_dynamo_generation(self):
        """A graph break's resume function runs in the same invocation as the
        graph before it; each top-level call is a new one."""
        gen = sys.modules["torch._dynamo.mutation_guard"].GenerationTracker
        gen.generation = 41
        with cgtrace.record(self.path):
            b, = foo_with_break(Tensor([4]))
            c, = foo(Tensor([4]))
        _, recs = self.records()
        calls = [r for r in recs if r["op"] == "call"]
        # FOO is named after the frame of its first call (foo_with_break).
        self.assertEqual([(r["fn"], r["invocation"]) for r in calls],
                         [("foo_with_break_0", 42), ("foo_with_break_1", 42), ("foo_with_break_0", 43)])
        self.assertFalse([r for r in recs if r["op"] == "note"])

    def test_dtype_and_slice_of_base(self):
        """The torch side reads dtype, element size, storage size, offset,
        strides and _base: an int64 column slice becomes a base tensor and a
        strided view of it."""
        base = Tensor([3, 4], dtype=int64)
        with cgtrace.record(self.path):
            out, = foo(base[:, 2])
        _, recs = self.records()
        t, v = [r for r in recs if r["op"] in ("tensor", "eager")]
        self.assertEqual((t["name"], t["shape"], t["dtype"]), ("base", [3, 4], "int64"))
        self.assertEqual(v, {"op": "eager", "out": "view", "k": "view", "a": "base", "shape": [3],
                             "offset": 2, "strides": [4]})

    def test_cudagraph_or_error_raise_keeps_the_mutation(self):
        """triton.cudagraph_or_error makes the tree raise where it would skip
        cudagraphs (PyTorch's test_cudagraph_or_error: a function mutating
        its plain input): the call returned nothing, yet its def still says
        which input it mutates, and the header says the knob is on."""
        global FOO
        ind = sys.modules["torch._inductor.config"]
        ind.triton.cudagraph_or_error = True
        FOO = MGR.add(0, mutated=(0,))
        MGR.fail.add(0)
        with cgtrace.record(self.path):
            with self.assertRaises(RuntimeError):
                foo(Tensor([4]))
        header, recs = self.records()
        self.assertIs(header["config"].get("cudagraph_or_error"), True)
        d = next(r for r in recs if r["op"] == "def")
        self.assertEqual([st["out"] for st in d["body"] if st["out"] in d["params"]], d["params"][:1], d)
        self.assertEqual(d["static"], [])
        self.assertEqual(cgtrace.settings_from_knobs({"triton.cudagraph_or_error": False}),
                         {"cudagraph_or_error": False})

    def test_settings_from_config_and_their_changes(self):
        """The header holds PyTorch's settings in force at the start; a knob a
        test patches mid-program becomes a `config` record before the next
        call; knobs the format has no key for are noted."""
        ind = sys.modules["torch._inductor.config"]
        dyn = sys.modules["torch._dynamo.config"]
        ind.triton.skip_cudagraph_warmup = True
        ind.triton.cudagraph_support_input_mutation = True
        ind.triton.cudagraph_dynamic_shape_warn_limit = 8
        ind.triton.force_cudagraph_sync = False
        dyn.inline_inbuilt_nn_modules = False
        dyn.recompile_limit = 3
        with cgtrace.record(self.path):
            foo(Tensor([4]))
            ind.triton.skip_cudagraph_warmup = False
            ind.triton.cudagraph_unexpected_rerecord_limit = 0
            dyn.automatic_dynamic_shapes = False
            foo(Tensor([4]))
            foo(Tensor([4]))  # nothing changed: no record
            ind.triton.cudagraph_dynamic_shape_warn_limit = 2
            ind.triton.force_cudagraph_sync = True
            dyn.inline_inbuilt_nn_modules = True
            # knobs without a format key are looked at on steps and first calls
            sys.modules["torch._inductor.cudagraph_trees"].mark_step_begin()
            foo(Tensor([4]))
        header, recs = self.records()
        self.assertEqual(header["config"], {"warmup_runs": 0, "rerecord_limit": 128, "recompile_limit": 3,
                                            "support_input_mutation": True, "automatic_dynamic_shapes": True,
                                            "assume_static_by_default": True,
                                            "inline_inbuilt_nn_modules": False,
                                            "dynamic_shape_warn_limit": 8})
        self.assertEqual(header["meta"]["torch_config"]["triton.force_cudagraph_sync"], False)
        ops = [r["op"] for r in recs if r["op"] != "def"]
        self.assertEqual(ops.count("config"), 2)
        cfgs = [r for r in recs if r["op"] == "config"]
        self.assertEqual(cfgs[0], {"op": "config", "warmup_runs": 1, "rerecord_limit": 0,
                                   "automatic_dynamic_shapes": False})
        self.assertEqual(cfgs[1], {"op": "config", "rerecord_limit": cgtrace.UNBOUNDED,
                                   "dynamic_shape_warn_limit": 2, "inline_inbuilt_nn_modules": True})
        i = recs.index(cfgs[0])
        # in force from the second call on: no call between them
        self.assertEqual([r["op"] for r in recs[:i]].count("call"), 1)
        notes = [r["text"] for r in recs if r["op"] == "note"]
        self.assertEqual(notes, ["torch config triton.force_cudagraph_sync changed to True"])

    def test_host_reads_of_tree_outputs(self):
        """.item(), print, .cpu() of a tree output (or a view of one) are
        `read` records with what PyTorch said; reads of other tensors and
        the recorder's own value reads are not."""
        x = Tensor([2, 2], values=[1.0, 2.0, 3.0, 4.0])
        originals = {m: Tensor.__dict__.get(m) for m in cgtrace._READ_METHODS}
        with cgtrace.record(self.path):
            self.assertIsNot(Tensor.__dict__["item"], originals["item"])
            y, = foo(x)
            y.item()
            x.item()  # an eager tensor: not a read the trace needs
            with contextlib.redirect_stdout(io.StringIO()):
                print(y[:, 1])  # a view of the output, over its storage
            y.overwritten = True
            with self.assertRaisesRegex(RuntimeError, "overwritten"):
                y.cpu()
        # the patches are gone: the class is as it was (methods it lacked stay absent)
        self.assertEqual({m: Tensor.__dict__.get(m) for m in cgtrace._READ_METHODS}, originals)
        _, recs = self.records()
        reads = [(r, recs[i + 1]) for i, r in enumerate(recs) if r["op"] == "read"]
        self.assertEqual([(r["name"], e["error"]) for r, e in reads],
                         [("foo_0_c1_0", None), ("foo_0_c1_0", None),
                          ("foo_0_c1_0", "Error: accessing tensor output of CUDAGraphs that has been "
                                         "overwritten by a subsequent run.")])
        self.assertEqual(sum(r["op"] == "tensor" for r in recs), 1)

    def test_reads_inside_dynamo_tracing_are_the_original_method(self):
        """While Dynamo traces (is_compiling), a patched read method is the
        original method and nothing else: no read record, no recorder state
        touched (Dynamo would guard on it and break the graph)."""
        x = Tensor([2, 2], values=[1.0, 2.0, 3.0, 4.0])
        with cgtrace.record(self.path):
            y, = foo(x)
            COMPILING[0] = True
            try:
                y.item()
                y.cpu()
            finally:
                COMPILING[0] = False
            y.item()
        _, recs = self.records()
        self.assertEqual([r["name"] for r in recs if r["op"] == "read"], ["foo_0_c1_0"])

    def test_read_wrappers_kept_off_dynamos_frame_hook(self):
        """Dynamo's frame hook never converts the read wrappers (SKIP, and
        what they call of torch's as unrecorded: DEFAULT) nor any other
        code of the recorder, and all it calls (SKIP, SKIP): a read run
        from compiled bytecode (the bool() a graph break leaves) would
        otherwise be compiled with is_compiling() True and lost. Without a
        torch that can say so, the trace says reads may be missing."""
        CODE_STRATEGY.clear()
        config = sys.modules["torch._inductor.config"]
        with cgtrace.record(self.path):
            code = Tensor.item.__code__
            self.assertIs(Tensor.__bool__.__code__, code)
            counted = type(config).__setattr__.__code__
            self.assertIs(type(config).__delattr__.__code__, counted)
        entry = FrameExecStrategy(FrameAction.SKIP, FrameAction.DEFAULT)
        skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
        # the wrapper itself: what it calls of torch's is handed on as unrecorded
        self.assertEqual(CODE_STRATEGY.pop(code), entry)
        lambdas = [c for c in code.co_consts if isinstance(c, types.CodeType)]
        self.assertTrue(lambdas)  # (the storage's lambda a read asks for)
        for c in [counted, cgtrace.Session._died.__code__, cgtrace.Session.read_target.__code__,
                  cgtrace.Recorder._on_read.__code__, cgtrace.Recorder._settle.__code__, cgtrace._to_host.__code__,
                  cgtrace.encode_record.__code__] + lambdas:
            self.assertEqual(CODE_STRATEGY.get(c), skip, c)
        self.assertEqual(set(CODE_STRATEGY.values()), {skip})
        package = os.path.dirname(cgtrace.__file__)
        self.assertTrue(all(os.path.dirname(c.co_filename) == package for c in CODE_STRATEGY))
        _, recs = self.records()
        self.assertEqual([r for r in recs if r["op"] == "note"], [])
        saved = sys.modules.pop("torch._C._dynamo.eval_frame")
        try:
            with cgtrace.record(self.path):
                pass
        finally:
            sys.modules["torch._C._dynamo.eval_frame"] = saved
        _, recs = self.records()
        self.assertEqual([r["text"] for r in recs if r["op"] == "note"],
                         ["this torch cannot keep Dynamo's frame hook off the recorder's wrappers: host "
                          "reads run from compiled code (after a graph break) may be missing"])

    def test_unsupported_tensors_left_out_with_a_note(self):
        cpu = Tensor([3])
        cpu.device = CPU()
        x = Tensor([3])
        with cgtrace.record(self.path):
            MGR._run([cpu, x], FOO)
            MGR._run([cpu, x], FOO)
        _, recs = self.records()
        notes = [r["text"] for r in recs if r["op"] == "note"]
        self.assertEqual(notes, ["cgtrace left out a tensor it cannot record: cpu tensor"])
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual([c["args"] for c in calls], [["in"], ["in"]])

    def test_single_tensor_output_is_one_value(self):
        """cudagraphify'd models may return a bare tensor (test_dynamic_warmup):
        one output, not its rows."""
        def bare(new_inputs, function_id):
            outs = CUDAGraphTreeManager._outs(MGR, new_inputs)
            return outs[0]
        MGR.run_eager = bare
        with cgtrace.record(self.path):
            MGR._run([Tensor([2])], FOO)
        _, recs = self.records()
        self.assertEqual([len(r["out"]) for r in recs if r["op"] == "call"], [1])
        self.assertEqual(len([r for r in recs if r["op"] == "def"][0]["returns"]), 1)

    def test_recorder_failure_never_reaches_the_program(self):
        """A record the writer refuses stops the recording with a warning;
        the program's calls run once each and return their results."""
        real_add = cgtrace.Trace.add
        calls = []

        def add(trace, rec):
            if rec["op"] == "call" and len(calls) == 1:
                raise ValueError("call record: refused")
            if rec["op"] == "call":
                calls.append(rec)
            return real_add(trace, rec)

        cgtrace.Trace.add = add
        try:
            with self.assertWarnsRegex(RuntimeWarning, r"recording stopped \(.*refused \(at .*\w+\.py:\d+ in \w+ <- "):
                with cgtrace.record(self.path) as rec:
                    a, = foo(Tensor([4]))
                    b, = foo(Tensor([4]))
                    c, = foo(Tensor([4]))
        finally:
            cgtrace.Trace.add = real_add
        self.assertEqual(MGR.calls[FOO], 3)
        self.assertIn("call record: refused", rec.error)
        header, recs = self.records()
        self.assertIn("refused", header["meta"]["recorder_error"])
        # where it failed, innermost frame first, so a GPU run's log says it
        where = r"\(at test_recorder_fake_torch\.py:\d+ in add <- \w+\.py:\d+ in \w+( <- \w+\.py:\d+ in \w+)+\)$"
        self.assertRegex(rec.error, where)
        self.assertRegex(header["meta"]["recorder_error"], where)
        self.assertEqual(sum(r["op"] == "call" for r in recs), 1)
        self.assertIn("cgtrace stopped recording here", [r for r in recs if r["op"] == "note"][-1]["text"])

    def test_failure_under_warnings_as_errors_still_not_raised(self):
        """-W error turns warnings.warn into a raise: the recorder's warning
        then goes to stderr, and the program's call still returns."""
        real_add = cgtrace.Trace.add

        def add(trace, rec):
            if rec["op"] == "call":
                raise ValueError("call record: refused")
            return real_add(trace, rec)

        cgtrace.Trace.add = add
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()) as err:
                warnings.simplefilter("error")
                with cgtrace.record(self.path) as rec:
                    out, = foo(Tensor([4]))
        finally:
            cgtrace.Trace.add = real_add
        self.assertEqual(out.shape, (4,))
        self.assertIn("recording stopped", err.getvalue())
        self.assertIn("refused", rec.error)

    def test_unwritable_trace_warns(self):
        path = os.path.join(self.dir.name, "no", "such", "dir", "t.cgt.jsonl")
        with self.assertWarnsRegex(RuntimeWarning, "could not write"):
            with cgtrace.record(path) as rec:
                foo(Tensor([4]))
        self.assertIn("writing", rec.error)

    def test_error_is_recorded_and_raised(self):
        MGR.fail.add(0)
        with self.assertRaises(RuntimeError):
            with cgtrace.record(self.path):
                foo(Tensor([2], values=[1.0, 2.0]))
        _, recs = self.records()
        exp = [r for r in recs if r["op"] == "expect"][0]
        self.assertEqual(exp["error"], "accessing tensor output of CUDAGraphs that has been overwritten")
        self.assertEqual(exp["action"], "eager")
        t = [r for r in recs if r["op"] == "tensor"][0]
        self.assertEqual((t["init"], t["values"]), ("values", [1.0, 2.0]))

    def test_static_param_named_and_mode(self):
        w = Tensor([3])
        lin = MGR.add(2, mode="FORWARD", static=[0], placeholders=["primals_1", "primals_2"])

        def forward(x):
            return MGR._run([w, x, 7], lin)

        with cgtrace.record(self.path):
            forward(Tensor([3]))
        _, recs = self.records()
        d = [r for r in recs if r["op"] == "def"][0]
        self.assertEqual((d["fn"], d["mode"], d["params"]), ("forward_2", "forward", ["primals_1", "primals_2"]))
        self.assertEqual([r["op"] for r in recs[1:3]], ["param", "tensor"])

    def test_command_line_run(self):
        script = os.path.join(self.dir.name, "prog.py")
        with open(script, "w") as fh:
            fh.write("import sys\n"
                     "sys.modules['torch._inductor.cudagraph_trees'].mark_step_begin()\n"
                     "assert sys.argv[1:] == ['--flag', 'v'], sys.argv\n")
        argv, path = sys.argv[:], sys.path[:]
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                status = cgtrace.main(["run", "-o", self.path, script, "--flag", "v"])
        finally:
            sys.argv, sys.path[:] = argv, path
        self.assertIn("wrote %s (0 calls)" % self.path, err.getvalue())
        self.assertEqual(status, 0)
        header, recs = self.records()
        self.assertEqual(header["name"], "prog.py")
        self.assertEqual(header["meta"]["script"], "prog.py")
        self.assertEqual(recs, [{"op": "step"}])

    def test_training_loop_forward_backward(self):
        """A training loop as AOT autograd runs it under the tree: the
        forward returns its parameters and input for autograd to save (the
        same objects it was given) beside its activation, the backward
        takes them back with the loss gradient and returns the parameters'
        gradients and None for the input. Every iteration is recorded,
        none stops the recorder (on the GPU this stopped after the first
        call: two bindings of one parameter compared tensors with ==)."""
        w1, w2 = Tensor([8, 8]), Tensor([8, 8])
        fwd = MGR.add(2, mode="FORWARD", static=[0, 1], placeholders=["primals_1", "primals_2", "primals_3"])
        bwd = MGR.add(3, mode="BACKWARD", static=[0, 1],
                      placeholders=["primals_1", "primals_2", "primals_3", "relu", "tangents_1"])
        MGR.id_to_compile_id = {fwd: "0/0", bwd: "0/0"}

        def forward_graph(inputs):
            p1, p2, x = inputs
            act = Tensor([4, 8])
            return [Tensor([4, 8]), p1, p2, x, act]

        def backward_graph(inputs):
            p1, p2, x, act, grad = inputs
            return [Tensor([8, 8]), Tensor([8, 8]), None]

        MGR.models = {2: forward_graph, 3: backward_graph}
        cgt = sys.modules["torch._inductor.cudagraph_trees"]
        iters = 5

        def train_step():
            _invocation()
            logits, *saved = MGR._run([w1, w2, Tensor([4, 8])], fwd)
            loss_grad = Tensor([4, 8])  # the loss runs eagerly
            grads = MGR._run(saved + [loss_grad], bwd)
            del saved
            # the optimizer updates w1, w2 in place from the gradients
            # (eager), then zero_grad(set_to_none=True) drops them
            self.assertIsNone(grads[2])
            del grads
            return logits

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a recorder stop would raise here
            with cgtrace.record(self.path) as rec:
                for _ in range(iters):
                    cgt.mark_step_begin()
                    logits = train_step()
                    del logits
        self.assertIsNone(rec.error)
        header, recs = self.records()
        self.assertNotIn("recorder_error", header["meta"])
        self.assertEqual(rec.session.counts["calls"], 2 * iters)
        defs = {r["fn"]: r for r in recs if r["op"] == "def"}
        self.assertEqual(sorted(defs), ["train_step_2", "train_step_bwd_3"])
        self.assertEqual(defs["train_step_bwd_3"]["mode"], "backward")
        calls = [r for r in recs if r["op"] == "call"]
        self.assertEqual([c["fn"] for c in calls], ["train_step_2", "train_step_bwd_3"] * iters)
        # the parameters keep their names through every iteration, in the
        # forward and in the backward (autograd hands them back)
        for c in calls:
            self.assertEqual(c["args"][:2], ["param", "param_1"])
        acts = [r["action"] for r in recs if r["op"] == "expect"]
        self.assertEqual(acts, ["warmup"] * 2 + ["record"] * 2 + ["replay"] * (2 * iters - 4))
        self.assertEqual(sum(r["op"] == "param" for r in recs), 2)
        self.assertEqual(sum(r["op"] == "step" for r in recs), iters)
        self.assertFalse([r for r in recs if r["op"] == "note"])
        import test_recorded_examples
        self.assertEqual(test_recorded_examples.check_trace(self.path), [])

    def test_fake_tensor_truth_value_is_torchs(self):
        """The stand-in refuses what torch refuses, so the tests above catch
        recorder code that compares or tests tensors."""
        a, b = Tensor([4]), Tensor([4])
        with self.assertRaisesRegex(RuntimeError, "more than one value is ambiguous"):
            bool(a == b)
        with self.assertRaisesRegex(RuntimeError, "more than one value is ambiguous"):
            _ = b in [a]
        with self.assertRaisesRegex(RuntimeError, "more than one value is ambiguous"):
            weakref.ref(a, lambda _: None) == weakref.ref(a, lambda _: None) or None
        with self.assertRaisesRegex(RuntimeError, "no values is ambiguous"):
            bool(Tensor([0]))
        self.assertTrue(bool(Tensor([1], values=[2.0]) == 2.0))
        self.assertIn(a, [a])  # identity first, as list.__contains__ does
        self.assertEqual(len({a, b}), 2)

    def test_nested_recording_refused(self):
        with cgtrace.record(self.path):
            with self.assertRaisesRegex(RuntimeError, "already active"):
                cgtrace.record(self.path + "2").start()


if __name__ == "__main__":
    unittest.main()
