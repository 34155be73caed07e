"""The recorder's one door to torch: every import of torch in this package
is in this module, each made when the recording first needs it (never
when cgtrace is imported), so that everything else imports without
torch."""


def load():
    """The modules a recording starts with: (torch, cudagraph_trees,
    inductor's config, GenerationTracker, Dynamo's config or None)."""
    import torch
    from torch._inductor import cudagraph_trees as cgt
    from torch._inductor import config as inductor_config
    from torch._dynamo.mutation_guard import GenerationTracker
    try:
        from torch._dynamo import config as dynamo_config
    except ImportError:
        dynamo_config = None
    return torch, cgt, inductor_config, GenerationTracker, dynamo_config


def compile_fx_module():
    """torch._inductor.compile_fx where it is loaded (cudagraph_trees
    imports it), else None: not imported here, which would change what
    the program has loaded."""
    import sys
    return sys.modules.get("torch._inductor.compile_fx")


def frame_strategies():
    """(set_code_exec_strategy, FrameAction, FrameExecStrategy) of Dynamo's
    frame hook; ImportError on a torch without them."""
    from torch._C._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy
    return set_code_exec_strategy, FrameAction, FrameExecStrategy


def inductor_cache_dir():
    """Inductor's cache folder (its generated output code)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    return cache_dir()


def cpp_include_paths():
    """The folders of torch's C++ headers (torch.utils.cpp_extension's)."""
    from torch.utils import cpp_extension
    return cpp_extension.include_paths()


def storage_weak_ref_class():
    """torch.multiprocessing.reductions.StorageWeakRef itself, for a hot
    path that binds it (StorageWeakRef below imports at its first call:
    bound, it would import at every call)."""
    from torch.multiprocessing.reductions import StorageWeakRef as cls
    return cls


def span_to_host(t):
    """Device tensor t on the host, copied as the bytes of the storage span
    it covers (a contiguous copy of those bytes, which allocates nothing on
    t's device, as t.cpu() of a tensor with gaps would), then viewed with
    t's shape and strides there."""
    import torch
    size = t.element_size()
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if n > 0)
    raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(
        t.untyped_storage(), t.storage_offset() * size, (span * size,), (1,))
    host = raw.cpu()
    return torch.empty(0, dtype=t.dtype).set_(host.untyped_storage(), 0, tuple(t.shape), tuple(t.stride()))


def storage_ref_maker(checks, torch, cpp=None):
    """(maker, of_tensor): what makes a lean fresh call's storage weak
    reference, and whether it is called with the tensor (True: made by
    cpp.storage_weak_ref, cpp.py's module, when given) or with its
    storage. The lean checks' StorageRefs over the C functions torch's
    Python StorageWeakRef calls, where checks (fastpath.load()'s) is the
    C module and this torch has them (none of StorageWeakRef's frames at
    the call, at its death or at expired()), else StorageWeakRef
    itself."""
    U = getattr(torch, "UntypedStorage", None)
    free, expired = getattr(U, "_free_weak_ref", None), getattr(U, "_expired", None)
    refs = getattr(checks, "StorageRefs", None)
    if refs is not None and free is not None and expired is not None:
        # (the module's FNS capsule: the handle made, asked and freed in
        # C, no int; else its storage_weak_ref, an int freed through torch)
        make = getattr(cpp, "FNS", None) or getattr(cpp, "storage_weak_ref", None)
        if make is not None:
            return refs(free, expired, make), True
        return refs(free, expired), False
    try:
        return storage_weak_ref_class(), False
    except ImportError:  # (a torch without it: _fact's, which fails there as it would)
        return StorageWeakRef, False


def StorageWeakRef(stor):
    """torch.multiprocessing.reductions.StorageWeakRef, imported once."""
    global StorageWeakRef
    from torch.multiprocessing.reductions import StorageWeakRef as cls
    StorageWeakRef = cls
    return cls(stor)
