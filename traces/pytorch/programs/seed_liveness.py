"""The forum thread's second example (shared/seed): when every output of foo
is dead, fee starts a new root; when they stay live, fee records as foo's
child (a memory dependency). The asserts are the thread's own checks of
PyTorch's tree."""
import torch


@torch.compile(mode="reduce-overhead")
def foo(x):
    return x + 1, x + 2


@torch.compile(mode="reduce-overhead")
def fee(y):
    return y * 4


def get_curr_node(device):
    return torch._inductor.cudagraph_trees.get_container(device.index).tree_manager.current_node


for i in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    inp = torch.rand([4], device="cuda")
    a, b = foo(inp)
    del a, b
    # no memory dependency: fee's node is a root
    fee(inp)
    assert get_curr_node(inp.device).parent is None

for i in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    inp = torch.rand([6], device="cuda")
    a, b = foo(inp)
    # memory dependency: a and b are live, fee's node is foo's child
    fee(inp)
    assert get_curr_node(inp.device).parent is not None
