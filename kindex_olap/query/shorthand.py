"""The `kindex query` shorthand: `"speedup jsd b200"` -> a frozen `Query`.

Grammar: a verb, then filters in any order.

    verb     speedup | summary | latency | memory | runs | gpus | kernels | noise
             | history | regressions | improvements | changes (query/history.py)
    kernel   an exact kernel name, an alias (kldiv, kl, ce, xent, flce, grpo, ...), a family
             (operations.family or the workloads' family label, e.g. rmsnorm: all its
             operations, each reported on its own), or a unique prefix. An exact kernel name
             means that kernel only (jsd, though also a family); an alias that is also a family
             (rmsnorm: Liger's rms_norm and the rmsnorm family) selects the union.
    gpu      a product (b200, h100, a100, 4090, mi300x), product-form factor (h100-pcie,
             a100-sxm4-80gb), an architecture (sm_90) or an environment name; every matching
             environment is selected and reported on its own
    pass     forward/fwd, backward/bwd, full
    A vs B   candidate A against baseline B (providers: liger, torch, huggingface/hf, ...);
             default: every implementation against each cell's baseline (its reference
             implementation, else its fastest)
    shape    AXIS OP NUMBER against workload axes (vocab=128256, tokens>=4096), or
             dtype=bf16 / shape=LABEL
    serving  (runs only) list the serving runs (MLPerf) instead of kernel runs; they are kept
             apart and take no other filter

Words resolve against what the lake holds (`Vocabulary`), never against fixed lists of GPUs or
kernels, so a new kernel needs no code change.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from kindex_olap.errors import SHOWN, QueryError, quoted
from kindex_olap.query.verbs import NAMES

VERBS = NAMES  # the verb registry's (query/verbs.py)
PASSES = {
    "forward": "forward",
    "fwd": "forward",
    "backward": "backward",
    "bwd": "backward",
    "full": "full",
}
# alias -> kernel name, or a prefix ending in '*' that selects every kernel starting with it
KERNEL_ALIASES = {
    "kldiv": "kl_div",
    "kl": "kl_div",
    "ce": "cross_entropy",
    "xent": "cross_entropy",
    "flce": "fused_linear_cross_entropy",
    "grpo": "fused_linear_grpo_loss*",
    "rmsnorm": "rms_norm",
    "layernorm": "layer_norm",
    "groupnorm": "group_norm",
    "batchnorm": "batch_norm",
}
PROVIDER_ALIASES = {
    "hf": "huggingface",
    "transformers": "huggingface",
    "pytorch": "torch",
    "compile": "torch_compile",
    "torch.compile": "torch_compile",
}
SHAPE_FILTER = re.compile(r"^([a-z_][a-z0-9_]*)(>=|<=|!=|=|>|<)(.+)$")
OPERATORS = ("=", "!=", ">=", "<=", ">", "<")
STRING_FILTERS = ("dtype", "shape")
# words of a question in English that filter nothing ("speedup jsd backward on b200" said
# "unknown word 'on'"); a kernel or GPU of that name is still that name
FILLER_WORDS = frozenset({"a", "an", "at", "for", "in", "of", "on", "the", "with"})
# a word that reads as a dtype, hinted as the dtype filter it means
_DTYPE = re.compile(r"^(fp|bf|float|bfloat|int|uint)\d+$")


@dataclass(frozen=True)
class Gpu:
    """One environment of the lake and the words that name it."""

    environment_digest: str
    environment: str
    product: str
    form_factor: str | None
    architecture: str | None

    def words(self) -> set[str]:
        """Every word that selects this environment (b200, h100-pcie, sm_90, ...)."""
        product = gpu_word(self.product)
        words = {product, product.replace("-", ""), self.environment.lower()}
        if self.form_factor:
            words.add(f"{product}-{slug(self.form_factor)}")
        if self.architecture:
            arch = self.architecture.lower()
            words |= {arch, arch.replace("_", "")}
        return {w for w in words if w}


@dataclass(frozen=True)
class Vocabulary:
    """What the lake holds that the shorthand resolves words against."""

    kernels: tuple[str, ...]
    families: dict[str, tuple[str, ...]] = field(default_factory=dict)
    gpus: tuple[Gpu, ...] = ()
    providers: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShapeFilter:
    """AXIS OP VALUE: a numeric axis of the workload, or dtype/shape equality."""

    axis: str
    op: str
    value: float | str

    def __str__(self) -> str:
        value = self.value
        shown = f"{value:g}" if isinstance(value, float) else value
        return f"{self.axis}{self.op}{shown}"


@dataclass(frozen=True)
class Query:
    """A parsed shorthand query; every value in it is bound as a SQL parameter later."""

    verb: str
    kernels: tuple[str, ...] = ()
    kernel_words: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()
    gpu_words: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    candidate: str | None = None
    baseline: str | None = None
    shape_filters: tuple[ShapeFilter, ...] = ()
    text: str = ""
    serving: bool = False


# the word that turns `runs` to the serving runs (MLPerf), kept apart from kernel runs
SERVING = "serving"


def slug(text: str) -> str:
    """Lower-case words joined by '-': 'PCIe-80GB' -> 'pcie-80gb', '80GB HBM3' -> '80gb-hbm3'."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))


