"""PyTorch's settings: the knobs CUDAGraph Trees and Dynamo's
recompilation read (KNOBS), the format's settings they make
(settings_from_knobs), and their cheap reading from the config modules
the recorder hands in (_Knobs). Imports no torch."""

import contextvars
import functools
import operator
import sys
import types

from ._pycompat import op_call

# PyTorch's knobs that CUDAGraph Trees and Dynamo's recompilation read, as
# (which config module, dotted name). All of them are read at every call
# (tests patch them mid-program); the ones the format has a key for become
# settings (settings_from_knobs), the rest are kept in the header's meta and
# their changes noted.
KNOBS = (
    ("inductor", "triton.skip_cudagraph_warmup"),
    ("inductor", "triton.cudagraph_unexpected_rerecord_limit"),
    ("inductor", "triton.cudagraph_support_input_mutation"),
    ("dynamo", "inline_inbuilt_nn_modules"),
    ("dynamo", "recompile_limit"),
    ("dynamo", "cache_size_limit"),  # the name of recompile_limit before 2.7
    ("dynamo", "automatic_dynamic_shapes"),
    ("dynamo", "assume_static_by_default"),
    ("inductor", "triton.cudagraph_skip_dynamic_graphs"),
    ("inductor", "triton.cudagraph_dynamic_shape_warn_limit"),
    ("inductor", "triton.cudagraph_capture_sizes"),
    ("inductor", "triton.force_cudagraph_sync"),
    ("inductor", "triton.cudagraph_trees"),
    ("inductor", "graph_partition"),
    ("inductor", "triton.cudagraph_or_error"),
)
# What the format's rerecord_limit is when PyTorch bounds nothing: 2.11's
# exceed_rerecord_limit returns False while inline_inbuilt_nn_modules is on.
UNBOUNDED = 2 ** 31 - 1


def settings_from_knobs(raw):
    """The format's settings from PyTorch's knob values (a dict keyed like
    KNOBS' names, missing knobs absent): each key mirrors one knob.

      warmup_runs               0 with triton.skip_cudagraph_warmup, else 1
      rerecord_limit            triton.cudagraph_unexpected_rerecord_limit, or
                                UNBOUNDED while dynamo inline_inbuilt_nn_modules
                                is on (2.11 ignores the limit then)
      support_input_mutation    triton.cudagraph_support_input_mutation
      recompile_limit           dynamo recompile_limit (cache_size_limit)
      automatic_dynamic_shapes  dynamo automatic_dynamic_shapes
      assume_static_by_default  dynamo assume_static_by_default
      skip_dynamic_graphs       triton.cudagraph_skip_dynamic_graphs
      dynamic_shape_warn_limit  triton.cudagraph_dynamic_shape_warn_limit (None: 0, never warn)
      cudagraph_or_error        triton.cudagraph_or_error
    """
    out = {}
    skip = raw.get("triton.skip_cudagraph_warmup")
    if skip is not None:
        out["warmup_runs"] = 0 if skip else 1
    limit = raw.get("triton.cudagraph_unexpected_rerecord_limit")
    inline = raw.get("inline_inbuilt_nn_modules")
    if isinstance(inline, bool):
        # Also half of rerecord_if_static_inputs_change (with
        # support_input_mutation): whether a moved parameter re-records.
        out["inline_inbuilt_nn_modules"] = inline
    if inline is True:
        out["rerecord_limit"] = UNBOUNDED
    elif isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        out["rerecord_limit"] = min(limit, UNBOUNDED)
    rl = raw.get("recompile_limit", raw.get("cache_size_limit"))
    if isinstance(rl, int) and not isinstance(rl, bool) and rl >= 0:
        out["recompile_limit"] = min(rl, UNBOUNDED)
    for key, knob in (("support_input_mutation", "triton.cudagraph_support_input_mutation"),
                      ("automatic_dynamic_shapes", "automatic_dynamic_shapes"),
                      ("assume_static_by_default", "assume_static_by_default"),
                      ("skip_dynamic_graphs", "triton.cudagraph_skip_dynamic_graphs"),
                      ("cudagraph_or_error", "triton.cudagraph_or_error")):
        v = raw.get(knob)
        if isinstance(v, bool):
            out[key] = v
    if "triton.cudagraph_dynamic_shape_warn_limit" in raw:
        w = raw["triton.cudagraph_dynamic_shape_warn_limit"]
        if w is None:
            out["dynamic_shape_warn_limit"] = 0
        elif isinstance(w, int) and not isinstance(w, bool) and w >= 0:
            out["dynamic_shape_warn_limit"] = min(w, UNBOUNDED)
    return out


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return repr(v)


