"""The session's names: each tensor's name as the trace gives it (bound,
looked up, renamed as a call hands an output out again, views named
after their base), and the dels of names whose tensors died. Mixins of
Session (session.py), free of torch."""

import operator
import re
import weakref

from .jsonl import _names_json
from .liveness import _cached_output
from .shapes import extent, fit_shape, is_contiguous, numel, view_fields
from .state import Fact, _Entry

_ORDER = operator.attrgetter("order")  # (dels in binding order)
# An output's name as end_call makes it: function, call, position.
_OUTPUT_NAME = re.compile(r"(.+)_c([0-9]+)_([0-9]+)")


def _numbered(name):
    """(base, k) where name is base + "_" + str(k), k >= 1 (the form
    Session._fresh makes past a base's first), else None."""
    i = name.rfind("_")
    d = name[i + 1:]
    if i < 0 or not d or d[0] == "0" or not (d.isascii() and d.isdigit()):
        return None
    return name[:i], int(d)


class UsedNames:
    """The names Session._fresh made (Session.names_used), as a set of them
    answers `in`: for each base its next number (Session._fresh_next,
    which it reads, not a copy), every name below it made (the base
    itself first, then base_1, base_2, ...), but the ones _fresh passed
    over as an output's name (skipped); and any name added otherwise
    (extra). One str a name made grew by one at each call on a new input
    (150 MB a million calls on the stand-in, and a set larger than any
    cache to probe at each call); a name passed over because another
    base had made it is that base's, so the numbers cover every name
    made. The C writer (fastpath's fq_run, replay_run) reads its three
    parts in place."""

    __slots__ = ("next", "skipped", "extra")

    def __init__(self, fresh_next):
        self.next = fresh_next
        self.skipped = set()  # (an output's name: one never made)
        self.extra = set()

    def __contains__(self, name):
        if name in self.extra:
            return True
        if type(name) is not str or name in self.skipped:
            return False
        nxt = self.next
        if nxt.get(name, 0) > 0:
            return True
        bk = _numbered(name)
        return bk is not None and bk[1] < nxt.get(bk[0], 0)

    def add(self, name):
        """A name taken other than by _fresh (its numbers say the ones it makes)."""
        if name not in self:
            self.extra.add(name)

    def isdisjoint(self, names):
        return not any(n in self for n in names)

    def _names(self):
        got = set(self.extra)
        skipped = self.skipped
        for base, n in list(self.next.items()):
            if n > 0 and base not in skipped:
                got.add(base)
            got.update(m for m in ("%s_%d" % (base, k) for k in range(1, n)) if m not in skipped)
        return got

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())


def bind_all(maps, names, facts, kind, takeover, order):
    """Binds each name to its Fact as the kind given (Session._bind's
    work, for names and facts of one length), the entries numbered
    order + 1, order + 2, ...: the entry made, the maps that find it (by
    name, storage, object, view; its storage's output name for an "out"),
    and either the weak reference whose callback says its object died
    (a held Fact: alive while its object is) or a place among the polled
    names. With takeover, later lookups of the object and view find the
    new name. maps: Session._name_maps(). The Python of the C's
    bind_all (fastpath.py), which the recorder puts in its place."""
    entries, by_storage, out_storage, by_obj, by_obj_entry, by_view, watch, held_wr, died, entry = maps
    if len(names) != len(facts):
        raise ValueError("bind_all: %d names, %d facts" % (len(names), len(facts)))
    out = kind == "out"
    for name, fact in zip(names, facts):
        order += 1
        e = entry(name, fact, kind, order)
        entries[name] = e
        st = fact.storage
        by_storage.setdefault(st, {})[name] = e
        if out:
            out_storage.setdefault(st, name)
        ref = fact.obj_ref
        obj = ref() if ref is not None else None
        if takeover:
            if obj is not None:
                i = id(obj)
                by_obj[i] = name
                by_obj_entry[i] = e
                e.obj_id = i
            by_view[fact.view_key] = name
        if fact.held and obj is not None:
            # Alive for sure while its object is: polled only once a
            # weakref callback says the object died.
            e.wr = wr = weakref.ref(obj, died)
            held_wr[id(wr)] = name
        else:
            watch[name] = e
        obj = None


