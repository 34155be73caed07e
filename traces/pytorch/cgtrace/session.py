"""The recording session, free of torch: it turns the tree's events into
the trace's records (each call, its expect, the tensors new to the trace,
steps, reads, resets), in order, written to a Trace; names and deaths are
its mixins' (names.py), what it keeps of tensors and functions state.py's.
The tests drive it with fake tensors."""

import json
import math
import re

from .jsonl import _STEP, SMALL_TENSOR, encode_record
from .liveness import watch_dead
from .names import UsedNames, _Deaths, _Names, bind_all, forget_all
from .shapes import OutSpec, fit_shape, numel, sanitize, synth_def
from .state import _FnState, _fact_positions, _known_name


# _tensor_record's tmpl when its caller did not look the template up.
_LOOK = object()


class Session(_Names, _Deaths):
    """Turns tree events into trace records. The torch side (Recorder) gives
    it Facts; it owns names, liveness bookkeeping and record order:

      dels of names that died, new tensors for unseen inputs, the call,
      its expect, then dels of names a call made redundant.

    A name dies when its Fact's probe says so (the torch side mirrors the
    tree's own liveness checks); deaths are polled at every event, so each
    `del` lands before the first record that could see it."""

    # A new tensor like the last one made for its slot is written from that
    # record's line (_tensor_record): tests turn it off to compare.
    templates = True

    def __init__(self, trace):
        self.trace = trace
        self.entries = {}  # name -> _Entry, live names only
        self.by_obj = {}  # id(obj) -> name
        self.by_obj_entry = {}  # id(obj) -> entry (what by_obj names), for the hot path
        self.by_storage = {}  # storage identity -> {name: entry} of the live names over it
        self.by_view = {}  # view key -> name
        self.fns = {}  # FnInfo.key -> _FnState
        self.out_storage = {}  # storage identity -> a live name of a tree output over it
        self._watch = {}  # name -> entry, for names polled at every event
        # Those of them dead now (liveness.watch_dead; the recorder's C
        # one where it was built: a loop's polled names at every event).
        self.watch_dead = watch_dead
        # The bindings' work (names.bind_all, forget_all; the recorder's
        # C ones where it was built: a training step binds and forgets
        # each of its hundreds of outputs); the maps they keep are
        # _name_maps()'s, made below.
        self._bind_all, self._forget_all = bind_all, forget_all
        # id(weakref) -> name, for names alive while their object is. Keyed
        # by id: a weakref hashes and compares as its live object does, and
        # two names of one tensor (a parameter a forward returns) would
        # make the dict compare tensors with ==, which raises in torch.
        self._held_wr = {}
        # (weakref, clock() then) of the objects that died since the last
        # poll: the clock, the torch side's step counter, says which step
        # each death came after (steps are written late: _catch_up_steps).
        self._dead_objs = []
        self.clock = None  # callable -> the step counter now; None: 0
        # view key -> the entry of a replay's cached output that died to the
        # tree (its last Python reference went) while autograd may keep it
        # for a backward: a later input that is that very object is written
        # as a `saved` record of it (_saved_name).
        self._dead_cached = {}
        self._argset = None  # (an args list, the set of its names), for _flush_dead
        self._fs_by_name = {}  # a function's trace name -> its _FnState
        # id of a compiled graph's callable -> (its weak reference, the name
        # of its first function's def): _fn's "graph" of the others.
        self._graph_heads = {}
        # The names given so far but the calls' outputs' (which are unique
        # by their making: _Names._output_name_made).
        self._fresh_next = {}  # base -> the suffix _fresh tries first
        self.names_used = UsedNames(self._fresh_next)
        self._expects = {}  # (action, node, checkpoints, device) -> its expect record
        self._swapped = []  # names whose object took other data (lookup), to del after its new record
        # Each parameter's shape, dtype and data pointer by its name (a new
        # parameter looks up those the records' last dels name:
        # _made_before_deaths).
        self._param_keys = {}
        self.order = 0
        # Moves whenever a name is bound or unbound, or an entry a memo of
        # inputs holds is renamed: a memo made at the same epoch is true.
        self.epoch = 0
        self.seed = 0
        # The src (dict, JSON) of the call being begun, or None: the tensors
        # new to the trace that it passes are met there (_tensor_record).
        self.src = None
        # (op, shape, dtype, device, src) -> a rand tensor record's line in
        # three parts, around its name and its seed (_tensor_record).
        self._tensor_lines = {}
        # Off for a strict trace (the tests that read its records as dicts)
        # and for the tests that compare (Session.templates).
        self.tensor_templates = self.templates and not getattr(trace, "strict", True)
        self.counts = {"calls": 0, "warmup": 0, "record": 0, "replay": 0, "eager": 0,
                       "errors": 0, "steps": 0, "dels": 0, "tensors": 0, "params": 0, "reads": 0}
        self._name_maps()

    def known(self, obj):
        """The live name bound to this very object, or None."""
        return _known_name(self.by_obj_entry.get(id(obj)), obj)

    def read_target(self, obj, storage):
        """The name a host read of `obj` reads, when it is a tree output or a
        view of one (None otherwise: reading an eager tensor never fails).
        `storage` is a callable giving obj's storage identity, asked only
        when some tree output lives."""
        if not self.out_storage:
            return None
        name = self.by_obj.get(id(obj))
        if name is not None:
            e = self.entries.get(name)
            if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                return name if e.fact.storage in self.out_storage else None
        return self.out_storage.get(storage())

    def read(self, name, error=None, src=None):
        """A host read (.item(), .cpu(), print) of a named tree output, and
        whether PyTorch raised (an output a later replay overwrote); src:
        the line that read it ((dict, JSON) or None)."""
        self.flush_deaths()
        if name not in self.entries:
            return
        self.counts["reads"] += 1
        self.trace.add({"op": "read", "name": name} if src is None else
                       {"op": "read", "name": name, "src": src[0]})
        if error is not None:
            self.counts["errors"] += 1
        self.trace.add({"op": "expect", "error": error})

    def reset(self, device=None):
        """The trees were dropped: every device's (device None:
        reset_cudagraph_trees, from torch._dynamo.reset()) or one device's
        (its manager ended with its last compiled function)."""
        self._device_record("reset", device)

    def skipped_backward(self, device):
        """A compiled backward ran without CUDA graphs (its manager's
        set_to_running_backward): no backward is pending any more. Device 0
        is the format's default."""
        self._device_record("skipped_backward", device or None)

    def empty_cache(self, src=None):
        """torch.cuda.empty_cache() ran: every device's cached segments
        given back, after the deaths before it (whose blocks it frees);
        src: the line that called it (_src_of's), or None."""
        self._device_record("empty_cache", None, src)

    def _device_record(self, op, device, src=None):
        self.flush_deaths()
        rec = {"op": op}
        if device is not None:
            rec["device"] = device
        if src is not None:
            rec["src"] = src[0]
        self.trace.add(rec)

    def step(self, upto=None):
        """A step (mark_step), after the deaths before it: with upto, the
        step counter's value before this step (see flush_deaths)."""
        self.flush_deaths(upto)
        self.counts["steps"] += 1
        self.trace.add(_STEP)  # records are never changed once added: one is enough

    def note(self, text):
        self.trace.add({"op": "note", "text": text})

    def config(self, changes):
        """Settings that changed since the last config the trace holds (a
        test patching torch._inductor.config mid-program), in force from
        here on."""
        rec = {"op": "config"}
        rec.update(changes)
        self.trace.add(rec)

    def _fn(self, info):
        st = self.fns.get(info.key)
        if st is None:
            name = sanitize(info.base, "fn")
            name = "%s_%s" % (name, info.key[-1]) if isinstance(info.key, tuple) else "%s_%s" % (name, info.key)
            base, n = name, 0
            while name in self._fs_by_name:
                n += 1
                name = "%s_%d" % (base, n)
            st = _FnState(name, info)
            self.fns[info.key] = st
            self._fs_by_name[name] = st
            if info.graph is not None:
                # cudagraphify's FunctionIDs for the sizes of one dynamic
                # graph share its callable: each names the first one's def
                # (the engine counts their sizes together, and warns past
                # dynamic_shape_warn_limit once, as PyTorch does).
                g = info.graph()
                head = self._graph_heads.get(id(g)) if g is not None else None
                if head is not None and head[0]() is g:
                    st.graph = head[1]
                elif g is not None:
                    self._graph_heads[id(g)] = (info.graph, name)
                g = None
        return st

    def fn_name(self, key):
        st = self.fns.get(key)
        return st.name if st is not None else None

    def _tensor_record(self, fact, op, base, tmpl=_LOOK):
        """Names a tensor new to the trace and writes its record. tmpl: its
        template as _tensor_lines has it under the record's key, where the
        caller looked it up (Recorder._check_fresh), else looked up here."""
        name = self._fresh(base)
        # A loop's new input at every call (a batch, a token) is a tensor
        # like the last one made for it: its line is that record's, the
        # name and seed put in (the encoding of a record dict costs a
        # new input's call more than the rest of its record).
        key = None
        if tmpl is _LOOK:
            key = (op, tuple(fact.shape), fact.dtype, fact.device, self.src[1] if self.src is not None else None)
            tmpl = self._tensor_lines.get(key) if self.tensor_templates else None
        if tmpl is not None and name.isidentifier() and name.isascii():
            self.seed += 1
            self.trace.records.append(tmpl[0] + name + tmpl[1] + str(self.seed) + tmpl[2])
            if fact.device:
                self.trace.devices = max(self.trace.devices, fact.device + 1)
            self.counts["params" if op == "param" else "tensors"] += 1
            self._bind(name, fact, op)
            if op == "param" and fact.ptr is not None:
                self._param_key(name, fact)
            return name
        shape = fit_shape(fact.shape)
        rec = {"op": op, "name": name, "shape": shape}
        if fact.dtype != "float32":
            rec["dtype"] = fact.dtype
        values = None
        # Values only for float32: the format computes no other dtype.
        if numel(shape) <= SMALL_TENSOR and fact.read_values is not None and fact.dtype == "float32":
            try:
                values = fact.read_values()
            except Exception:  # e.g. an overwritten cudagraph output: values unreadable
                values = None
            if values is not None and (len(values) != numel(shape)
                                       or not all(math.isfinite(v) for v in values)):
                values = None
        if values is not None:
            rec["init"] = "values"
            # Whole numbers as ints (1, not 1.0): the form cgtviz fmt writes.
            rec["values"] = [int(v) if float(v).is_integer() else v for v in values]
        else:
            self.seed += 1
            rec["init"] = "rand"
            rec["seed"] = self.seed
        if fact.device:
            rec["device"] = fact.device
            self.trace.devices = max(self.trace.devices, fact.device + 1)
        if self.src is not None:
            rec["src"] = self.src[0]
        self.trace.add(rec)
        if values is None and self.tensor_templates and len(self._tensor_lines) < 4096:
            if key is None:
                key = (op, tuple(fact.shape), fact.dtype, fact.device, self.src[1] if self.src is not None else None)
            self._tensor_lines[key] = _tensor_template(rec, name)
        self.counts["params" if op == "param" else "tensors"] += 1
        self._bind(name, fact, op)
        if op == "param" and fact.ptr is not None:
            self._param_key(name, fact)
        return name

    def _param_key(self, name, fact):
        keys = self._param_keys
        if len(keys) >= 65536:  # (the dead ones a new parameter never looked up: let go)
            keys.clear()
        keys[name] = (tuple(fact.shape), fact.dtype, fact.ptr)

    def _deaths_tail(self, end):
        """The index in the records where the `del`s and `step`s that end
        them before end begin (None: they end otherwise). A parameter new to
        the trace is written there, before them, when it was made while
        those tensors lived (_made_before_deaths): the program made it so
        (`load_state_dict(..., assign=True)` of new tensors, a checkpoint
        loaded again: the old parameters die as the new ones take their
        place), where written after them the simulated allocator would
        hand it their memory and cgtviz would replay where PyTorch
        re-recorded (programs/ema_swap.py). One that took a dead
        parameter's memory stays after its death, and so does one that no
        dead parameter of its shape and dtype could have given memory to;
        other tensors are written where first seen, as before (their
        addresses decide nothing: they are copied into the graph's
        placeholders)."""
        recs = self.trace.records
        k = end
        while k > 0 and _is_death_or_step(recs[k - 1]):
            k -= 1
        return k if k < end else None

    def _dead_params(self, at, end):
        """The data pointers of the parameters the `del`s of records at to
        end name, by their shape and dtype."""
        dead = {}
        for r in self.trace.records[at:end]:
            for x in map(json.loads, filter(None, r.split("\n"))) if type(r) is str else (r,):
                for n in x.get("names", ()):
                    k = self._param_keys.pop(n, None)
                    if k is not None:
                        dead.setdefault(k[:2], set()).add(k[2])
        return dead

    def _made_before_deaths(self, fact, dead):
        """Whether a new parameter was made while the parameters of the
        `del`s the records end on lived (dead: _dead_params): one of them
        had its shape and dtype (so that, written after them, it would
        take that one's memory) and none its data pointer (it took no
        dead one's). Only parameters count: a tree output's memory is
        the graph pool's, never a parameter's."""
        ptrs = dead.get((tuple(fact.shape), fact.dtype)) if fact.ptr is not None else None
        return ptrs is not None and fact.ptr not in ptrs

    def begin_call(self, info, inputs, param_names=None, invocation=None):
        """Records everything before a call: deaths, the tensors it reads
        that the trace has not named yet. `inputs` holds a Fact per tensor
        input and None for the rest (SymInts, generators), by input index.
        `param_names` maps an input index to a preferred name (a module's
        parameter path). `invocation` is Dynamo's generation counter when
        the call ran (calls with equal values are one top-level compiled
        invocation). Returns the call's context for end_call."""
        self.flush_deaths()
        # Where the records stand before the call's own: a new parameter
        # was made before the deaths and steps they end on where it took
        # none of their memory (below; looked at only for one).
        before, moved, dead = len(self.trace.records), [], None
        fs = self._fn(info)
        args, param_list, shapes, pdtypes, pviews = [], [], [], [], []
        self._swapped = []
        ph = info.placeholders
        # A parameter whose data the program replaced (`param.data = new`)
        # is written first: the replacement ran before the call's
        # expression made its new inputs (the usual `p.data = ...;
        # f(torch.rand(...))`), and the allocator hands out memory in that
        # order (a new input can take the old data's block).
        # (The positions of the Facts: the inputs new to the trace, few
        # among a model's named parameters.)
        order = _fact_positions(inputs)
        if any(self._swaps(inputs[i]) for i in order):
            order.sort(key=lambda i: not self._swaps(inputs[i]))
        named = {}
        for idx in order:
            fact = inputs[idx]
            name = self.lookup(fact)
            if name is None:
                name = self._saved_name(fact)
            if name is None:
                name = self._name_view(fact)
            if name is None:
                hint = (param_names or {}).get(idx)
                if idx in info.static:
                    name = self._tensor_record(fact, "param", sanitize(hint, "param") if hint else "param")
                    if not self._swapped:
                        if dead is None:
                            births_at = self._deaths_tail(before)
                            dead = self._dead_params(births_at, before) if births_at is not None else {}
                        if self._made_before_deaths(fact, dead):
                            moved.append(len(self.trace.records) - 1)
                else:
                    ph_name = ph[idx] if idx < len(ph) else ""
                    if info.mode == "backward":
                        base = "grad" if str(ph_name).startswith("tangents") else "saved"
                    else:
                        base = "in"
                    name = self._tensor_record(fact, "tensor", base)
            named[idx] = name
            if self._swapped:
                self.counts["dels"] += len(self._swapped)
                self.trace.add({"op": "del", "names": self._swapped})
                self._swapped = []
        if moved:
            _move_before(self.trace.records, moved, births_at)
        if fs.params is not None:
            # (A str: the torch side found its name, Recorder._before_call.)
            args = list(inputs)
            for idx in order:
                args[idx] = named[idx]
            if None in args:
                args = [a for a in args if a is not None]
        else:
            # The function's first call: its def's parameters too.
            for idx, fact in enumerate(inputs):
                if fact is None:
                    continue
                if isinstance(fact, str):
                    args.append(fact)
                    continue
                args.append(named[idx])
                pname = sanitize(ph[idx], "x") if idx < len(ph) and ph[idx] else "x%d" % idx
                param_list.append(pname)
                shapes.append(fit_shape(fact.shape))
                pdtypes.append(fact.dtype)
                pviews.append((fact.offset, tuple(fact.stride)))
        if fs.params is None:
            # Local names of the def: unique, and apart from the r<i> outputs.
            seen, uniq = set(), []
            for p in param_list:
                q, n = p, 0
                while q in seen or re.fullmatch(r"r\d+(_\d+)?", q):
                    n += 1
                    q = "%s_%d" % (p, n)
                seen.add(q)
                uniq.append(q)
            fs.params, fs.shapes = uniq, shapes
            fs.tensor_idx = [i for i, f in enumerate(inputs) if f is not None]
            fs.dtypes, fs.views = pdtypes, pviews
            fs.info = info
        fs.calls += 1
        self.counts["calls"] += 1
        if fs.defined:  # _define, which reads the inputs' Facts, has run
            return {"fn": fs, "args": args, "invocation": invocation}
        tensor_idx = [i for i, f in enumerate(inputs) if f is not None]
        return {"fn": fs, "args": args, "tensor_idx": tensor_idx, "inputs": list(inputs),
                "invocation": invocation}

    def begin_known_call(self, fs, args, invocation=None):
        """begin_call for a defined function (fs) whose every tensor input
        the torch side found by its name (args, in input order): what is
        left of begin_call then is deaths and counts. The steady loop's
        path."""
        self.flush_deaths()
        fs.calls += 1
        self.counts["calls"] += 1
        # The same names as the function's last call (a loop's): that call's
        # list, shared (records are never changed), so the trace holds, and
        # the writer encodes, one list for all of them.
        last = fs.last_args
        if last is args:
            pass
        elif last is not None and last == args:
            args = last
        else:
            fs.last_args = args
        return {"fn": fs, "args": args, "invocation": invocation}

    def end_call(self, ctx, actions, node=None, checkpoints=None, outputs=None,
                 error=None, device=0):
        """Records the call and PyTorch's decision about it. `outputs` holds,
        by output position, a Fact per tensor output and None for anything
        else (a SymInt, None, a tensor left out); it is None when the call
        raised. `node` is (fn key, parent fn key or None) for record and
        replay.

        The def returns the positions that held tensors at the function's
        first call; a later call binds each of them (`_` where it holds no
        tensor this time), so `out` always has one name per returned value."""
        fs = ctx["fn"]
        if outputs is not None and not fs.defined:
            fs.out_pos = [i for i, f in enumerate(outputs) if f is not None]
            fs.out_dense = len(fs.out_pos) == len(outputs)
            self._define(fs, ctx, [outputs[i] for i in fs.out_pos])
        if outputs is not None and not (fs.out_dense and len(outputs) == len(fs.out_pos)):
            # (Every position held a tensor at the first call and the count is
            # the same: outputs is already what the def returns.)
            extra = [i for i, f in enumerate(outputs) if f is not None and i not in fs.out_pos]
            if extra and not fs.warned_extra:
                fs.warned_extra = True
                self.note("%s returned tensors at positions %s, which its first call did not: "
                          "they are not in the trace" % (fs.name, extra))
            outputs = [outputs[i] if i < len(outputs) else None for i in fs.out_pos]
        call = {"op": "call", "fn": fs.name, "args": ctx["args"]}
        outs = []
        if outputs:
            # An output's name is unique by its making (function, call,
            # position): _fresh, which would give the same name, is asked
            # only when the name is taken (by a tensor named so).
            used = self.names_used
            calls = fs.calls
            for i, f in enumerate(outputs):
                if f is None:
                    outs.append("_")
                    continue
                n = "%s_c%d_%d" % (fs.name, calls, i)
                if n in used:  # (taken by a name _fresh made: output names are not kept)
                    n = self._fresh(n)
                outs.append(n)
            call["out"] = outs
        inv = ctx["invocation"]
        if inv is not None:
            call["invocation"] = int(inv)
        src = ctx.get("src")
        if src is not None:
            call["src"] = src[0]
        trace = self.trace
        trace.add(call)
        action = actions[-1] if actions else "eager"
        self.counts[action] += 1
        # A steady replay expects the same as the one before it: one record
        # object per distinct expect, shared (records are never changed
        # once added), built once.
        ekey = (action, node, checkpoints, device) if error is None else None
        exp = self._expects.get(ekey) if ekey is not None else None
        if exp is not None:
            trace.add(exp)
            if self._watch or self._dead_objs:
                self._flush_dead(ctx["args"])
            if outputs:
                self._bind_outputs(outs, outputs)
            return
        exp = {"op": "expect", "action": action}
        if node is not None and action in ("record", "replay"):
            fn = self.fn_name(node[0])
            parent = self.fn_name(node[1]) if node[1] is not None else None
            # A node of a function this trace never defined (recorded before
            # recording began) cannot be named: leave the check out.
            if fn is not None and (node[1] is None or parent is not None):
                exp["node"] = {"fn": fn, "parent_fn": parent}
        if checkpoints is not None:
            exp["checkpoints"] = checkpoints
        if error is not None:
            self.counts["errors"] += 1
            exp["error"] = error
        if device:
            exp["device"] = device
        if ekey is not None and (node is None or "node" in exp):
            # (A node left unnamed may be named later, once its function is.)
            self._expects[ekey] = exp
        self.trace.add(exp)
        # Inputs that died inside the call (the tree clears its input list,
        # autograd frees saved tensors in a backward): deleted right after
        # the call's expect, before anything else happens, so no later
        # record sees them alive and no output is mistaken for them.
        self._flush_dead(ctx["args"])
        self._bind_outputs(outs, outputs)

    def _define(self, fs, ctx, outputs):
        ins = ctx["inputs"]
        tidx = ctx["tensor_idx"]
        pos = {i: k for k, i in enumerate(tidx)}
        specs = []
        for i, f in enumerate(outputs):
            alias, exact = None, False
            for j in tidx:
                # An input that died during the call cannot be aliased, and its
                # storage's address may already be another's: check it lives.
                if ins[j].storage == f.storage and ins[j].alive():
                    alias = ("param", pos[j])
                    exact = ins[j].view_key == f.view_key
                    break
            if alias is None:
                for k in range(i):
                    g = outputs[k]
                    if g.storage == f.storage:
                        alias = ("output", k)
                        exact = g.view_key == f.view_key
                        break
            specs.append(OutSpec(f.shape, alias, exact, f.dtype, f.offset, f.stride,
                                 f.storage_numel))
        mutated = [pos[j] for j in fs.info.mutated if j in pos]
        rec = synth_def(fs.name, fs.info.mode, fs.params, fs.shapes, specs, mutated,
                        fs.dtypes, fs.views)
        # The graph's static inputs (static_input_idxs), by def position: in
        # a backward its saved tensors are, whatever made them.
        rec["static"] = sorted(pos[j] for j in fs.info.static if j in pos)
        if self._graph_defined(fs):
            rec["graph"] = fs.graph
        if ctx.get("def_src") is not None:
            rec["src"] = ctx["def_src"][0]
        self.trace.set_def(rec)
        fs.defined = True

    def _graph_defined(self, fs):
        """Whether fs's def names its graph's: only a def written before it
        (the format's rule; a graph's first size whose calls all raised is
        defined at the end, and its other sizes then name none)."""
        head = self._fs_by_name.get(fs.graph) if fs.graph is not None else None
        return head is not None and head.defined

    def finish(self):
        """Emits the deaths seen at the end, and a def for every function
        whose calls all raised before it returned outputs (with no results,
        as nothing more was observed)."""
        self.flush_deaths()
        for fs in self.fns.values():
            if not fs.defined and fs.params is not None:
                # What the tree knew of the function: the inputs it mutates
                # (a call that raised on them, as cudagraph_or_error makes
                # it, still needs them) and its static inputs.
                pos = {i: k for k, i in enumerate(fs.tensor_idx or ())}
                mutated = [pos[j] for j in fs.info.mutated if j in pos]
                rec = synth_def(fs.name, fs.info.mode, fs.params, fs.shapes, [], mutated)
                rec["static"] = sorted(pos[j] for j in fs.info.static if j in pos)
                if self._graph_defined(fs):
                    rec["graph"] = fs.graph
                self.trace.set_def(rec)
                fs.defined = True