_MISSING = object()
_MAPPED_KNOBS = frozenset(("triton.skip_cudagraph_warmup", "triton.cudagraph_unexpected_rerecord_limit",
                           "triton.cudagraph_support_input_mutation", "inline_inbuilt_nn_modules",
                           "recompile_limit", "cache_size_limit", "automatic_dynamic_shapes",
                           "assume_static_by_default", "triton.cudagraph_skip_dynamic_graphs",
                           "triton.cudagraph_dynamic_shape_warn_limit", "triton.cudagraph_or_error"))


class _Knobs:
    """Reads KNOBS from torch's config modules, cheaply: one bound getter per
    knob, found once (a ConfigModule answers the dotted name directly, which
    skips the sub-config proxy)."""

    def __init__(self, inductor_config, dynamo_config):
        mods = {"inductor": inductor_config, "dynamo": dynamo_config}
        self.getters = []
        for which, name in KNOBS:
            mod = mods.get(which)
            if mod is None:
                continue
            if name == "cache_size_limit" and any(n == "recompile_limit" for n, _ in self.getters):
                continue  # the old name: reading it would warn (deprecated) for nothing
            g = self._getter(mod, name)
            if g is not None:
                self.getters.append((name, g))
        self.mapped = [(n, g) for n, g in self.getters if n in _MAPPED_KNOBS]
        self.mapped_g = [g for _, g in self.mapped]
        self.mapped_vals = None  # the mapped knobs' values at the last reading, in order
        self.last = None
        owner = {name: mods[which] for which, name in KNOBS if mods.get(which) is not None}
        homes = {}  # knob -> the module whose entry its probe reads
        probe = {n: self._probe(owner[n], n, g, homes) for n, g in self.getters}
        self.probes = [probe[n] for n, _ in self.mapped]
        # Where the format's knobs live, when every one of their probes reads
        # an entry of a ConfigModule (else None): every way to set a knob
        # (setattr, config.patch, mock.patch's set and delattr) passes
        # through its module's __setattr__ or __delattr__, which the
        # recorder counts (Recorder._count_config_writes), so a steady
        # replay compares one count instead of reading every probe.
        self.homes = ({homes[n] for n, _ in self.mapped}
                      if all(n in homes for n, _ in self.mapped) else None)
        # The format's knobs whose probe is a read of the knob (an alias
        # without a loaded target, an implied knob, a config of another
        # shape): each costs a ConfigModule.__getattr__ at every call.
        # tools/gpu/recorder-overhead.py reports them.
        self.read_per_call = [n for n, g in self.mapped if probe[n] is g]
        self.all_probes = [probe[n] for n, _ in self.getters]
        # The probes' answers at the last changed(), for the mapped knobs and
        # for all of them.
        self.probe_vals = self.all_probe_vals = None

    @staticmethod
    def _probe(mod, name, getter, homes=None):
        """A callable whose answer changes whenever the knob's value can: on
        a ConfigModule the user_override of the knob's _ConfigEntry (an
        attribute in 2.11, a ContextVar later), which every way of setting
        a knob writes (setattr, config.patch, mock.patch's delattr); a read
        of it skips the module's failed lookup and __getattr__, which cost
        microseconds a knob. The value itself is read by getter, as before,
        only when a probe moved. An alias, a knob another one implies, or a
        module of another shape is probed by reading the knob."""
        try:
            cfg = vars(mod).get("_config")
            entry = cfg.get(name) if isinstance(cfg, dict) else None
            implied = vars(mod).get("_implications") or ()
            if entry is None and isinstance(cfg, dict):
                # A knob this torch lacks: it reads None until made (which
                # only a stand-in does, through __setattr__), and reading it
                # raises inside.
                if homes is not None:
                    homes[name] = mod
                return functools.partial(operator.contains, cfg, name)
            if entry is None or name in implied:
                return getter
            home = mod
            alias = getattr(entry, "alias", None)
            if alias is not None:
                # An alias keeps no value of its own: a set writes its
                # target (_set_alias_val), whose entry is probed instead.
                entry = _Knobs._alias_entry(alias)
                if entry is None:
                    return getter
                home = sys.modules.get(alias.rpartition(".")[0])
            # 2.11: a dataclass field whose default (_UNSET_SENTINEL) is the
            # class's attribute until the knob is first set, when the
            # instance gets its own; getattr sees both (and a slot).
            u = getattr(entry, "user_override")
        except Exception:  # not torch's ConfigModule as this recorder knows it
            return getter
        if isinstance(u, contextvars.ContextVar):
            return u.get
        if homes is not None and isinstance(home, types.ModuleType) and isinstance(vars(home).get("_config"), dict):
            homes[name] = home
        return functools.partial(getattr, entry, "user_override")

    @staticmethod
    def _alias_entry(alias):
        """The _ConfigEntry an alias ("torch._dynamo.config.x") names, if
        its module is a loaded ConfigModule holding a plain entry for it;
        else None (the alias is then probed by reading it)."""
        mod_name, _, key = alias.rpartition(".")
        mod = sys.modules.get(mod_name)
        cfg = vars(mod).get("_config") if mod is not None else None
        entry = cfg.get(key) if isinstance(cfg, dict) else None
        if entry is None or getattr(entry, "alias", None) is not None:
            return None
        if key in (vars(mod).get("_implications") or ()):
            return None
        return entry

    def changed(self, all_knobs=False):
        """Whether one of the format's knobs (all_knobs: any knob) may have
        changed since the last changed() asked the same (always True the
        first time). The probes are read, never the knobs: the cost of an
        unchanged config at every call."""
        vals = self._probe_vals(all_knobs)
        if vals is None:  # a probe that cannot be read: the knobs say
            return True
        if all_knobs:
            if vals == self.all_probe_vals:
                return False
            self.all_probe_vals = vals
            return True
        if vals == self.probe_vals:
            return False
        self.probe_vals = vals
        return True

    def moved(self, all_knobs=False):
        """What changed() would answer, without changing what the next
        changed() answers: the recorder's deferred replay asks it, and a
        call it leaves to the general path asks changed() again."""
        vals = self._probe_vals(all_knobs)
        return vals is None or vals != (self.all_probe_vals if all_knobs else self.probe_vals)

    def _probe_vals(self, all_knobs):
        """The probes' answers now (None when one cannot be read); map
        runs them without a Python frame of its own."""
        try:
            return list(map(op_call, self.all_probes if all_knobs else self.probes))
        except Exception:
            return None

    @staticmethod
    def _getter(mod, name):
        try:
            if getattr(mod, name, _MISSING) is not _MISSING:
                return functools.partial(getattr, mod, name, None)  # no Python frame per read
        except Exception:
            pass
        parts = name.split(".")

        def walk(m=mod, parts=parts):
            for p in parts:
                m = getattr(m, p, None)
                if m is None:
                    return None
            return m
        try:
            if walk() is None and len(parts) > 1:
                # Absent from this torch: skip it rather than read None forever.
                return None
        except Exception:
            return None
        return walk

    def read(self, all_knobs=True):
        """The knobs' values. Without all_knobs only those the format has a
        key for are read, the others are taken from the last reading; when
        none changed, the last reading itself is returned (the same object:
        the caller's `is` test is the whole cost of an unchanged config)."""
        if not all_knobs and self.last is not None:
            try:
                vals = [g() for g in self.mapped_g]
            except Exception:
                vals = None
            if vals is not None and vals == self.mapped_vals:
                return self.last
        out = {}
        for name, g in self.getters if all_knobs else self.mapped:
            try:
                out[name] = g()
            except Exception:  # a knob that cannot be read is treated as absent
                pass
        if not all_knobs and self.last is not None:
            for name, _ in self.getters:
                if name not in _MAPPED_KNOBS and name in self.last:
                    out[name] = self.last[name]
        self.last = out
        self.mapped_vals = [out.get(n, _MISSING) for n, _ in self.mapped]
        return out
