"""Shapes and function bodies: names, shapes, strides and views as the
format has them (numel, fit_shape, view_fields, dtype_name), and the `def`
of a compiled function synthesised from what its calls showed (synth_def,
checked by check_body). The standard library alone."""

import re

from .jsonl import _DTYPE_BY_SIZE, DTYPES, MAX_DIMS


_NOT_NAME = re.compile(r"[^A-Za-z0-9_]+")


def sanitize(name, fallback):
    """A trace name made of letters, digits and '_' (never '_' alone, which
    the format reserves for "bind nothing"), from any Python-side name."""
    s = _NOT_NAME.sub("_", str(name or "")).strip("_")
    if not s:
        s = fallback
    if s[0].isdigit():
        s = fallback + "_" + s
    return s


def numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def fit_shape(shape):
    """The shape as the format can hold it: at most MAX_DIMS dimensions.
    Extra leading dimensions are folded into one, which keeps the element
    count (so memory sizes, and views between tensors, stay right)."""
    shape = [int(d) for d in shape]
    if len(shape) <= MAX_DIMS:
        return shape
    extra = len(shape) - MAX_DIMS + 1
    return [numel(shape[:extra])] + shape[extra:]


def contiguous_strides(shape):
    out, acc = [], 1
    for d in reversed(list(shape)):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def is_contiguous(shape, stride):
    """Row-major contiguity as PyTorch judges it: strides of size-1 dims do
    not matter."""
    acc = 1
    for d, st in zip(reversed(list(shape)), reversed(list(stride))):
        if d != 1 and st != acc:
            return False
        acc *= d
    return True


def extent(shape, offset, stride):
    """Elements of the storage a view reaches: offset + sum((size-1)*stride) + 1
    (just offset for an empty view), the bound the checker holds it to."""
    if any(int(d) == 0 for d in shape):
        return int(offset)
    return int(offset) + sum((int(d) - 1) * int(st) for d, st in zip(shape, stride)) + 1


def view_fields(shape, offset, stride, whole=False):
    """The `view` statement's optional offset/strides for a view of this
    shape, offset (in elements of the storage) and strides: none for a
    contiguous view at offset 0 of the whole base (whole: a plain
    reshape, same element count); a part of the base always says its
    strides, since only a plain view keeps the element count. A shape
    folded past MAX_DIMS cannot carry strides: {} (the caller decides)."""
    shape = list(shape)
    if len(shape) > MAX_DIMS or stride is None:
        return {}
    out = {}
    if offset:
        out["offset"] = int(offset)
    if not is_contiguous(shape, stride):
        out["strides"] = [int(x) for x in stride]
    elif offset or not whole:
        out["strides"] = [int(x) for x in contiguous_strides(shape)]
    return out


