"""One torch.autograd.Function for every operation, from the op table's slots.

The forward runs the call's plan made with CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD and keeps
the statistics (with precomputed statistics, CLNORM_USE_GLOBAL_STATS, they are inputs and are
kept as such); the backward runs the same plan's backward pass: every input the backward
takes (clnorm_slot_query says which) from the saved forward inputs and statistics, dy (and
dsum) from the incoming gradients, and as outputs the gradients of exactly the inputs that
need one. Inputs reach here dense (functional.py copies strided ones through torch, which
differentiates the copy), so each gradient has its input's layout.

Under create_graph=True the gradients also carry a graph (_with_graph): torch's own gradient
of the operation written in torch operations (_torch_graph), whose values are replaced by the
library's, so a second differentiation sees the derivative of the same function.
"""
import torch

from . import _core, _lib, _torch_graph

S = _lib.SLOT
# The gradient slot of each differentiable input slot (x and residual share dx: the gradient
# of s = x + residual reaches both) and of each output slot.
_GRAD_OF_INPUT = {S["x"]: S["dx"], S["residual"]: S["dx"], S["gamma"]: S["dgamma"],
                  S["beta"]: S["dbeta"], S["scale"]: S["dscale"], S["shift"]: S["dshift"]}
_GRAD_OF_OUTPUT = {S["y"]: S["dy"], S["sum"]: S["dsum"]}
_STATS = (S["mean"], S["rstd"])


def apply(call):
    slots = tuple(slot for slot, _ in call.inputs)
    tensors = tuple(t for _, t in call.inputs)
    out = _NormFunction.apply(call, slots, *tensors)
    return out if isinstance(out, tuple) else (out,)


class _NormFunction(torch.autograd.Function):
    @staticmethod
    def forward(fctx, call, slots, *tensors):
        key = list(call.key)
        # Precomputed statistics (an input) exclude saving them; otherwise the backward
        # reads the forward's.
        key[7] |= _lib.WITH_BACKWARD | (0 if key[7] & _lib.USE_GLOBAL_STATS else _lib.SAVE_STATS)
        ctx = _core.context_of(call)
        plan = ctx.plan(tuple(key))
        finfo = plan.infos[_lib.FORWARD]
        asked = [slot for slot, _, _ in call.outputs]
        stats = [s for s in _STATS if s in finfo and finfo[s][1] and s not in asked]
        full = _core.Call(call.kind, call.like, plan.key, list(zip(slots, tensors)),
                          list(call.outputs) + [(s, (finfo[s][3],), None) for s in stats])
        outs = _core.run(full, ctx=ctx)
        n = len(call.outputs)
        saved = dict(zip(stats, outs[n:]))
        # Statistics asked for as results (return_stats) carry no gradient; the backward
        # keeps a copy of them, one value per row, which the caller's in-place changes to the
        # results cannot reach.
        returned_stats = []
        for slot, o in zip(asked, outs):
            if slot in _STATS:
                returned_stats.append(o)
                saved[slot] = o.reshape(-1).clone()
        fctx.save_for_backward(*tensors)
        fctx.clnorm = (ctx, full, slots, saved, call.outputs)
        fctx.set_materialize_grads(False)
        if returned_stats:
            fctx.mark_non_differentiable(*returned_stats)
        return outs[0] if n == 1 else tuple(outs[:n])

    @staticmethod
    def backward(fctx, *grads):
        # Grad mode is on here exactly when the caller asked for create_graph=True: the
        # gradients then need a graph of their own (_with_graph); otherwise they are numbers.
        create_graph = torch.is_grad_enabled()
        with torch.no_grad():
            result = _library_backward(fctx, grads)
        if create_graph:
            _with_graph(fctx, grads, result)
        return tuple(result)


def _library_backward(fctx, grads):
    """The first-order gradients from the library's backward pass: [None, None, one per
    input (None where none is needed)]."""
    ctx, full, slots, stats, out_specs = fctx.clnorm
    tensors = fctx.saved_tensors
    binfo = ctx.plan(full.key).infos[_lib.BACKWARD]
    inputs = [(s, t) for s, t in zip(slots, tensors) if s in binfo and not binfo[s][1]]
    inputs += [(s, t) for s, t in stats.items() if s in binfo]
    for (slot, shape, order), g in zip(out_specs, grads):
        gslot = _GRAD_OF_OUTPUT.get(slot)
        if gslot is None:
            continue  # a statistic returned as a result: no gradient flows from it
        if g is None:
            if binfo[gslot][0] != _lib.SLOT_REQUIRED:
                continue  # an unused output (the sum): nothing flows back from it
            g = torch.zeros(shape, dtype=tensors[0].dtype)
        inputs.append((gslot, _dense(g, order)))
    outputs, wanted = [], {}
    x_order = out_specs[0][2]  # dx has the layout of x, which y shares
    for i, (slot, t) in enumerate(zip(slots, tensors)):
        if not fctx.needs_input_grad[2 + i] or slot not in _GRAD_OF_INPUT:
            continue  # precomputed statistics are constants (functional.py refuses
            # ones that require a gradient)
        gslot = _GRAD_OF_INPUT[slot]
        if gslot not in wanted:
            wanted[gslot] = len(outputs)
            order = x_order if gslot == S["dx"] else None
            outputs.append((gslot, tuple(t.shape), order))
    result = [None, None] + [None] * len(tensors)
    if outputs:
        got = _core.run(_core.Call(full.kind, full.like, full.key, inputs, outputs),
                        _lib.BACKWARD, ctx=ctx)
        used = set()
        for i, (slot, t) in enumerate(zip(slots, tensors)):
            if not fctx.needs_input_grad[2 + i] or slot not in _GRAD_OF_INPUT:
                continue
            g = got[wanted[_GRAD_OF_INPUT[slot]]]
            if id(g) in used:
                g = g.clone()  # x and residual: one dx, two gradients that must not alias
            used.add(id(g))
            result[2 + i] = g if g.dtype == t.dtype else g.to(t.dtype)
    return result


def _with_graph(fctx, grads, result):
    """Gives each gradient in result the graph of the same gradient taken by torch through
    the operation's formula (_torch_graph): value + (g - g.detach()), so the value stays the
    library's and a second differentiation sees torch's derivative of it (the same function).
    The incoming gradients may take part (a Hessian-vector product differentiates by them)."""
    _, full, slots, _, out_specs = fctx.clnorm
    tensors = fctx.saved_tensors
    wanted = [i for i in range(len(tensors)) if result[2 + i] is not None]
    if not wanted or tensors[0].numel() == 0:
        return  # nothing to differentiate, or an empty batch: constant (zero) gradients
    with torch.enable_grad():
        outs = _torch_graph.outputs(full.key, slots, tensors, out_specs)
        pairs = [(outs[slot], g) for (slot, _, _), g in zip(out_specs, grads)
                 if g is not None and slot in outs]
        if not pairs:
            return  # no gradient came in: the library's zeros are constants
        got = torch.autograd.grad([o for o, _ in pairs], [tensors[i] for i in wanted],
                                  [g for _, g in pairs], create_graph=True, allow_unused=True)
        for i, g in zip(wanted, got):
            if g is not None:
                result[2 + i] = result[2 + i] + (g - g.detach())


def _dense(g, order):
    """g laid out as the library reads it: row-major, or in the physical order of a
    channels-last output."""
    if order is None:
        return g.contiguous()
    inv = [0] * len(order)
    for i, o in enumerate(order):
        inv[o] = i
    return g.permute(order).contiguous().permute(inv)
