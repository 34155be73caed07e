"""What the recorder asks torch about a tensor (its Fact) and a compiled
function (its FnInfo and name, from the caller's frame; its parameters'
module paths)."""

import json
import os
import sys
import weakref

from . import torch_api
from .errors import _Unsupported
from .jsonl import DTYPES
from .state import Fact, FnInfo, _fact_positions
from .shapes import dtype_name
from .liveness import _Probe

_MODE_NAMES = {"FORWARD": "forward", "BACKWARD": "backward", "INFERENCE": "inference"}


class _Facts:
    """Recorder's questions to torch about tensors and functions."""

    def _fn_key(self, mgr, function_id):
        serial = self._mgr_serial.get(id(mgr))
        if serial is None or serial[1]() is not mgr:
            serial = (len(self._mgr_serial), weakref.ref(mgr))
            self._mgr_serial[id(mgr)] = serial
        return (serial[0], mgr.device_index, function_id.id)


    def _fact_or_none(self, t):
        """The Fact of a tensor, or None (with one note per kind) for one
        the format cannot hold: it is left out of the trace, never an error
        in the program."""
        try:
            return self._fact(t)
        except Exception as e:
            kind = str(e) if isinstance(e, _Unsupported) else "%s (%s)" % (type(t).__name__, type(e).__name__)
            if kind not in self._skipped:
                self._skipped.add(kind)
                self.session.note("cgtrace left out a tensor it cannot record: %s" % kind)
            return None


    def _node_keys(self, mgr):
        node = self.tls.node
        if node is None:
            return None
        # A node's function and parent never change: looked up once per node
        # (by id, with a weak reference saying the id is still that node's).
        # Both by weak reference: a strong one to the manager would keep its
        # graphs and private pool alive after the program (or
        # torch._dynamo.reset()) let go of them, and the program would see
        # cudagraph segments that PyTorch alone would have freed.
        got = self._node_key_cache.get(id(node))
        if got is not None and got[0]() is node and got[1]() is mgr:
            return got[2]
        parent = node.parent
        pkey = self._fn_key(mgr, parent.wrapped_function.id) if parent is not None else None
        keys = (self._fn_key(mgr, node.wrapped_function.id), pkey)
        try:
            self._node_key_cache[id(node)] = (weakref.ref(node), weakref.ref(mgr), keys)
        except TypeError:  # a node without weak references: not cached
            pass
        return keys

    def _fn_info(self, mgr, function_id):
        """(FnInfo, the session's state of it or None before its first call)."""
        key = self._fn_key(mgr, function_id)
        st = self.session.fns.get(key)
        if st is not None:
            return st.info, st
        wrapped = mgr.ids_to_funcs[function_id]
        mode = mgr.id_to_mode.get(function_id)
        mode = _MODE_NAMES.get(getattr(mode, "name", ""), "inference")
        placeholders = [getattr(p, "name", "") or "" for p in (getattr(wrapped, "placeholders", None) or ())]
        base = self._base_name(mgr, function_id, mode)
        try:
            graph = weakref.ref(wrapped.model)
        except (AttributeError, TypeError):  # (no model, or one without weak references: not grouped)
            graph = None
        return FnInfo(key, base, mode, wrapped.static_input_idxs,
                      getattr(wrapped, "mutated_input_idxs", ()) or (), placeholders,
                      mgr.device_index, graph), None

    def _base_name(self, mgr, function_id, mode):
        """The compiled function's name. A forward or inference graph runs
        inside the user's function frame (Dynamo runs the transformed code in
        it), so the first frame up the stack outside torch names it; a module's
        forward is named after its class. A backward is named after the
        forward compiled with it (same compile id)."""
        if mode == "backward":
            cid = getattr(mgr, "id_to_compile_id", {}).get(function_id)
            for other, ocid in getattr(mgr, "id_to_compile_id", {}).items():
                if other != function_id and ocid == cid and cid is not None:
                    st = self.session.fns.get(self._fn_key(mgr, other))
                    if st is not None:
                        return st.info.base + "_bwd"
            return "backward"
        got = self._frames_outside(sys._getframe(1), 1)
        f = got[0][0] if got else None
        got = None
        if f is None:
            return "fn"
        name = f.f_code.co_name
        self_obj = None
        if name in ("forward", "__call__") and f.f_code.co_varnames[:1] == ("self",):
            # Only `self` is read: a frame's f_locals snapshot holds
            # references, and tensors must die when the program lets go.
            try:
                self_obj = f.f_locals.get("self")
            except Exception:
                self_obj = None
        f = None  # (no frame outlives the call)
        if self_obj is not None:
            self._learn_params(self_obj)
            return type(self_obj).__name__
        if name.startswith("<"):
            return "fn"
        return name

    def _frames_outside(self, f, n):
        """The first n frames from f up the stack whose code is not the
        library's (torch, the standard library, this package, inductor's
        generated code), each with its depth from f, fewer where the stack
        has fewer. Each file is judged once (_lib_file): the walk is a
        dict lookup a frame."""
        lib = self._lib_file
        got = []
        depth = 0
        while f is not None:
            path = f.f_code.co_filename
            is_lib = lib.get(path)
            if is_lib is None:
                is_lib = lib[path] = self._is_library_file(path)
            if not is_lib or dynamo_frame(f.f_code):
                got.append((f, depth))
                if len(got) == n:
                    break
            f = f.f_back
            depth += 1
        return got

    def _no_src_frame(self, f):
        """Whether no frame from f up the stack is the program's: where
        _call_srcs, walking from f, finds no src (a backward autograd's
        engine runs in its device thread)."""
        try:
            return not self._frames_outside(f, 1)
        finally:
            f = None  # no frame outlives the call

    def _src_of(self, code, line):
        """The src of a line of code: (its record dict, its JSON), shared
        by every record of that line (records are never changed once
        made); None where the format cannot hold it (a control
        character, a path over the format's limit, no line)."""
        key = (code.co_filename, line, code.co_name)
        got = self._src_cache.get(key)
        if got is None and key not in self._src_cache:
            got = _make_src(code.co_filename, line, code.co_name)
            self._src_cache[key] = got
        return got

    def _call_srcs(self, mode):
        """(the call's src, its function's def src, where the call's src
        frame is), the srcs (dict, JSON) or None, from the Python stack of a
        call the tree was given. A forward or inference graph runs inside
        the user's function frame (Dynamo runs its transformed code there:
        _base_name), so the first frame outside the library is the compiled
        function's own, whose code says where it was defined, and the next
        is the line that called it. A backward runs from autograd, called by
        no compiled frame: the first frame outside is the line that ran the
        backward (`loss.backward()`), when autograd runs it in the
        program's thread. Where: (depth, code) of the call's src frame,
        the depth counted from the frame that called the tree's _run (the
        first frame past this package's own at the stack's top), which is
        what the _run wrapper's steady path compares (_run_src)."""
        f = None
        try:
            f = first_outside(sys._getframe(2), self._own_file)
            got = self._frames_outside(f, 1 if mode == "backward" else 2)
            f = None
            if mode == "backward":
                if not got:
                    return None, None, None
                g, d = got[0]
                return self._src_of(g.f_code, g.f_lineno), None, (d, weakref.ref(g.f_code))
            if not got:
                return None, None, None
            code = got[0][0].f_code
            call = at = None
            if len(got) > 1:
                g, d = got[1]
                call = self._src_of(g.f_code, g.f_lineno)
                at = (d, weakref.ref(g.f_code))
            return call, self._src_of(code, code.co_firstlineno), at
        except Exception:  # (a frame that cannot be read: no src, never a failure)
            return None, None, None
        finally:
            f = got = g = None  # no frame outlives the call

    def _library_roots(self):
        """Folders whose frames are PyTorch's, not the program's: torch
        itself, the standard library, this package, and inductor's cache, where
        the generated output code lives (with graph partitions its `call`
        is what calls the tree)."""
        roots = [os.path.dirname(self.torch.__file__), os.path.dirname(os.__file__),
                 os.path.dirname(os.path.abspath(__file__))]
        env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if env:
            roots.append(env)
        try:
            roots.append(torch_api.inductor_cache_dir())
        except Exception:  # an older layout: the marker below still applies
            pass
        return [os.path.abspath(r) for r in roots]

    def _is_library_file(self, path):
        if path.startswith("<"):  # generated code: <eval_with_key>, <string>
            return True
        if "torchinductor_" in path:  # the default cache: /tmp/torchinductor_USER
            return True
        if getattr(self, "_roots", None) is None:
            self._roots = self._library_roots()
        path = os.path.abspath(path)
        return any(path == r or path.startswith(r + os.sep) for r in self._roots)

    def _learn_params(self, obj):
        """Module paths of the parameters and buffers of a module the compiled
        function belongs to, to name `param` records after them."""
        nn = self.torch.nn
        if not isinstance(obj, nn.Module):
            return
        for n, p in list(obj.named_parameters()) + list(obj.named_buffers()):
            self._param_names.setdefault(id(p), (weakref.ref(p), n))

    def _param_hints(self, inputs, info, facts):
        """Module paths for the static inputs new to the trace (a Fact in
        facts; a name there is the input's already), by input index."""
        hints = {}
        static = info.static
        for idx in _fact_positions(facts):  # (facts is by input position)
            if idx in static:
                v = inputs[idx]
                got = self._param_names.get(id(v))
                if got is not None and got[0]() is v:
                    hints[idx] = got[1]
        return hints

    def _fact(self, t):
        """A Fact for tensor t, holding no strong reference to it. Raises
        _Unsupported for a tensor the format cannot hold. On every call's
        outputs: it asks torch only what it needs (no device object, the
        dtype's name cached)."""
        if t.layout is not self._strided:
            raise _Unsupported("layout %s" % (t.layout,))
        if not t.is_cuda:
            raise _Unsupported("%s tensor" % t.device.type)
        dt = t.dtype
        dtype = self._dtypes.get(dt)
        if dtype is None:
            dtype = dtype_name(dt, t.element_size())
            if dtype is None:
                raise _Unsupported("dtype %s" % (dt,))
            self._dtypes[dt] = dtype
        stor = t.untyped_storage()
        return held_fact(weakref.ref(t), torch_api.StorageWeakRef(stor), self, t.shape, t.get_device(),
                         stor._cdata, t.storage_offset(), t.stride(), dtype, stor.nbytes() // DTYPES[dtype],
                         t.data_ptr())


