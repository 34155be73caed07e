"""Functions PyTorch compiles but runs without CUDA graphs, beside one it
graphs, as users meet them: `normalize` updates its input in place
(PyTorch skips cudagraphs for a mutated input that is not a parameter or
a buffer), `scale` takes a CPU tensor (skipped for its CPU device), and
`head`, fed their outputs, is graphed (warmup, recording, replays). Then
torch._dynamo.reset(), as between two experiments of a notebook, and
`head` compiled and graphed again. mark_step each step."""
import torch


@torch.compile(mode="reduce-overhead")
def normalize(x):
    x.sub_(x.mean()).div_(x.std() + 1e-5)
    return x * 2


@torch.compile(mode="reduce-overhead")
def scale(x, factor):
    return x * factor.to(x.device)


@torch.compile(mode="reduce-overhead")
def head(x):
    return torch.tanh(x @ x.T).sum(dim=1)


torch.manual_seed(0)
factor = torch.tensor([0.5])  # on the CPU
for step in range(4):
    torch.compiler.cudagraph_mark_step_begin()
    x = torch.randn(16, 32, device="cuda")
    y = head(scale(normalize(x), factor))
    print("step %d sum %.4f" % (step, y.sum().item()))
torch._dynamo.reset()
for step in range(3):
    torch.compiler.cudagraph_mark_step_begin()
    y = head(torch.randn(16, 32, device="cuda"))
    print("after reset, step %d sum %.4f" % (step, y.sum().item()))
