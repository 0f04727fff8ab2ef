"""Rule tables for the Liger-Kernel benchmark importer.

KernelIndex's public Liger importer (SamMausberg/KernelIndex, commit e6c5a71) decides which
CSV rows become runs and what identity documents they point at.  kindex reproduces those
rules here as plain data plus small binder functions, so the bundles it writes carry the
same digests KernelIndex computes.  Tables that go beyond KernelIndex (further GPUs, the
peak-memory protocol, the generic binding) are kindex's own and are marked as such.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

API_VERSION = "kernelindex.dev/v1alpha1"
LIGER_REPO_URL = "https://github.com/linkedin/Liger-Kernel"
SOURCE_SLUG = "liger-kernel-bench"

#: torch dtype names in benchmark configs -> KernelIndex dtype tokens.
DTYPES: dict[str, str] = {
    "torch.bfloat16": "bf16",
    "torch.float16": "fp16",
    "torch.float32": "fp32",
}

#: What each timed pass measures (KernelIndex wording; it is part of the protocol digest).
MODES: dict[str, str] = {
    "forward": "the module forward pass",
    "backward": "the backward pass of the module output given a random upstream gradient",
    "full": "the forward pass plus the backward pass",
}

#: kindex's wording for passes KernelIndex does not curate (generic protocols only).
EXTRA_MODES: dict[str, str] = {
    "no-grad-forward": "the module forward pass under torch.no_grad()",
}


@dataclass(frozen=True)
class Binding:
    """Concrete workload of one row: integer axes, the float dtype, optional fp32 scalars."""

    axes: dict[str, int]
    dtype: str
    scalars: dict[str, float | int] | None = None


Config = dict[str, Any]
Binder = Callable[[int, str, Config], Binding | None]


@dataclass(frozen=True)
class Tensor:
    """One signature argument: symbolic or literal dims, and a dtype ("cfg" = workload's)."""

    name: str
    shape: tuple[str | int, ...]
    dtype: str = "cfg"


@dataclass(frozen=True)
class KernelSpec:
    """A curated Liger kernel: its OperationSpec signature and the binder of its configs."""

    csv_name: str
    slug: str
    family: str
    title: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    bind: Binder
    derived: dict[str, str] = field(default_factory=dict)


# --- value guards, with JavaScript semantics (JSON numbers; booleans are not numbers) -------


def is_number(value: object) -> bool:
    """True for JSON numbers (a JS `typeof value === "number"`), never for booleans."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def pos_int(value: object) -> int | None:
    """A positive integral JSON number as int, else None (KernelIndex's `int`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)  # JSON.parse reads an integer past 1.8e308 as Infinity
    except OverflowError:
        return None
    if not math.isfinite(number) or number <= 0 or not number.is_integer():
        return None
    return int(value)


def dtype_of(value: object) -> str | None:
    """The dtype token of a config's torch dtype string, or None."""
    return DTYPES.get(value) if isinstance(value, str) else None


def pos_float(value: object) -> float | int | None:
    """A positive finite JSON number (KernelIndex's `eps`), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return value if math.isfinite(value) and value > 0 else None
    except OverflowError:  # an integer past 1.8e308: Infinity to JSON.parse
        return None


def num_equals(value: object, expected: float) -> bool:
    """JS strict equality against a number: a JSON number of that value, not a boolean."""
    return is_number(value) and value == expected


# --- binders (one per config era; None when the row's config is not understood) ------------


def rows_hidden(with_eps: bool) -> Binder:
    """{M, dtype[, eps]} configs with the hidden size swept as H or N."""

    def bind(x_value: int, x_name: str, cfg: Config) -> Binding | None:
        rows, dtype = pos_int(cfg.get("M")), dtype_of(cfg.get("dtype"))
        epsilon = pos_float(cfg.get("eps")) if with_eps else None
        if not rows or not dtype or (with_eps and not epsilon):
            return None
        if x_name not in ("H", "N"):
            return None
        return Binding(
            {"rows": rows, "hidden": x_value}, dtype, {"eps": epsilon} if epsilon else None
        )

    return bind


def tokens_vocab_fp32(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """{B, T} configs with the vocabulary swept; the benchmarks generate fp32 inputs."""
    batch, seq = pos_int(cfg.get("B")), pos_int(cfg.get("T"))
    if not batch or not seq or x_name != "V":
        return None
    return Binding({"tokens": batch * seq, "vocab": x_value}, "fp32")


def bind_jsd(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """jsd: the V-sweep era ({B, T}) or the BT-sweep era ({vocab_size})."""
    if x_name == "V":
        return tokens_vocab_fp32(x_value, x_name, cfg)
    if x_name == "BT":
        vocab = pos_int(cfg.get("vocab_size"))
        return Binding({"tokens": x_value, "vocab": vocab}, "fp32") if vocab else None
    return None


def bind_embedding(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """embedding: {B, T, D, dtype} with the vocabulary swept."""
    batch, seq, hidden = pos_int(cfg.get("B")), pos_int(cfg.get("T")), pos_int(cfg.get("D"))
    dtype = dtype_of(cfg.get("dtype"))
    if not batch or not seq or not hidden or not dtype or x_name != "V":
        return None
    return Binding({"batch": batch, "seq": seq, "hidden": hidden, "vocab": x_value}, dtype)


def bind_rope(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """rope / llama4_rope: heads and dtype fixed, seq (T) or hidden (H) swept."""
    q_heads, kv_heads = pos_int(cfg.get("num_q_heads")), pos_int(cfg.get("num_kv_heads"))
    dtype = dtype_of(cfg.get("dtype"))
    if not q_heads or not kv_heads or not dtype:
        return None
    seq = x_value if x_name == "T" else pos_int(cfg.get("seq_len"))
    hidden = x_value if x_name == "H" else pos_int(cfg.get("hidden_size"))
    if not seq or not hidden or hidden % q_heads != 0:
        return None
    return Binding({"seq": seq, "hidden": hidden, "q_heads": q_heads, "kv_heads": kv_heads}, dtype)


def mlp(batch_key: str, act: str) -> Binder:
    """SwiGLU/GeGLU MLP configs: batch, hidden, intermediate, dtype, activation; T swept."""

    def bind(x_value: int, x_name: str, cfg: Config) -> Binding | None:
        batch = pos_int(cfg.get(batch_key))
        hidden, inter = pos_int(cfg.get("hidden_size")), pos_int(cfg.get("intermediate_size"))
        dtype = dtype_of(cfg.get("dtype"))
        if not batch or not hidden or not inter or not dtype:
            return None
        if x_name != "T" or cfg.get("hidden_act") != act:
            return None
        return Binding(
            {"batch": batch, "seq": x_value, "hidden": hidden, "intermediate": inter}, dtype
        )

    return bind


def bind_relu_squared(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """relu_squared: {M, dtype} with N swept."""
    rows, dtype = pos_int(cfg.get("M")), dtype_of(cfg.get("dtype"))
    if not rows or not dtype or x_name != "N":
        return None
    return Binding({"rows": rows, "hidden": x_value}, dtype)


def bind_group_norm(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """group_norm: {M, H, channels_per_group, dtype, eps} with channels (C) swept."""
    batch, hidden = pos_int(cfg.get("M")), pos_int(cfg.get("H"))
    per_group, dtype = pos_int(cfg.get("channels_per_group")), dtype_of(cfg.get("dtype"))
    epsilon = pos_float(cfg.get("eps"))
    if not batch or not hidden or not per_group or not dtype or not epsilon:
        return None
    if x_name != "C" or x_value % per_group != 0:
        return None
    axes = {"batch": batch, "channels": x_value, "hidden": hidden, "channels_per_group": per_group}
    return Binding(axes, dtype, {"eps": epsilon})


def bind_sparsemax(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """sparsemax: {B, T, dtype, dim=-1} with the feature size (V) swept."""
    batch, seq, dtype = pos_int(cfg.get("B")), pos_int(cfg.get("T")), dtype_of(cfg.get("dtype"))
    if not batch or not seq or not dtype:
        return None
    if x_name != "V" or not num_equals(cfg.get("dim"), -1):
        return None
    return Binding({"tokens": batch * seq, "features": x_value}, dtype)


def bind_megatron_rms_norm(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """megatron_rms_norm: {S, B}, bf16, hidden (H) swept, eps fixed at 1e-6."""
    seq, batch = pos_int(cfg.get("S")), pos_int(cfg.get("B"))
    if not seq or not batch or x_name != "H":
        return None
    return Binding({"seq": seq, "batch": batch, "hidden": x_value}, "bf16", {"eps": 1e-6})


def bind_megatron_swiglu(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """megatron_swiglu: {S, B}, bf16, per-rank FFN size (ffn_local) swept."""
    seq, batch = pos_int(cfg.get("S")), pos_int(cfg.get("B"))
    if not seq or not batch or x_name != "ffn_local":
        return None
    return Binding({"seq": seq, "batch": batch, "ffn": x_value}, "bf16")


def bind_megatron_ce(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """megatron_cross_entropy: {S, B, TP=1}, bf16, vocab (V) swept."""
    seq, batch = pos_int(cfg.get("S")), pos_int(cfg.get("B"))
    if not seq or not batch or x_name != "V" or not num_equals(cfg.get("TP"), 1):
        return None
    return Binding({"seq": seq, "batch": batch, "vocab": x_value}, "bf16")


def bind_fused_moe(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """fused_moe: {H, intermediate_dim, K, dtype} with tokens (T) or experts (E) swept."""
    hidden, inter = pos_int(cfg.get("H")), pos_int(cfg.get("intermediate_dim"))
    top_k, dtype = pos_int(cfg.get("K")), dtype_of(cfg.get("dtype"))
    if not hidden or not inter or not top_k or not dtype:
        return None
    tokens = x_value if x_name == "T" else pos_int(cfg.get("T"))
    experts = x_value if x_name == "E" else pos_int(cfg.get("E"))
    if not tokens or not experts or x_name not in ("T", "E"):
        return None
    axes = {"tokens": tokens, "hidden": hidden, "intermediate": inter, "experts": experts}
    axes["k"] = top_k
    return Binding(axes, dtype)


def bind_neighborhood(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """fused_neighborhood_attention: module config with seq_len swept and bias on."""
    batch, hidden = pos_int(cfg.get("batch_size")), pos_int(cfg.get("hidden_size"))
    heads, kernel = pos_int(cfg.get("num_heads")), pos_int(cfg.get("kernel_size"))
    dilation, dtype = pos_int(cfg.get("dilation")), dtype_of(cfg.get("dtype"))
    if not batch or not hidden or not heads or not kernel or not dilation or not dtype:
        return None
    if x_name != "seq_len" or cfg.get("bias") is not True or hidden % heads != 0:
        return None
    axes = {"batch": batch, "seq": x_value, "hidden": hidden, "heads": heads}
    axes.update({"kernel_size": kernel, "dilation": dilation})
    return Binding(axes, dtype)


def bind_mta(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """(sparse_)multi_token_attention: {B, C_in, C_out, K, dtype, groups=1, bias}, L swept."""
    batch, heads_in = pos_int(cfg.get("B")), pos_int(cfg.get("C_in"))
    heads_out, kernel_size = pos_int(cfg.get("C_out")), pos_int(cfg.get("K"))
    dtype = dtype_of(cfg.get("dtype"))
    if not batch or not heads_in or not heads_out or not kernel_size or not dtype:
        return None
    if x_name != "L" or not num_equals(cfg.get("groups"), 1) or cfg.get("bias") is not True:
        return None
    axes = {"batch": batch, "heads_in": heads_in, "heads_out": heads_out, "seq": x_value}
    axes["k"] = kernel_size
    return Binding(axes, dtype)


def bind_lm_head(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """fused_linear_cross_entropy: {H, V, dtype} with tokens (BT) swept."""
    hidden, vocab, dtype = pos_int(cfg.get("H")), pos_int(cfg.get("V")), dtype_of(cfg.get("dtype"))
    if not hidden or not vocab or not dtype or x_name != "BT":
        return None
    return Binding({"tokens": x_value, "hidden": hidden, "vocab": vocab}, dtype)


def bind_fused_linear_jsd(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """fused_linear_jsd: like the LM-head losses, plus the fixed beta 0.5."""
    bound = bind_lm_head(x_value, x_name, cfg)
    return Binding(bound.axes, bound.dtype, {"beta": 0.5}) if bound else None


def bind_preference(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """orpo/cpo/simpo: {T, H, V, dtype} with the batch (B) swept."""
    seq, hidden, vocab = pos_int(cfg.get("T")), pos_int(cfg.get("H")), pos_int(cfg.get("V"))
    dtype = dtype_of(cfg.get("dtype"))
    if not seq or not hidden or not vocab or not dtype or x_name != "B":
        return None
    return Binding({"batch": x_value, "seq": seq, "hidden": hidden, "vocab": vocab}, dtype)


def bind_kto(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """kto_loss: preference config plus bias=true and a numeric beta scalar."""
    bound = bind_preference(x_value, x_name, cfg)
    beta = cfg.get("beta")
    if not isinstance(beta, int | float):
        return None
    if not bound or cfg.get("bias") is not True or not is_number(beta):
        return None
    return Binding(bound.axes, bound.dtype, {"beta": beta})


def bind_distill(x_value: int, x_name: str, cfg: Config) -> Binding | None:
    """distill_*_loss: {H, V, dtype, bias=false, weights}, tokens (BT) swept, even H."""
    hidden, vocab, dtype = pos_int(cfg.get("H")), pos_int(cfg.get("V")), dtype_of(cfg.get("dtype"))
    hard, soft = cfg.get("weight_hard_loss"), cfg.get("weight_soft_loss")
    if not isinstance(hard, int | float) or not isinstance(soft, int | float):
        return None
    if not hidden or not vocab or not dtype or x_name != "BT":
        return None
    if cfg.get("bias") is not False or hidden % 2 != 0:
        return None
    if not is_number(hard) or not is_number(soft):
        return None
    scalars = {"weight_hard_loss": hard, "weight_soft_loss": soft}
    return Binding({"tokens": x_value, "hidden": hidden, "vocab": vocab}, dtype, scalars)


def grpo(level: str) -> Binder:
    """GRPO losses: {T, V, dtype, importance_sampling_level} with the batch (B) swept."""

    def bind(x_value: int, x_name: str, cfg: Config) -> Binding | None:
        seq, vocab, dtype = pos_int(cfg.get("T")), pos_int(cfg.get("V")), dtype_of(cfg.get("dtype"))
        if not seq or not vocab or not dtype or x_name != "B":
            return None
        if cfg.get("importance_sampling_level") != level:
            return None
        return Binding({"batch": x_value, "seq": seq, "vocab": vocab}, dtype)

    return bind


# --- the curated kernel table -------------------------------------------------------------

ROWS_HIDDEN = ("rows", "hidden")
BATCH_SEQ_HIDDEN = ("batch", "seq", "hidden")
TOKENS_VOCAB = ("tokens", "vocab")
SCALAR_LOSS = (Tensor("loss", (1,)),)
MLP_INPUTS = (
    Tensor("x", BATCH_SEQ_HIDDEN),
    Tensor("w_gate", ("intermediate", "hidden")),
    Tensor("w_up", ("intermediate", "hidden")),
    Tensor("w_down", ("hidden", "intermediate")),
)
PREFERENCE_INPUTS = (
    Tensor("x", BATCH_SEQ_HIDDEN),
    Tensor("weight", ("vocab", "hidden")),
    Tensor("target", ("batch", "seq"), "int64"),
)
DISTILL_INPUTS = (
    Tensor("student_input", ("tokens", "student_hidden")),
    Tensor("student_weight", ("vocab", "student_hidden")),
    Tensor("teacher_input", ("tokens", "hidden")),
    Tensor("teacher_weight", ("vocab", "hidden")),
    Tensor("target", ("tokens",), "int64"),
)
MTA_INPUTS = (
    Tensor("scores", ("batch", "heads_in", "seq", "seq")),
    Tensor("weight", ("heads_out", "heads_in", "k", "k")),
    Tensor("bias", ("heads_out",)),
)
MTA_OUTPUTS = (Tensor("y", ("batch", "heads_out", "seq", "seq")),)
GRPO_INPUTS = (
    Tensor("logits", ("batch", "seq_next", "vocab")),
    Tensor("completion_ids", ("batch", "seq"), "int64"),
    Tensor("advantages", ("batch",)),
)
ROPE_Q = (1, "q_heads", "seq", "head_dim")
ROPE_K = (1, "kv_heads", "seq", "head_dim")
LLAMA4_Q = (1, "seq", "q_heads", "head_dim")
LLAMA4_K = (1, "seq", "kv_heads", "head_dim")
SEQ_BATCH_HIDDEN = ("seq", "batch", "hidden")


def _kernel(
    csv: str,
    slug: str,
    family: str,
    title: str,
    inputs: tuple[Tensor, ...],
    outputs: tuple[Tensor, ...],
    bind: Binder,
    **derived: str,
) -> KernelSpec:
    """Shorthand constructor keeping the table below one entry per kernel."""
    return KernelSpec(csv, slug, family, title, inputs, outputs, bind, dict(derived))


CURATED_KERNELS: tuple[KernelSpec, ...] = (
    _kernel("rms_norm", "liger-rms-norm", "rmsnorm", "RMSNorm",
       (Tensor("x", ROWS_HIDDEN), Tensor("weight", ("hidden",))), (Tensor("y", ROWS_HIDDEN),),
       rows_hidden(True)),
    _kernel("fused_add_rms_norm", "liger-fused-add-rms-norm", "rmsnorm", "Fused add + RMSNorm",
       (Tensor("x", ROWS_HIDDEN), Tensor("residual", ROWS_HIDDEN), Tensor("weight", ("hidden",))),
       (Tensor("y", ROWS_HIDDEN), Tensor("residual_out", ROWS_HIDDEN)), rows_hidden(True)),
    _kernel("layer_norm", "liger-layer-norm", "layernorm", "LayerNorm",
       (Tensor("x", ROWS_HIDDEN), Tensor("weight", ("hidden",)), Tensor("bias", ("hidden",))),
       (Tensor("y", ROWS_HIDDEN),), rows_hidden(True)),
    _kernel("softmax", "liger-softmax", "softmax", "Softmax",
       (Tensor("x", ROWS_HIDDEN),), (Tensor("y", ROWS_HIDDEN),), rows_hidden(False)),
    _kernel("cross_entropy", "liger-cross-entropy", "cross-entropy", "Cross-entropy loss",
       (Tensor("logits", TOKENS_VOCAB), Tensor("target", ("tokens",), "int64")), SCALAR_LOSS, tokens_vocab_fp32),
    _kernel("jsd", "liger-jsd", "jsd", "Jensen-Shannon divergence loss",
       (Tensor("student_log_probs", TOKENS_VOCAB), Tensor("teacher_log_probs", TOKENS_VOCAB)), SCALAR_LOSS, bind_jsd),
    _kernel("embedding", "liger-embedding", "embedding", "Embedding lookup",
       (Tensor("input_ids", ("batch", "seq"), "int64"), Tensor("weight", ("vocab", "hidden"))),
       (Tensor("y", BATCH_SEQ_HIDDEN),), bind_embedding),
    _kernel("rope", "liger-rope", "rope", "Rotary position embedding",
       (Tensor("q", ROPE_Q), Tensor("k", ROPE_K)), (Tensor("q_out", ROPE_Q), Tensor("k_out", ROPE_K)),
       bind_rope, head_dim="hidden // q_heads"),
    _kernel("swiglu", "liger-swiglu", "swiglu", "SwiGLU MLP", MLP_INPUTS, (Tensor("y", BATCH_SEQ_HIDDEN),),
       mlp("B", "silu")),
    _kernel("geglu", "liger-geglu", "geglu", "GeGLU MLP", MLP_INPUTS, (Tensor("y", BATCH_SEQ_HIDDEN),),
       mlp("bsz", "gelu_pytorch_tanh")),
    # second tranche: norms, activations, attention variants, MoE, Megatron layouts
    _kernel("relu_squared", "liger-relu-squared", "relu-squared", "ReLU squared",
       (Tensor("x", ROWS_HIDDEN),), (Tensor("y", ROWS_HIDDEN),), bind_relu_squared),
    _kernel("group_norm", "liger-group-norm", "groupnorm", "GroupNorm",
       (Tensor("x", ("batch", "channels", "hidden")), Tensor("weight", ("channels",)),
        Tensor("bias", ("channels",))),
       (Tensor("y", ("batch", "channels", "hidden")),), bind_group_norm,
       groups="channels // channels_per_group"),
    _kernel("sparsemax", "liger-sparsemax", "sparsemax", "Sparsemax",
       (Tensor("x", ("tokens", "features")),), (Tensor("y", ("tokens", "features")),), bind_sparsemax),
    _kernel("llama4_rope", "liger-llama4-rope", "rope", "Llama 4 rotary position embedding",
       (Tensor("q", LLAMA4_Q), Tensor("k", LLAMA4_K)), (Tensor("q_out", LLAMA4_Q), Tensor("k_out", LLAMA4_K)),
       bind_rope, head_dim="hidden // q_heads"),
    _kernel("megatron_rms_norm", "liger-megatron-rms-norm", "rmsnorm", "RMSNorm, Megatron layout",
       (Tensor("x", SEQ_BATCH_HIDDEN), Tensor("weight", ("hidden",))), (Tensor("y", SEQ_BATCH_HIDDEN),), bind_megatron_rms_norm),
    _kernel("megatron_swiglu", "liger-megatron-swiglu", "swiglu",
       "SwiGLU activation, Megatron layout",
       (Tensor("y", ("seq", "batch", "ffn_double")),), (Tensor("out", ("seq", "batch", "ffn")),),
       bind_megatron_swiglu, ffn_double="ffn * 2"),
    _kernel("megatron_cross_entropy", "liger-megatron-cross-entropy", "cross-entropy",
       "Vocab-parallel cross-entropy, Megatron layout",
       (Tensor("logits", ("seq", "batch", "vocab")), Tensor("target", ("seq", "batch"), "int64")),
       (Tensor("loss", ("seq", "batch"), "fp32"),), bind_megatron_ce),
    _kernel("fused_moe", "liger-fused-moe", "moe", "Fused MoE expert MLP",
       (Tensor("x", ("tokens", "hidden")),
        Tensor("gate_up_proj", ("experts", "intermediate_double", "hidden")),
        Tensor("down_proj", ("experts", "hidden", "intermediate")),
        Tensor("top_k_index", ("tokens", "k"), "int32"),
        Tensor("top_k_weights", ("tokens", "k"))),
       (Tensor("y", ("tokens", "hidden")),), bind_fused_moe,
       intermediate_double="intermediate * 2"),
    _kernel("fused_neighborhood_attention", "liger-fused-neighborhood-attention",
       "neighborhood-attention", "Fused neighborhood attention",
       (Tensor("hidden_states", BATCH_SEQ_HIDDEN),
        *(Tensor(f"{projection}_weight", ("hidden", "hidden")) for projection in ("q", "k", "v", "out")),
        *(Tensor(f"{projection}_bias", ("hidden",)) for projection in ("q", "k", "v", "out"))),
       (Tensor("y", BATCH_SEQ_HIDDEN),), bind_neighborhood, head_dim="hidden // heads"),
    _kernel("multi_token_attention", "liger-multi-token-attention", "multi-token-attention",
       "Multi-token attention", MTA_INPUTS, MTA_OUTPUTS, bind_mta),
    _kernel("sparse_multi_token_attention", "liger-sparse-multi-token-attention",
       "multi-token-attention", "Sparse multi-token attention", MTA_INPUTS, MTA_OUTPUTS,
       bind_mta),
    _kernel("tiled_swiglu", "liger-tiled-swiglu", "swiglu", "SwiGLU MLP (tiled benchmark)",
       MLP_INPUTS, (Tensor("y", BATCH_SEQ_HIDDEN),), mlp("bsz", "silu")),
    _kernel("tiled_geglu", "liger-tiled-geglu", "geglu", "GeGLU MLP (tiled benchmark)",
       MLP_INPUTS, (Tensor("y", BATCH_SEQ_HIDDEN),), mlp("bsz", "gelu_pytorch_tanh")),
    # loss tranche: divergences, fused LM-head losses, distillation, preference, GRPO
    _kernel("kl_div", "liger-kl-div", "kl-divergence", "KL-divergence loss",
       (Tensor("log_probs", TOKENS_VOCAB), Tensor("target_probs", TOKENS_VOCAB)), SCALAR_LOSS, tokens_vocab_fp32),
    _kernel("tvd", "liger-tvd", "tvd", "Total variation distance loss",
       (Tensor("p", TOKENS_VOCAB), Tensor("q", TOKENS_VOCAB)), SCALAR_LOSS, tokens_vocab_fp32),
    _kernel("fused_linear_cross_entropy", "liger-fused-linear-cross-entropy", "cross-entropy",
       "Fused linear + cross-entropy",
       (Tensor("x", ("tokens", "hidden")), Tensor("weight", ("vocab", "hidden")),
        Tensor("target", ("tokens",), "int64")), SCALAR_LOSS, bind_lm_head),
    _kernel("fused_linear_jsd", "liger-fused-linear-jsd", "jsd", "Fused linear + JSD",
       (Tensor("student_input", ("tokens", "hidden")), Tensor("student_weight", ("vocab", "hidden")),
        Tensor("teacher_input", ("tokens", "hidden")), Tensor("teacher_weight", ("vocab", "hidden"))),
       SCALAR_LOSS, bind_fused_linear_jsd),
    _kernel("distill_jsd_loss", "liger-distill-jsd-loss", "jsd", "Chunked distillation JSD loss",
       DISTILL_INPUTS, SCALAR_LOSS, bind_distill, student_hidden="hidden // 2"),
    _kernel("distill_cosine_loss", "liger-distill-cosine-loss", "cosine-similarity-loss",
       "Chunked distillation cosine loss", DISTILL_INPUTS, SCALAR_LOSS, bind_distill,
       student_hidden="hidden // 2"),
    _kernel("fused_linear_orpo_loss", "liger-fused-linear-orpo-loss", "orpo",
       "Fused linear + ORPO loss", PREFERENCE_INPUTS, SCALAR_LOSS, bind_preference),
    _kernel("fused_linear_cpo_loss", "liger-fused-linear-cpo-loss", "cpo",
       "Fused linear + CPO loss", PREFERENCE_INPUTS, SCALAR_LOSS, bind_preference),
    _kernel("fused_linear_simpo_loss", "liger-fused-linear-simpo-loss", "simpo",
       "Fused linear + SimPO loss", PREFERENCE_INPUTS, SCALAR_LOSS, bind_preference),
    _kernel("kto_loss", "liger-fused-linear-kto-loss", "kto", "Fused linear + KTO loss",
       (Tensor("x", BATCH_SEQ_HIDDEN), Tensor("ref_x", BATCH_SEQ_HIDDEN), Tensor("weight", ("vocab", "hidden")), Tensor("bias", ("vocab",)),
        Tensor("ref_weight", ("vocab", "hidden")), Tensor("ref_bias", ("vocab",)),
        Tensor("target", ("batch", "seq"), "int64"), Tensor("preference_labels", ("batch",), "bool"),
        Tensor("kl", (1,))), SCALAR_LOSS, bind_kto),
    _kernel("fused_linear_grpo_loss_token", "liger-grpo-loss-token", "grpo",
       "GRPO loss, token-level importance sampling", GRPO_INPUTS, SCALAR_LOSS, grpo("token"),
       seq_next="seq + 1"),
    _kernel("fused_linear_grpo_loss_sequence", "liger-grpo-loss-sequence", "grpo",
       "GRPO loss, sequence-level importance sampling", GRPO_INPUTS, SCALAR_LOSS,
       grpo("sequence"), seq_next="seq + 1"),
)  # fmt: skip

KERNELS_BY_NAME: dict[str, KernelSpec] = {kernel.csv_name: kernel for kernel in CURATED_KERNELS}


# --- providers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    """A CSV provider as an implementation: display title, language, licence, pip package."""

    title: str
    language: str
    declared: str
    concluded: str | None = None
    pip_package: str | None = None


_LIGER = {"language": "triton", "declared": "BSD-2-Clause", "concluded": "BSD-2-Clause",
          "pip_package": "liger-kernel"}  # fmt: skip

#: Providers KernelIndex curates (their ImplementationRevision spec is digested as built here).
PROVIDERS: dict[str, Provider] = {
    "liger": Provider("Liger", **_LIGER),
    "liger_fused_add_rms_norm": Provider("Liger fused", **_LIGER),
    "liger_rms_norm": Provider("Liger unfused", **_LIGER),
    "huggingface": Provider("Transformers", "python", "Apache-2.0"),
    "torch": Provider("PyTorch", "python", "BSD-3-Clause"),
    "torch_compile": Provider("torch.compile", "python", "BSD-3-Clause"),
    "liger_in_place": Provider("Liger in-place", **_LIGER),
    "liger_tiled": Provider("Liger tiled", **_LIGER),
    "megatron": Provider("Megatron", "python", "BSD-3-Clause"),
    "megatron-fused": Provider("Megatron fused", "python", "BSD-3-Clause"),
    "megatron-unfused": Provider("Megatron unfused", "python", "BSD-3-Clause"),
    "deepspeed_tiled": Provider("DeepSpeed tiled", "python", "Apache-2.0"),
}

#: kindex's display names for providers KernelIndex does not curate.
EXTRA_PROVIDER_TITLES: dict[str, str] = {
    "torchcompile": "torch.compile",
    "liger_triton": "Liger (Triton)",
    "liger_cutedsl": "Liger (CuTe DSL)",
    "liger-cutedsl": "Liger (CuTe DSL)",
    "liger_cutile": "Liger (cuTile)",
    "liger-cutile": "Liger (cuTile)",
    "liger-fp32-accum": "Liger fp32 accumulation",
    "liger-vp-flce": "Liger vocab-parallel FLCE",
    "liger-vp-ce-plus-cpl": "Liger vocab-parallel CE + CPL",
    "megatron-fused-plus-cpl": "Megatron fused + CPL",
    "megatron-unfused-plus-cpl": "Megatron unfused + CPL",
    "liger_triton_fused_add_rms_norm": "Liger (Triton) fused",
    "liger_triton_rms_norm": "Liger (Triton) unfused",
    "liger_cutile_fused_add_rms_norm": "Liger (cuTile) fused",
    "liger_cutile_rms_norm": "Liger (cuTile) unfused",
}


def provider_title(provider: str) -> str:
    """Display name of any provider: KernelIndex's title, kindex's, else the raw name."""
    if provider in PROVIDERS:
        return PROVIDERS[provider].title
    return EXTRA_PROVIDER_TITLES.get(provider, provider)


# --- hardware -----------------------------------------------------------------------------


def _hw(vendor: str, product: str, arch: str, form: str | None = None) -> dict[str, str]:
    """A hardware block in KernelIndex's key set (formFactor only when known)."""
    out = {"vendor": vendor, "product": product, "architecture": arch}
    if form:
        out["formFactor"] = form
    return out


#: GPUs KernelIndex's environment table knows.
HARDWARE: dict[str, dict[str, str]] = {
    "NVIDIA A100-SXM4-80GB": _hw("nvidia", "NVIDIA A100", "sm_80", "SXM4-80GB"),
    "NVIDIA H100 80GB HBM3": _hw("nvidia", "NVIDIA H100", "sm_90", "80GB HBM3"),
    "NVIDIA H100 PCIe": _hw("nvidia", "NVIDIA H100", "sm_90", "PCIe"),
    "NVIDIA B200": _hw("nvidia", "NVIDIA B200", "sm_100"),
    "NVIDIA GeForce RTX 3090": _hw("nvidia", "NVIDIA GeForce RTX 3090", "sm_86"),
    "NVIDIA GeForce RTX 4090": _hw("nvidia", "NVIDIA GeForce RTX 4090", "sm_89"),
}

#: Further GPUs seen in Liger's CSVs; kindex's own table (architecture from the vendor docs).
EXTRA_HARDWARE: dict[str, dict[str, str]] = {
    "NVIDIA A100 80GB PCIe": _hw("nvidia", "NVIDIA A100", "sm_80", "PCIe-80GB"),
    "NVIDIA A100-SXM4-40GB": _hw("nvidia", "NVIDIA A100", "sm_80", "SXM4-40GB"),
    "NVIDIA A100-PCIE-40GB": _hw("nvidia", "NVIDIA A100", "sm_80", "PCIe-40GB"),
    "NVIDIA H100 NVL": _hw("nvidia", "NVIDIA H100", "sm_90", "NVL"),
    "NVIDIA H200": _hw("nvidia", "NVIDIA H200", "sm_90"),
    "NVIDIA B300 SXM6 AC": _hw("nvidia", "NVIDIA B300", "sm_103", "SXM6 AC"),
    "NVIDIA B300 SXM6 PC": _hw("nvidia", "NVIDIA B300", "sm_103", "SXM6 PC"),
    "NVIDIA L40S": _hw("nvidia", "NVIDIA L40S", "sm_89"),
    "NVIDIA RTX A5500": _hw("nvidia", "NVIDIA RTX A5500", "sm_86"),
    "NVIDIA GeForce RTX 5060 Ti": _hw("nvidia", "NVIDIA GeForce RTX 5060 Ti", "sm_120"),
    "NVIDIA GeForce RTX 5090 Laptop GPU": _hw(
        "nvidia", "NVIDIA GeForce RTX 5090", "sm_120", "Laptop"
    ),
    "AMD Instinct MI300X": _hw("amd", "AMD Instinct MI300X", "gfx942"),
    "AMD Instinct MI325X": _hw("amd", "AMD Instinct MI325X", "gfx942"),
    "AMD Instinct MI355X": _hw("amd", "AMD Instinct MI355X", "gfx950"),
    "NVIDIA H20": _hw("nvidia", "NVIDIA H20", "sm_90"),
    "NVIDIA GB200": _hw("nvidia", "NVIDIA GB200", "sm_100"),
}

PROTOCOL_NOTES_LATENCY = (
    "Timed: {what}, via triton.testing.do_bench with quantiles 0.5/0.2/0.8 (median with "
    "p20/p80 spread). The upstream CSV records no CUDA, driver, or torch version; the Liger "
    "release rides each run's labels. Comparable only within one kernel, workload, timed "
    "pass, and GPU."
)
PROTOCOL_NOTES_MEMORY = (
    "Measured: peak CUDA memory allocated (torch.cuda.max_memory_allocated) while running "
    "{what}, reported by the benchmark in MiB as quantiles 0.5/0.2/0.8 over repetitions and "
    "stored here in bytes (MiB * 2**20). Not a latency: never compare with timed runs. "
    "Comparable only within one kernel, workload, pass, and GPU."
)