def forget_all(maps, names):
    """Unbinds each name in turn (Session._forget's work): its entry out
    of every map bind_all put it in; its storage's output name passed to
    another output over the storage, if one is left; KeyError for a name
    not bound. The Python of the C's forget_all (fastpath.py)."""
    entries, by_storage, out_storage, by_obj, by_obj_entry, by_view, watch, held_wr = maps[:8]
    for name in names:
        e = entries.pop(name)
        fact = e.fact
        st = fact.storage
        same = by_storage.get(st)
        if same is not None:
            same.pop(name, None)
            if not same:
                del by_storage[st]
        watch.pop(name, None)
        if e.wr is not None:
            held_wr.pop(id(e.wr), None)
        k = fact.view_key
        if by_view.get(k) == name:
            del by_view[k]
        if out_storage.get(st) == name:
            del out_storage[st]
            if same:
                other = next((o.name for o in same.values() if o.kind == "out"), None)
                if other is not None:
                    out_storage[st] = other
        i = e.obj_id
        if i is not None and by_obj.get(i) == name:
            del by_obj[i]
            del by_obj_entry[i]


class _Names:
    """Session's naming of tensors: fresh names, bindings, lookups, views,
    and the renaming of outputs."""

    def _fresh(self, base):
        # The first of base, base_1, base_2, ... not taken. Names are never
        # given back, so the search resumes where the last one for this base
        # ended: a loop's fresh input per call ("in", "in_1", ...) costs one
        # probe, not one per earlier call.
        n = self._fresh_next.get(base, 0)
        name = "%s_%d" % (base, n) if n else base
        used = self.names_used
        while True:
            if name in used:
                pass
            elif "_c" in name and self._output_name_made(name):
                used.skipped.add(name)  # (never made: its number alone would say it was)
            else:
                break
            n += 1
            name = "%s_%d" % (base, n)
        self._fresh_next[base] = n + 1  # (names_used holds it: UsedNames)
        return name

    def _output_name_made(self, name):
        """Whether name is one a call's output may have had: fn_cN_i of a
        function of the trace, N a call it made, i one of its outputs'
        positions (end_call's names). Output names are unique by their
        making (a function's calls only count up), so names_used holds
        none of them (a long run's hundreds a step); only a name _fresh
        makes can meet one, and it asks here."""
        m = _OUTPUT_NAME.fullmatch(name)
        if m is None:
            return False
        fs = self._fs_by_name.get(m.group(1))
        if fs is None:
            return False
        n, i = m.group(2), m.group(3)
        return (n == str(int(n)) and i == str(int(i)) and int(n) <= fs.calls
                and int(i) < len(fs.out_pos))

    def _replay_names(self, plan, calls):
        """The names of a replay's outputs as end_call gives them (function,
        call number, position), each taken (_fresh only when a tensor has
        it already), for a _ReplayPlan's outputs."""
        used = self.names_used
        cs = str(calls)
        outs = []
        for sfx in plan.suffixes:
            n = plan.prefix + cs + sfx
            if n in used:  # (taken by a name _fresh made: output names are not kept)
                n = self._fresh(n)
            outs.append(n)
        return outs

    def _bind(self, name, fact, kind, takeover=True):
        """Names a tensor. With takeover, later lookups of this object and
        view find this name; without, the name is a passing alias and the
        older name keeps representing the tensor (bind_all)."""
        self._bind_many((name,), (fact,), kind, takeover)

    def _bind_many(self, names, facts, kind, takeover=True):
        """_bind(name, fact, kind, takeover) for each in turn, in one call
        of bind_all (a training step's outputs, all bound anew)."""
        n = len(names)
        order = self.order
        self.order = order + n
        self.epoch += n
        self._bind_all(self._maps, names, facts, kind, takeover, order)

    def _name_maps(self):
        """The maps bind_all and forget_all keep, and what they bind with
        (the weak references' callback, the entries' class), as _maps:
        made with the session, and again when the recorder puts its own
        _died in place."""
        self._maps = (self.entries, self.by_storage, self.out_storage, self.by_obj, self.by_obj_entry,
                      self.by_view, self._watch, self._held_wr, self._died, _Entry)
        return self._maps

    def _died(self, wr):
        # Runs wherever the object dies (inside PyTorch, in the GC): only
        # notes it, and when; the next event polls the name.
        self._dead_objs.append((wr, self.clock() if self.clock is not None else 0))

    def _forget(self, name):
        self._forget_many((name,))

    def _forget_many(self, names):
        """_forget(name) for each in turn, in one call of forget_all."""
        self.epoch += len(names)
        self._forget_all(self._maps, names)

    def lookup(self, fact):
        """The live name that holds this tensor, if any: the same Python
        object, or another object over the same view of the same storage
        (autograd unpacks saved tensors into new objects)."""
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is not None:
            name = self.by_obj.get(id(obj))
            if name is not None:
                e = self.entries.get(name)
                if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                    if e.fact.storage == fact.storage and e.fact.offset == fact.offset:
                        return name
                    # `param.data = new`: the object holds other data now.
                    # The name's tensor is gone (the object no longer holds
                    # its storage); the object gets a new record, and the
                    # old name's del comes after it (begin_call): the new
                    # data was made while the old still lived, so it has
                    # another address, as in PyTorch.
                    self._forget(name)
                    self._swapped.append(name)
        name = self.by_view.get(fact.view_key)
        if name is not None and name in self.entries:
            return name
        return None

    def _swaps(self, fact):
        """Whether fact's object is a named one that now holds other data
        (`param.data = new`): what lookup turns into a new record."""
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is None:
            return False
        e = self.by_obj_entry.get(id(obj))
        if e is None or e.fact.obj_ref is None or e.fact.obj_ref() is not obj:
            return False
        return e.fact.storage != fact.storage or e.fact.offset != fact.offset

    def _saved_name(self, fact):
        """A name for an input that is a replay's cached output the tree
        already counts dead: autograd kept it (a forward's saved tensor) and
        hands it to the backward now. Written as a `saved` record of the
        dead name, judged alive as the tree judges that output."""
        e = self._dead_cached.get(fact.view_key)
        if e is None:
            return None
        obj = fact.obj_ref() if fact.obj_ref is not None else None
        if obj is None or e.fact.obj_ref is None or e.fact.obj_ref() is not obj:
            return None  # another tensor over memory the dead one had
        name = self._fresh("saved")
        self.trace.add({"op": "saved", "name": name, "of": e.name})
        if fact.probe is not None and e.fact.probe is not None:
            fact.probe.tree_ref = e.fact.probe.tree_ref
            fact.held = False
        self._bind(name, fact, "out")
        return name

    def _view_source(self, fact):
        """A live name that can stand for the storage a new input views: a
        tensor over the same storage, at offset 0, contiguous, of the same
        dtype, reaching at least as far as the view does (the largest such
        one). Returns (name, plain), plain when the input is a mere reshape
        of it (same element count, offset 0, contiguous)."""
        same = self.by_storage.get(fact.storage)
        if not same:
            return None
        need = extent(fact.shape, fact.offset, fact.stride)
        best = None
        for e in list(same.values()):
            f = e.fact
            if f.offset != 0 or f.dtype != fact.dtype:
                continue
            if not is_contiguous(f.shape, f.stride) or not e.fact.alive():
                continue
            n = numel(f.shape)
            if n < need:
                continue
            if best is None or n > best[1]:
                best = (e.name, n)
        if best is None:
            return None
        plain = (fact.offset == 0 and is_contiguous(fact.shape, fact.stride)
                 and numel(fact.shape) == best[1])
        return best[0], plain

    def _eager_view(self, fact, src, plain):
        name = self._fresh("view")
        rec = {"op": "eager", "out": name, "k": "view", "a": src, "shape": fit_shape(fact.shape)}
        if not plain:
            fields = view_fields(fact.shape, fact.offset, fact.stride)
            if not fields:  # folded past MAX_DIMS: not a view the format can say
                return None
            rec.update(fields)
        src_dtype = self.entries[src].fact.dtype
        if fact.dtype != src_dtype:
            rec["dtype"] = fact.dtype
        self.trace.add(rec)
        self._bind(name, fact, "view")
        return name

    def _name_view(self, fact):
        """Names an input that is a view of storage the trace may not hold
        yet: an eager `view` of a named tensor over it; else of its base
        (tensor._base, named now); else of a tensor standing for the whole
        storage, which lives as long as the storage does. Returns None for a
        tensor that is its storage's sole, plain occupant."""
        got = self._view_source(fact)
        if got is not None:
            return self._eager_view(fact, got[0], got[1])
        whole = fact.storage_numel
        covers = (fact.offset == 0 and is_contiguous(fact.shape, fact.stride)
                  and (whole is None or whole <= numel(fact.shape)))
        if covers:
            return None
        base = None
        if fact.base is not None:
            try:
                base = fact.base()
            except Exception:
                base = None
        # Only a base the format can hold as a plain tensor (contiguous, at
        # offset 0, of the view's dtype) is named; otherwise the storage is.
        if (base is not None and base.storage == fact.storage and base.view_key != fact.view_key
                and base.offset == 0 and is_contiguous(base.shape, base.stride)
                and base.dtype == fact.dtype):
            if self.lookup(base) is None and self._name_view(base) is None:
                self._tensor_record(base, "tensor", "base")
            got = self._view_source(fact)
            if got is not None:
                return self._eager_view(fact, got[0], got[1])
        if whole is None or whole < extent(fact.shape, fact.offset, fact.stride):
            return None
        # The storage itself: alive while the storage is (a view keeps it).
        stor = Fact([whole], fact.device, None, fact.storage, 0, (1,),
                    fact.probe.storage_alive if fact.probe is not None else fact.alive,
                    None, fact.dtype, whole, None)
        whole_name = self._tensor_record(stor, "tensor", "storage")
        return self._eager_view(fact, whole_name, False)

    def _bind_outputs(self, outs, outputs):
        if not outputs:
            return
        # Bind outputs. A name whose object comes back again (a replay hands
        # out the same cached tensor object every time) is retired, since the
        # program's variable now holds the new binding. An output that is a
        # tensor the program already names otherwise (a parameter a forward
        # returns for autograd to save, an input returned as is) stays
        # represented by that name: its output name is dropped at once, or it
        # would live as long as the parameter.
        drop = []
        renamed = []  # (order, name) of names retired by _rename
        start = self.order  # entries up to this one were bound before this call's outputs
        entries = self.entries
        by_obj_entry = self.by_obj_entry
        for name, f in zip(outs, outputs):
            if f is None:
                continue
            ref = f.obj_ref
            obj = ref() if ref is not None else None
            # lookup(f), with the entry it finds: the object's own name, else
            # the name over its view.
            e = by_obj_entry.get(id(obj)) if obj is not None else None
            if e is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj:
                old, same_obj = e.name, True
            else:
                old = self.by_view.get(f.view_key)
                e = entries.get(old) if old is not None else None
                if e is None:
                    old = None
                else:
                    same_obj = obj is not None and e.fact.obj_ref is not None and e.fact.obj_ref() is obj
            takeover = True
            if old is not None and old not in drop:
                if e.kind == "out":
                    if same_obj:
                        order = e.order
                        if e.fact is f and order <= start and self._rename(e, name, obj):
                            renamed.append((order, old))
                            continue
                        drop.append(old)
                elif (same_obj or e.fact.view_key == f.view_key) and e.fact.alive():
                    takeover = False
                    drop.append(name)
            self._bind(name, f, "out", takeover)
        if renamed:
            if len(renamed) == 1 and not drop:  # a steady replay's one output
                names = [renamed[0][1]]
            else:
                gone = sorted(renamed + [(self.entries[n].order, n) for n in drop])
                names = [n for _, n in gone]
                drop.sort(key=lambda n: self.entries[n].order)
        elif drop:
            drop.sort(key=lambda n: self.entries[n].order)
            names = drop
        else:
            return
        self._forget_many(drop)
        self.counts["dels"] += len(names)
        _add_del(self.trace, names)

    def _rename(self, e, name, obj):
        """Binds `name` to the tensor of output entry e, whose name retires:
        what _bind(name, e.fact, "out") then _forget(e.name) leave behind,
        done in place (no new entry, Fact or weak reference). It is a
        replay's cached output handed out again, found with its Fact. The
        storage's other names keep their places; the new name goes last,
        as _bind puts it, and the storage's output name, if it was e's,
        becomes the first output name left over it, as _forget picks it.
        Returns False, changing nothing, when e is not where it should be."""
        st = e.fact.storage
        same = self.by_storage.get(st)
        old = e.name
        if same is None or same.get(old) is not e:
            return False
        if e.in_memo:
            self.epoch += 1
        self.order += 1
        e.order = self.order
        del self.entries[old]
        self.entries[name] = e
        del same[old]
        same[name] = e
        self._rename_out_storage(st, old, name, same)
        oid = id(obj)
        if e.obj_id is not None and e.obj_id != oid and self.by_obj.get(e.obj_id) == old:
            del self.by_obj[e.obj_id]
            del self.by_obj_entry[e.obj_id]
        self.by_obj[oid] = name
        self.by_obj_entry[oid] = e
        e.obj_id = oid
        self.by_view[e.fact.view_key] = name
        e.name = name
        if e.fact.held:
            if e.wr is None:
                self._watch.pop(old, None)
                e.wr = weakref.ref(obj, self._died)
            self._held_wr[id(e.wr)] = name
        else:
            if e.wr is not None:
                self._held_wr.pop(id(e.wr), None)
                e.wr = None
            self._watch.pop(old, None)
            self._watch[name] = e
        return True

    def _rename_out_storage(self, st, old, name, same):
        """The output name that stands for storage st, after old was renamed
        name: the new name where old stood (or nothing did), among the
        storage's names (same) an output's."""
        if self.out_storage.get(st, old) == old:
            if len(same) == 1:
                self.out_storage[st] = name
            else:
                self.out_storage[st] = next(o.name for o in same.values() if o.kind == "out")

    def _rename_replayed(self, e, name, order=None):
        """_rename for the output entry of a replay the recorder's short path
        checked (Recorder._fast_after): the same object as the entry's, over
        the same storage, named there, polled (not held), so of _rename
        only what changes is done. With order, the entry takes that order
        (the last of a deferred run's renames, Recorder._write_pending,
        which counted the others) instead of the next one."""
        old = e.name
        if e.in_memo:
            self.epoch += 1
        if order is None:
            self.order += 1
            order = self.order
        e.order = order
        entries = self.entries
        del entries[old]
        entries[name] = e
        st = e.fact.storage
        same = self.by_storage[st]
        del same[old]
        same[name] = e
        self._rename_out_storage(st, old, name, same)
        self.by_obj[e.obj_id] = name
        self.by_view[e.fact.view_key] = name
        e.name = name
        watch = self._watch
        watch.pop(old, None)
        watch[name] = e