def gpu_word(product: str) -> str:
    """The short word of a GPU product: 'NVIDIA GeForce RTX 4090' -> '4090', 'AMD Instinct
    MI300X' -> 'mi300x', 'NVIDIA RTX A5500' -> 'a5500', 'NVIDIA B200' -> 'b200'."""
    words = slug(product).split("-")
    drop = {"nvidia", "amd", "intel", "geforce", "rtx", "instinct", "tesla", "radeon"}
    kept = [w for w in words if w not in drop]
    return "-".join(kept) if kept else slug(product)


def parse(text: str, vocab: Vocabulary) -> Query:
    """Parse shorthand `text` against `vocab`; raise QueryError naming any word it cannot use."""
    words = text.lower().split()
    if not words:
        raise QueryError("empty query", hint=f"start with a verb: {', '.join(VERBS)}")
    verb = _verb(words[0])
    state = _State(verb=verb, text=text)
    rest = words[1:]
    i = 0
    while i < len(rest):
        if i + 1 < len(rest) and rest[i + 1] == "vs":
            if i + 2 >= len(rest):
                raise QueryError("'vs' needs an implementation on each side, e.g. liger vs torch")
            state.candidate = _provider(rest[i], vocab)
            state.baseline = _provider(rest[i + 2], vocab)
            if state.candidate == state.baseline:  # answered "no comparable liger" before
                raise QueryError(
                    f"{quoted(rest[i])} vs {quoted(rest[i + 2])} compares an implementation "
                    "with itself",
                    hint="name two, e.g. liger vs torch",
                )
            i += 3
            continue
        _word(rest[i], vocab, state)
        i += 1
    if state.serving:
        _check_serving(state)
    return state.freeze()


def _check_serving(state: _State) -> None:
    if state.verb != "runs":
        raise QueryError(
            f"serving runs are not paired: `{state.verb} serving` has no meaning",
            hint='list them with `kindex query "runs serving"`',
        )
    others = [
        state.kernel_words,
        state.gpu_words,
        state.passes,
        state.shape_filters,
        [p for p in (state.candidate, state.baseline) if p],
    ]
    if any(others):
        raise QueryError(
            "`runs serving` takes no other filter (serving runs have no kernel, pass or "
            "kernel-run GPU environment)",
            hint='filter them with `kindex sql "SELECT ... FROM serving_runs WHERE ..."`',
        )