def ptrs_of(Tensor, tensors):
    """The tensors' data pointers (a list), or None when torch refuses one:
    an output the tree deallocated raises the overwritten error on its
    data pointer, and a call handed one (the user's mistake) is taken the
    slow way, where it is named by its object and the call records the
    error PyTorch raises (never the recorder's own failure)."""
    try:
        return list(map(Tensor.data_ptr, tensors))
    except RuntimeError:
        return None


def same_ptr(t, ptr):
    """Whether t's data is at ptr; True where torch refuses t's pointer
    (an overwritten output: the object the trace names it by is all
    there is, and the call's own error says the rest)."""
    try:
        return t.data_ptr() == ptr
    except RuntimeError:
        return True


def held_fact(wr, sref, rec, shape, device, storage, offset, stride, dtype, storage_numel, ptr):
    """The Fact of a tensor the recorder met (Recorder._fact's, and a
    queued input's made later from the parts taken at its call,
    freshq._Queued): judged alive while its object is (held; wr, a weak
    reference to it), then while its storage is (sref), by its probe."""
    probe = _Probe(wr, sref, rec.tls)
    fact = Fact(shape, device, wr, storage, offset, stride, probe.alive, probe.read_values, dtype, storage_numel,
                probe.base)
    probe.fact = rec._fact
    fact.probe = probe
    fact.ptr = ptr
    fact.held = True
    return fact