class _Deaths:
    """Session's liveness bookkeeping: the names found dead, polled at
    every event, and their dels."""

    def _flush_dead(self, names):
        if self._dead_objs:
            self._poll_dead_objs()
        watch = self._watch
        if not watch:
            return
        if len(watch) < len(names):
            # Fewer polled names than arguments (a model's parameters are
            # held, not polled): the polled ones among the arguments, found
            # from the smaller side. (The dels come out in binding order
            # either way.)
            got = self._argset
            if got is not None and got[0] is names:  # a loop's calls share one args list
                args = got[1]
            else:
                args = set(names)
                self._argset = (names, args)
            if args.isdisjoint(watch):  # (a steady loop: only its outputs are polled)
                return
            names = [n for n in watch if n in args]
        # (Each polled argument once: an argument passed twice is one name.)
        dead = self.watch_dead(dict.fromkeys(filter(None, map(watch.get, names))))
        if dead is not None:
            self._emit_dels(dead)

    def _emit_dels(self, dead):
        """One `del` for the dead entries, in binding order, names forgotten."""
        if not dead:
            return
        if len(dead) > 1:  # (one, a loop's last input: no key function's call)
            dead.sort(key=_ORDER)
        names = [e.name for e in dead]
        for e in dead:
            if e.kind == "out" and _cached_output(e.fact):
                self._dead_cached[e.fact.view_key] = e
        self._forget_many(names)
        self.counts["dels"] += len(names)
        _add_del(self.trace, names)

    def _poll_dead_objs(self, upto=None):
        """Names whose object died since the last event join the polled ones
        (their storage may live on: autograd's unpacked copies, views);
        with upto, only those that died while the step counter was at upto
        or above (before the step that took it below)."""
        later = []
        while self._dead_objs:
            wr, at = self._dead_objs.pop()
            if upto is not None and at < upto:
                later.append((wr, at))
                continue
            name = self._held_wr.pop(id(wr), None)
            e = self.entries.get(name) if name is not None else None
            if e is not None and e.wr is wr:
                e.wr = None
                self._watch[name] = e
        self._dead_objs.extend(later)

    def flush_deaths(self, upto=None):
        """Emits one `del` for every named tensor that died since the last
        event (with upto, of the objects whose death the session heard of,
        those that died before the step counter went below upto), in
        binding order, so a replay drops them where PyTorch did."""
        if self._dead_objs:
            self._poll_dead_objs(upto)
        if not self._watch:
            return  # nothing is polled: every named object is alive
        dead = self.watch_dead(self._watch.values())
        if dead is not None:
            self._emit_dels(dead)


def _add_del(trace, names):
    """A del record of names: its line, as the writer's encoder joins it
    for the record's dict (_LineEncoder.line), where the names need no
    escaping and the trace checks no record (the recorder's): no dict,
    no check, no encoding at the write (a loop's dead input, every call)."""
    j = _names_json(names) if not getattr(trace, "strict", True) else None
    if j is not None:
        trace.records.append('{"op": "del", "names": ' + j + "}")
    else:
        trace.add({"op": "del", "names": names})