@dataclass
class _State:
    verb: str
    text: str
    kernels: list[str] = field(default_factory=list)
    kernel_words: list[str] = field(default_factory=list)
    environments: list[str] = field(default_factory=list)
    gpu_words: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    candidate: str | None = None
    baseline: str | None = None
    shape_filters: list[ShapeFilter] = field(default_factory=list)
    serving: bool = False

    def freeze(self) -> Query:
        return Query(
            verb=self.verb,
            kernels=tuple(dict.fromkeys(self.kernels)),
            kernel_words=tuple(self.kernel_words),
            environments=tuple(dict.fromkeys(self.environments)),
            gpu_words=tuple(self.gpu_words),
            passes=tuple(dict.fromkeys(self.passes)),
            candidate=self.candidate,
            baseline=self.baseline,
            shape_filters=tuple(self.shape_filters),
            text=self.text,
            serving=self.serving,
        )


def _verb(word: str) -> str:
    if word in VERBS:
        return word
    raise QueryError(
        f"unknown verb {quoted(word)}",
        hint=_nearest(word, VERBS, f"a query starts with one of: {', '.join(VERBS)}"),
    )


def _word(word: str, vocab: Vocabulary, state: _State) -> None:
    """Classify one filter word and add it to `state`."""
    if word in PASSES:
        state.passes.append(PASSES[word])
        return
    if word == "vs":
        raise QueryError("'vs' needs an implementation on each side, e.g. liger vs torch")
    if word == SERVING and word not in vocab.kernels:
        state.serving = True
        return
    match = SHAPE_FILTER.match(word)
    if match:
        axis, op, raw = match.groups()
        state.shape_filters.append(_shape_filter(axis, op, raw, vocab=vocab))
        return
    environments = resolve_gpu(word, vocab)
    if environments:
        state.environments.extend(environments)
        state.gpu_words.append(word)
        return
    if word in FILLER_WORDS and word not in vocab.kernels:
        return
    kernels = resolve_kernel(word, vocab)
    if kernels:
        state.kernels.extend(kernels)
        state.kernel_words.append(word)
        return
    if _provider_or_none(word, vocab):
        state.candidate = _provider_or_none(word, vocab)
        return
    if word.startswith("-"):  # `kindex query "history jsd --by run"`: said "unknown word"
        raise QueryError(
            f"{quoted(word)} is an option, not a word of the query",
            hint='put it after the quoted query: kindex query "history jsd b200" --by run',
        )
    if _DTYPE.match(word):  # "speedup jsd b200 fp32": the hint named the nearest kernels
        raise QueryError(f"unknown word {quoted(word)}", hint=f"a dtype filter is dtype={word}")
    raise QueryError(f"unknown word {quoted(word)}", hint=_nearest(word, valid_words(vocab), None))


def resolve_gpu(word: str, vocab: Vocabulary) -> list[str]:
    """Environment digests that `word` names (every environment of a product)."""
    return [g.environment_digest for g in vocab.gpus if word in g.words()]


def resolve_kernel(word: str, vocab: Vocabulary) -> list[str]:
    """Kernels that `word` names: an exact kernel name alone (jsd is also Liger's family of
    jsd, fused_linear_jsd and distill_jsd_loss, but `speedup jsd` means the kernel); else the
    union of the alias's kernels and the family's operations (rmsnorm: Liger's rms_norm and
    every rmsnorm operation); else a unique prefix (ambiguity is an error). A '-' and a '_'
    read alike (fused-linear-jsd, amd_fp8_mm), and a name written as the lake spells it
    (GPU MODE's amd-fp8-mm) is that kernel, in any case (the shorthand is read in lower case:
    a kernel named FusedLinearCE could not be asked for, and the hint named it as it is)."""
    if word in vocab.kernels:
        return [word]
    word = _folded(word)
    spelled = [k for k in vocab.kernels if _folded(k) == word]
    if spelled:
        return spelled
    named: list[str] = []
    alias = KERNEL_ALIASES.get(word)
    if alias and alias.endswith("*"):
        named.extend(k for k in vocab.kernels if k.startswith(alias[:-1]))
    elif alias and alias in vocab.kernels:
        named.append(alias)
    named.extend(_family(word, vocab))
    if named:
        return sorted(dict.fromkeys(named))
    matches = [k for k in vocab.kernels if _folded(k).startswith(word)]
    if len(matches) > 1:
        raise QueryError(
            f"kernel {quoted(word)} is ambiguous: it starts {len(matches)} kernels",
            hint=f"choose one of: {', '.join(matches)}",
        )
    return matches