def _is_death_or_step(r):
    """Whether the record (a dict, or lines the writer takes as they are:
    the deferred calls' writer joins a run of them) is `del`s and
    `step`s alone."""
    if type(r) is str:
        # (The first line alone first: the writer's joined runs are long,
        # and most begin with a call.)
        return (r.startswith(('{"op": "del"', '{"op": "step"'))
                and all(x.startswith(('{"op": "del"', '{"op": "step"')) for x in r.split("\n") if x))
    return type(r) is dict and r.get("op") in ("del", "step")


def _move_before(records, idxs, at):
    """The records at idxs (increasing, all past at) moved to at, in order."""
    picked = [records[i] for i in idxs]
    for i in reversed(idxs):
        del records[i]
    records[at:at] = picked


def _tensor_template(rec, name):
    """A rand tensor or param record's line in three parts, around its name
    and seed: what encode_record writes for a record like it (the same
    fields, the same values but those two), or None when the line cannot
    be split so (the encoder refuses the record: the writer says why)."""
    try:
        line = encode_record(rec)
    except (ValueError, TypeError):
        return None
    head = '{"op": "%s", "name": "%s", ' % (rec["op"], name)
    seed = '"init": "rand", "seed": %d' % rec["seed"]
    if not line.startswith(head) or line.count(seed) != 1:
        return None
    mid, _, tail = line[len(head):].partition(seed)
    return ('{"op": "%s", "name": "' % rec["op"], '", ' + mid + '"init": "rand", "seed": ', tail)