def dtype_name(dtype, itemsize=None):
    """The format's name of a torch dtype (torch.bfloat16 -> "bfloat16"); a
    dtype the format lacks maps to the known one of its element size, or
    None when there is none (complex128, 16-byte types)."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    if name in DTYPES:
        return name
    if itemsize is None:
        return None
    return _DTYPE_BY_SIZE.get(int(itemsize))


_ELEMENTWISE2 = ("add", "sub", "mul", "div", "max", "min")
_ELEMENTWISE1 = ("neg", "relu", "exp", "sqrt", "tanh", "abs")


def check_body(params, shapes, body, returns):
    """Checks a def body against the format's rules and returns the shape of
    every name; raises ValueError naming the statement otherwise. `shapes`
    maps each param to its shape. Kept beside synth_def so a synthesised
    body that the checker would refuse never reaches a file."""
    env = {p: list(shapes[p]) for p in params}
    for p in params:
        if len(env[p]) > MAX_DIMS:
            raise ValueError("param %s has %d dims" % (p, len(env[p])))
    for i, st in enumerate(body):
        k, out = st.get("k"), st.get("out")
        where = "statement %d (%s -> %s)" % (i, k, out)
        if not out or out == "_":
            raise ValueError("%s: needs an out name" % where)
        a = st.get("a")
        if a is not None and a not in env:
            raise ValueError("%s: %s is not defined" % (where, a))
        if k in _ELEMENTWISE2:
            b = st.get("b")
            if isinstance(b, str):
                if b not in env:
                    raise ValueError("%s: %s is not defined" % (where, b))
                if env[b] != env[a] and env[b] != [1]:
                    raise ValueError("%s: b shape %s does not fit a %s" % (where, env[b], env[a]))
            elif not isinstance(b, (int, float)) or isinstance(b, bool):
                raise ValueError("%s: b must be a name or a number" % where)
            shape = env[a]
        elif k in _ELEMENTWISE1 or k == "copy":
            shape = env[a]
        elif k == "sum":
            shape = [1]
        elif k == "matmul":
            b = st.get("b")
            if len(env[a]) != 2 or not isinstance(b, str) or len(env[b]) != 2 or env[a][1] != env[b][0]:
                raise ValueError("%s: matmul shapes do not fit" % where)
            shape = [env[a][0], env[b][1]]
        elif k == "view":
            shape = list(st.get("shape", env[a]))
            strides = st.get("strides")
            if strides is not None:
                if len(strides) != len(shape) or any(int(x) < 0 for x in strides):
                    raise ValueError("%s: strides %s do not fit shape %s" % (where, strides, shape))
            elif "offset" not in st and numel(shape) != numel(env[a]):
                raise ValueError("%s: view of %s to %s changes the element count" % (where, env[a], shape))
            if int(st.get("offset", 0)) < 0:
                raise ValueError("%s: negative offset" % where)
        elif k in ("fill", "empty"):
            shape = list(st["shape"])
            if k == "fill" and not isinstance(st.get("value"), (int, float)):
                raise ValueError("%s: fill needs a value" % where)
        else:
            raise ValueError("%s: unknown kernel" % where)
        if len(shape) > MAX_DIMS or any(d < 0 for d in shape):
            raise ValueError("%s: bad shape %s" % (where, shape))
        if out in params and shape != env[out]:
            raise ValueError("%s: writes %s into param %s of shape %s" % (where, shape, out, env[out]))
        env[out] = shape
    for r in returns:
        if r not in env:
            raise ValueError("returns %s, which is not defined" % r)
    return env


class OutSpec:
    """One tensor output of a function, as the first call showed it.

    alias is None (a new tensor), ("param", j) when it shares storage with
    tensor input j, or ("output", k) when it shares storage with output k of
    the same call; exact is True when it is the very same view (same shape,
    offset and strides), so the format's "returns names the param / repeats
    the name" says it exactly. offset and stride are the output's own
    (elements of its storage), for an alias that is a slice."""

    __slots__ = ("shape", "alias", "exact", "dtype", "offset", "stride", "storage_numel")

    def __init__(self, shape, alias=None, exact=False, dtype="float32", offset=0, stride=None,
                 storage_numel=None):
        self.shape = list(shape)
        # Elements of the storage under the output (None: unknown, taken as
        # the output's own); more than the output covers when it is a part
        # of a larger buffer (x[0] of a graph-made x) that later outputs share.
        self.storage_numel = storage_numel
        self.alias = alias
        self.exact = exact
        self.dtype = dtype or "float32"
        self.offset = offset
        self.stride = tuple(stride) if stride is not None else contiguous_strides(shape)

    def __repr__(self):
        return "OutSpec(%r, alias=%r, exact=%r)" % (self.shape, self.alias, self.exact)


def synth_def(fn, mode, params, param_shapes, outs, mutated=(), param_dtypes=None,
              param_views=None):
    """A def record whose body makes outputs of the observed shapes from the
    inputs. Inductor's kernels cannot be reproduced, and the tree's decisions
    depend only on which tensors exist, alias and die, so each output gets
    one small statement: an alias where PyTorch's output aliased an input or
    another output, otherwise `add` of an input of the same shape and a
    constant (a data dependency, as the real kernel has) or a `fill` of the
    shape.
    Mutated inputs get an in-place statement, which is what makes the engine
    (like PyTorch) decline graphs when the mutated input is not static.
    param_dtypes gives each param's dtype (default float32); param_views each
    param's (offset, strides) at the first call, to tell a reshape from a
    slice."""
    shapes = {p: fit_shape(s) for p, s in zip(params, param_shapes)}
    dtypes = {p: (param_dtypes[i] if param_dtypes else "float32") or "float32"
              for i, p in enumerate(params)}
    views = {p: (param_views[i] if param_views else (0, contiguous_strides(shapes[p])))
             for i, p in enumerate(params)}
    taken = set(params)
    body = []

    def fresh(base):
        name, n = base, 0
        while name in taken:
            n += 1
            name = "%s_%d" % (base, n)
        taken.add(name)
        return name

    for j in mutated:
        if 0 <= j < len(params):
            p = params[j]
            body.append({"out": p, "k": "add", "a": p, "b": 1})
    returns = []
    for i, o in enumerate(outs):
        shape = fit_shape(o.shape)
        src = None
        if o.alias is not None:
            kind, idx = o.alias
            if kind == "param" and 0 <= idx < len(params):
                src = params[idx]
            elif kind == "output" and 0 <= idx < len(returns):
                src = returns[idx]
        if src is not None:
            if o.exact and shapes[src] == shape:
                returns.append(src)
                continue
            name = fresh("r%d" % i)
            st = {"out": name, "k": "view", "a": src, "shape": shape}
            s_off, s_stride = views[src]
            plain = (not o.offset and is_contiguous(o.shape, o.stride) and not s_off
                     and is_contiguous(shapes[src], s_stride) and numel(shapes[src]) == numel(shape))
            if not plain:
                # A slice, a chunk, a transpose: the same storage at the
                # output's own offset and strides (absolute, in elements).
                fields = view_fields(o.shape, o.offset, o.stride)
                st.update(fields)
                if not fields:
                    st = None  # folded past MAX_DIMS: cannot be written as a view
            if st is not None:
                if o.dtype != dtypes[src]:
                    st["dtype"] = o.dtype  # a reinterpreting view (x.view(torch.int32))
                body.append(st)
                shapes[name], dtypes[name] = shape, o.dtype
                views[name] = (o.offset, tuple(o.stride)) if len(o.shape) <= MAX_DIMS else (0, contiguous_strides(shape))
                returns.append(name)
                continue
            taken.discard(name)
        name = fresh("r%d" % i)
        sn = o.storage_numel
        if sn and len(o.shape) <= MAX_DIMS and (
                sn != numel(o.shape) or o.offset or not is_contiguous(o.shape, o.stride)):
            # The output is a part of a buffer the graph made: the buffer
            # first, whole, then the output as its view, so that outputs
            # sharing the buffer (x[0], x[1]) fit in it as they do in PyTorch.
            base = fresh("buf%d" % i)
            bst = {"out": base, "k": "fill", "shape": [int(sn)], "value": i + 1}
            if o.dtype != "float32":
                bst["dtype"] = o.dtype
            st = {"out": name, "k": "view", "a": base, "shape": shape}
            st.update(view_fields(o.shape, o.offset, o.stride))
            body.extend((bst, st))
            shapes[base], dtypes[base] = [int(sn)], o.dtype
            views[base] = (0, contiguous_strides([int(sn)]))
            shapes[name], dtypes[name] = shape, o.dtype
            views[name] = (o.offset, tuple(o.stride))
            returns.append(name)
            continue
        same = next((p for p in params if shapes[p] == shape and dtypes[p] == o.dtype), None)
        if same is None:
            same = next((p for p in params if shapes[p] == shape), None)
        # A different constant per output: PyTorch's compiler drops `x + 0`
        # (the output would alias x) and merges equal expressions (two
        # outputs would share one buffer), and either changes liveness when
        # the trace is run under PyTorch itself.
        if same is not None:
            st = {"out": name, "k": "add", "a": same, "b": i + 1}
            if dtypes[same] != o.dtype:
                st["dtype"] = o.dtype
        else:
            st = {"out": name, "k": "fill", "shape": shape, "value": i + 1}
            if o.dtype != "float32":
                st["dtype"] = o.dtype
        body.append(st)
        shapes[name], dtypes[name] = shape, o.dtype
        views[name] = (0, contiguous_strides(shape))
        returns.append(name)
    if all(st["k"] == "view" for st in body):
        # Every output aliases an input, yet the function reached PyTorch's
        # tree (cudagraphify'd directly, as PyTorch's own tests do): a body
        # of views alone reads as "Dynamo compiled nothing" (it runs as
        # plain Python, in cgtviz as in PyTorch). An empty [0] tensor says
        # "a graph runs here" and allocates nothing (a 0-byte request takes
        # no block, in PyTorch's allocator as in cgtviz's).
        body.append({"out": fresh("launch"), "k": "empty", "shape": [0]})
    rec = {"op": "def", "fn": fn, "params": list(params), "body": body,
           "returns": returns, "mode": mode}
    check_body(rec["params"], {p: shapes[p] for p in params}, body, returns)
    return rec