def _folded(name: str) -> str:
    """A name as the shorthand compares it: '-' as '_', in lower case."""
    return name.replace("-", "_").lower()


def _family(word: str, vocab: Vocabulary) -> list[str]:
    for name, kernels in vocab.families.items():
        if word == _folded(name):
            return [k for k in kernels if k in vocab.kernels]
    return []


def in_family(provider: str, name: str) -> bool:
    """Whether `provider` is the implementation `name` or a member of the family `name` (a name
    without separator: liger holds liger_triton, liger_cutedsl and liger-fused)."""
    return provider == name or (
        is_family_name(name) and provider.startswith((name + "_", name + "-"))
    )


def is_family_name(name: str) -> bool:
    """A name without separator names a family as well as an implementation."""
    return "_" not in name and "-" not in name


def _provider_or_none(word: str, vocab: Vocabulary) -> str | None:
    word = PROVIDER_ALIASES.get(word, word)
    if any(in_family(p, word) for p in vocab.providers):
        return word
    # Liger's CSV spelled B200's implementations liger-cutedsl before liger_cutedsl: a name
    # the lake holds only in the other spelling is that implementation
    spelled = [p for p in vocab.providers if _folded(p) == _folded(word)]
    return spelled[0] if len(spelled) == 1 else None


def _provider(word: str, vocab: Vocabulary) -> str:
    provider = _provider_or_none(word, vocab)
    if provider is None:
        aliases = [a for a, target in PROVIDER_ALIASES.items() if target in vocab.providers]
        choices = list(vocab.providers) + aliases
        raise QueryError(
            f"unknown implementation {quoted(word)}",
            hint=_nearest(word, choices, f"implementations: {', '.join(vocab.providers)}"),
        )
    return provider


def _shape_filter(axis: str, op: str, raw: str, vocab: Vocabulary) -> ShapeFilter:
    if axis in STRING_FILTERS:
        if op not in ("=", "!="):
            raise QueryError(f"{axis} filters take = or !=, not {quoted(op)}")
        return ShapeFilter(axis, op, raw)
    if axis not in vocab.axes:
        hint = _nearest(axis, list(vocab.axes) + list(STRING_FILTERS), None)
        raise QueryError(f"unknown shape axis {quoted(axis)}", hint=hint)
    try:
        value = float(raw)
    except ValueError as e:
        raise QueryError(
            f"shape filter {quoted(axis + op + raw)}: {quoted(raw)} is not a number"
        ) from e
    return ShapeFilter(axis, op, value)


def valid_words(vocab: Vocabulary) -> list[str]:
    """Every word the shorthand accepts after the verb (for 'did you mean' hints)."""
    words = set(PASSES) | set(vocab.kernels) | set(KERNEL_ALIASES) | set(vocab.families)
    words |= set(vocab.providers) | set(PROVIDER_ALIASES) | {"vs", SERVING}
    for gpu in vocab.gpus:
        words |= gpu.words()
    return sorted(words)


def _nearest(word: str, choices: list[str] | tuple[str, ...], fallback: str | None) -> str:
    if len(word) > SHOWN:  # nothing of the vocabulary is that long; difflib is quadratic
        return fallback or "see `kindex query --help` for the shorthand"
    close = difflib.get_close_matches(word, list(choices), n=5, cutoff=0.5)
    if close:
        return f"did you mean: {', '.join(close)}?"
    return fallback or "see `kindex query --help` for the shorthand"
