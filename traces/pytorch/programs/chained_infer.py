"""Two functions compiled apart and chained in inference without
mark_step, fee(foo(x)[1]), a pattern users report (pytorch#122192,
#152887, #160281): in PyTorch 2.11 fee's call starts a new generation
while foo's path is still warming up, frees foo's live output, and then
reads it, so the call raises the overwritten error. Worse, the tree then
fails every new generation (an AssertionError in
dealloc_current_path_weakrefs) while that path's outputs live: the next
steps, with cudagraph_mark_step_begin() and a clone, raise it too. Both
errors are printed; the program exits 0."""
import torch


@torch.compile(mode="reduce-overhead")
def foo(x):
    return x + 1, x * 2


@torch.compile(mode="reduce-overhead")
def fee(y):
    return y.sin() + y


x = torch.randn(256, 64, device="cuda")
with torch.no_grad():
    try:
        print("chained: %.4f" % fee(foo(x)[1]).sum().item())
    except RuntimeError as e:
        print("chained: %s" % str(e).splitlines()[0][:100])
    for step in range(4):
        torch.compiler.cudagraph_mark_step_begin()
        try:
            y = foo(x)[1].clone()
            print("step %d: %.4f" % (step, fee(y).sum().item()))
        except AssertionError as e:
            print("step %d: %s from the tree: %s" % (step, type(e).__name__, e))
