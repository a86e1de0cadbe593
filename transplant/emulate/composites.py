"""Composite operators that choose their path by device type, run on NPU tensors as the backing runs them.

Some of torch's composite operators (CompositeImplicitAutograd: no kernel of their own, a body of
other operators) look at the device type and take another body for a PrivateUse1 tensor than for a
CPU one. An NPU kernel computed by the backing's own math then has to answer the body's calls, and
one of two things goes wrong:

* the body calls an operator the CPU has no kernel for: ``nn.LSTM``/``nn.LSTMCell`` call
  ``aten::_thnn_fused_lstm_cell`` and ``nn.GRU``/``nn.GRUCell`` ``aten::_thnn_fused_gru_cell``
  (aten/src/ATen/native/RNN.cpp: the fused cell when ``input.is_cuda() || input.is_privateuseone()``),
  which CUDA has and, on a real NPU, op-plugin (``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``
  in its function list), so the emulated run stops with "Could not run ... 'CPU' backend";
* the body is another computation, whose numbers differ from the CPU's in the last bits:
  ``scaled_dot_product_attention`` picks the CPU's flash kernel for CPU tensors and the math kernel
  for a device it does not know; RNN.cpp's layers take other paths on the CPU (oneDNN for the LSTM,
  ``use_mkldnn``), and ``nn.RNN``/``nn.GRU`` run by the device body differ from the CPU's
  (measured; the GRU also when the weights require grad under ``no_grad``).

So each of these operators gets an NPU kernel of its own (at AutogradPrivateUse1, which comes before
the composite, and at PrivateUse1, which inference mode reaches). The whole-sequence layers and
attention run on the backing data as the backing runs them, with the backing's autograd: the forward
pass records the backing's graph, and the backward pass of the NPU tensors asks that graph for the
gradients (a gradient of a gradient through them is not computed: ``once_differentiable`` says so).
The cells, which programs call in a loop, are the CPU's body written out operator for operator on the
NPU tensors, so autograd records the CPU's own graph (run whole, a cell would sum the gradients of a
hidden state used twice in another order than the CPU, and differ in the last bit). The numbers,
forward and backward, are the backing's bit for bit (tests/fixtures/emulate/identity/patterns.py).
While torch.export traces (fake NPU tensors, without data) they are torch's own body.

This replaces a Python wrapper of ``F.scaled_dot_product_attention``, which TorchScript cannot read:
the builtin stays the builtin.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable
from torch.utils import _pytree as pytree

from . import identity

aten = torch.ops.aten

# the composite operators whose body depends on the device type (aten/src/ATen/native/RNN.cpp,
# transformers/attention.cpp), run whole on the backing. (Dropout also takes another body on a
# device, native_dropout, whose numbers are the CPU's body's: the tests compare them.)
OPERATORS = (
    aten.lstm.input,
    aten.lstm.data,  # packed sequences
    aten.gru.input,
    aten.gru.data,
    aten.rnn_tanh.input,
    aten.rnn_tanh.data,
    aten.rnn_relu.input,
    aten.rnn_relu.data,
    aten.scaled_dot_product_attention.default,
)


# packed sequences' batch sizes are a host tensor, on a device too (the second argument)
_HOST_ARGUMENT = {aten.lstm.data, aten.gru.data}


def _check_devices(op, tensors: list, host=None) -> int:
    """The NPU index of the results; a non-scalar host tensor among NPU ones is the device error."""
    npu = next(t for t in tensors if t.device.type == identity.NPU)
    for tensor in tensors:
        if tensor.device.type != identity.NPU and tensor.dim() > 0 and tensor is not host:
            raise identity._device_error(op, npu, tensor)
        if tensor.device.type == identity.NPU and tensor.device.index != npu.device.index:
            raise identity._device_error(op, npu, tensor)
    return npu.device.index


def _has_data(tensor: torch.Tensor) -> bool:
    return tensor.device.type != identity.NPU or hasattr(tensor.untyped_storage(), "_emu")


def _data(value):
    """The backing data of an NPU tensor, detached, with the tensor's requires_grad: the composites
    look at it (the CPU's GRU takes another path for weights that do not require grad), also under no_grad."""
    if isinstance(value, torch.Tensor) and value.device.type == identity.NPU:
        return identity.data_of(value).detach().requires_grad_(value.requires_grad)
    return value


class _OnTheBacking(torch.autograd.Function):
    """``op`` on the backing data with the backing's autograd; its results and gradients as NPU tensors."""

    @staticmethod
    def forward(ctx, op, spec, index, *leaves):
        # one backing leaf per NPU tensor, however often it is passed (attention(h, h, h)): the backing's
        # graph sums its gradients as it sums those of the tensor used so on the backing
        same: dict = {}
        datas = []
        for value in leaves:
            if isinstance(value, torch.Tensor):
                if id(value) not in same:
                    same[id(value)] = _data(value)
                value = same[id(value)]
            datas.append(value)
        args, kwargs = pytree.tree_unflatten(datas, spec)
        with torch.enable_grad():
            out = op(*args, **kwargs)
        outs, out_spec = pytree.tree_flatten(out)
        ctx.set_materialize_grads(False)
        ctx.datas, ctx.outs, ctx.index = datas, outs, index
        ctx.out_spec = out_spec
        return tuple(identity._wrap(o.detach(), index=index) for o in outs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        pairs = [(o, identity.data_of(g)) for o, g in zip(ctx.outs, grads) if g is not None and o.requires_grad]
        firsts = {id(d): i for i, d in reversed(list(enumerate(ctx.datas)))}
        wanted = [i for i, d in enumerate(ctx.datas) if isinstance(d, torch.Tensor) and d.requires_grad]
        wanted = [i for i in wanted if firsts[id(ctx.datas[i])] == i]  # (the others' gradient is in the first's)
        found: list = [None] * len(ctx.datas)
        if pairs and wanted:
            got = torch.autograd.grad(
                [o for o, _ in pairs],
                [ctx.datas[i] for i in wanted],
                [g for _, g in pairs],
                allow_unused=True,
                retain_graph=_keep_graph(),  # the backing's graph lives as long as the NPU one (retain_graph=True)
            )
            for i, g in zip(wanted, got):
                found[i] = None if g is None else identity._wrap(g, index=ctx.index)
        return (None, None, None, *found)


def _keep_graph() -> bool:
    """Whether the backward pass running now keeps its graph (``retain_graph=True``), so that the
    NPU graph can be run backward again and the backing's graph under it must be kept too."""
    keep = getattr(torch._C._autograd, "_get_current_graph_task_keep_graph", None)
    return True if keep is None else bool(keep())


def _kernel(op, *args, **kwargs):
    leaves, spec = pytree.tree_flatten((args, kwargs))
    tensors = [v for v in leaves if isinstance(v, torch.Tensor)]
    if not all(_has_data(t) for t in tensors):  # tracing (torch.export's fake tensors): torch's own body
        return op.decompose(*args, **kwargs)
    index = _check_devices(op, tensors, args[1] if op in _HOST_ARGUMENT else None)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        flat = _OnTheBacking.apply(op, spec, index, *leaves)
        return flat[0] if len(op._schema.returns) == 1 else tuple(flat)
    datas = [_data(v) for v in leaves]
    args, kwargs = pytree.tree_unflatten(datas, spec)
    with torch.no_grad():
        out = op(*args, **kwargs)
    return pytree.tree_map_only(torch.Tensor, lambda o: identity._wrap(o, index=index), out)


def _linear(x, weight, bias):
    return torch.nn.functional.linear(x, weight, bias)


def _lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """aten::lstm_cell as the CPU computes it (RNN.cpp, LSTMCell without the fused cell), operator for
    operator on the NPU tensors, so autograd records the CPU's graph: its gradients are the CPU's too
    when the cell runs in a loop (an operator run whole on the backing would sum the gradients of a
    hidden state used twice in another order)."""
    hx_, cx = hx
    gates = _linear(hx_, w_hh, b_hh).add_(_linear(input, w_ih, b_ih))
    ingate, forgetgate, cellgate, outgate = gates.unsafe_chunk(4, 1)
    ingate, forgetgate, cellgate, outgate = (
        ingate.sigmoid_(),
        forgetgate.sigmoid_(),
        cellgate.tanh_(),
        outgate.sigmoid_(),
    )
    cy = (forgetgate * cx).add_(ingate * cellgate)
    return outgate * cy.tanh(), cy


def _gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """aten::gru_cell as the CPU computes it (RNN.cpp, GRUCell without the fused cell); see _lstm_cell."""
    igates = _linear(input, w_ih, b_ih).unsafe_chunk(3, 1)
    hgates = _linear(hx, w_hh, b_hh).unsafe_chunk(3, 1)
    reset_gate = hgates[0].add_(igates[0]).sigmoid_()
    input_gate = hgates[1].add_(igates[1]).sigmoid_()
    new_gate = igates[2].add(hgates[2].mul_(reset_gate)).tanh_()
    return (hx - new_gate).mul_(input_gate).add_(new_gate)


_CELLS = {aten.lstm_cell.default: _lstm_cell, aten.gru_cell.default: _gru_cell}

_LIBRARIES: list = []


def install(whole: bool = True) -> None:
    """Register the kernels. ``whole``: also the operators run whole on the backing with its own
    autograd (OPERATORS). Not on a GPU: a backward pass nested in an NPU tensor's backward fails in
    the autograd engine there (its streams; seen on an H200, torch 2.11), and the GPU has the fused
    recurrent kernels the CPU lacks (identity.py gives the NPU the backing's own kernels)."""
    library = torch.library.Library("aten", "IMPL")
    for op in OPERATORS if whole else ():
        kernel = _bind(op)
        library.impl(op, kernel, "AutogradPrivateUse1")
        library.impl(op, kernel, "PrivateUse1")
    for op, cell in _CELLS.items():
        library.impl(op, cell, "AutogradPrivateUse1")
        library.impl(op, cell, "PrivateUse1")
    # Tensor.record_stream: the allocator of a device keeps the memory until the stream's work is done
    # (op-plugin's record_stream); on the CPU every stream's work is done at once, so nothing is kept
    # (where the backing has a kernel of its own, identity.py gave the NPU that one already: a GPU's
    # record_stream; torch refuses a second kernel from Python for the same key, seen on an H200)
    if "aten/record_stream/PrivateUse1" not in getattr(torch.library, "_impls", ()):
        library.impl(aten.record_stream.default, _record_stream, "PrivateUse1")
    _LIBRARIES.append(library)


def _record_stream(tensor, stream) -> None:
    if stream.device_type != tensor.device.type and str(stream.device.type) != tensor.device.type:
        raise RuntimeError(f"record_stream: a stream of {stream.device} for a tensor on {tensor.device}")


def _bind(op):
    def kernel(*args, **kwargs):
        return _kernel(op, *args, **kwargs)

    return kernel
