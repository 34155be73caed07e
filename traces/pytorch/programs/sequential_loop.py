"""A loop at a script's top level over new batches through one of torch's
own modules compiled whole (nn.Sequential: its forward is torch's code,
so the frame Dynamo runs the compiled code in is the library's): 80
batches, the output read on the host every 25th. The calls' src is this
script's line and the def's the frame Dynamo runs the compiled code in
(facts.dynamo_frame: for one of torch's own modules compiled whole,
torch._dynamo.external_utils' `inner`, which wraps the module's call);
the new-input loop takes the fresh path, its queue written at its bound
more than once (issue 33 items 3 and 5). On an H100 (2026-12-05 run
23): 80 calls, each with this line as its src, 76 queued, 2 bound
writes that kept a call queued."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64)).cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
with torch.no_grad():
    for it in range(80):
        torch.compiler.cudagraph_mark_step_begin()
        y = compiled(torch.randn(32, 64, device="cuda"))
        if it % 25 == 24:
            print("batch %d: %.4f" % (it, y.sum().item()))