# This package's folder: its frames are the recorder's (_call_srcs).
_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# The global through which Dynamo's transformed code calls the graph it
# compiled (torch/_dynamo/output_graph.py: unique_id("__compiled_fn")).
_COMPILED_FN = "__compiled_fn"


# id(code) -> (the code's weak reference, dynamo_frame's answer): a walk
# of the stack meets the same library frames at every call. Weak: no code
# object of the program is kept (a dead one's entry goes with it).
_DYNAMO_CODES = {}


def dynamo_frame(code):
    """Whether code is code Dynamo transformed (it calls a graph Dynamo
    compiled, through a global __compiled_fn_*): the compiled function's
    own frame, the one _call_srcs and _base_name look for, also where
    the function is the library's own (a torch module compiled whole:
    nn.Sequential's forward), whose file alone would have it skipped, and
    the program's line that called it taken for the function."""
    key = id(code)
    got = _DYNAMO_CODES.get(key)
    if got is not None and got[0]() is code:
        return got[1]
    yes = any(n.startswith(_COMPILED_FN) for n in code.co_names)
    _DYNAMO_CODES[key] = (weakref.ref(code, lambda _, key=key: _DYNAMO_CODES.pop(key, None)), yes)
    return yes


def first_outside(f, mine):
    """f, or the first frame above it whose code is not this package's
    (the user's, or torch's); None past the stack's top. mine caches the
    answer per file name, so a loop's frames cost a dict lookup each (by
    name, not code object: a cache holding the program's code objects
    would keep what Dynamo frees with them, see Recorder.__init__)."""
    while f is not None:
        path = f.f_code.co_filename
        own = mine.get(path)
        if own is None:
            own = mine[path] = path.startswith(_PKG_DIR)
        if not own:
            return f
        f = f.f_back
    return None
# The format's limits of a src's strings (traces.MaxSrcFileLen, MaxSrcFnLen).
_MAX_SRC_FILE, _MAX_SRC_FN = 4096, 1024


def _make_src(path, line, fn):
    """({"file", "line", "fn"}, its JSON) for a frame's line, or None where
    the format refuses it (it reaches terminals: no control characters)."""
    if (not path or type(line) is not int or line < 1 or len(path.encode("utf-8", "replace")) > _MAX_SRC_FILE
            or len(fn.encode("utf-8", "replace")) > _MAX_SRC_FN
            or any(c < " " or "\x7f" <= c <= "\x9f" for c in path + fn)):
        return None
    rec = {"file": path, "line": line, "fn": fn} if fn else {"file": path, "line": line}
    return rec, json.dumps(rec)
