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


def storage_weak_ref_class():
    """torch.multiprocessing.reductions.StorageWeakRef itself, for a hot
    path that binds it (StorageWeakRef below imports at its first call:
    bound, it would import at every call)."""
    from torch.multiprocessing.reductions import StorageWeakRef as cls
    return cls


def StorageWeakRef(stor):
    """torch.multiprocessing.reductions.StorageWeakRef, imported once."""
    global StorageWeakRef
    from torch.multiprocessing.reductions import StorageWeakRef as cls
    StorageWeakRef = cls
    return cls(stor)
