"""A typed decode in two steps: the schema without its string patterns, then the patterns.

msgspec checks a `Meta(pattern=...)` with one call into Python's `re` per string, and a bundle
has about twenty such strings (digests, identifiers, names, printable text): measured on the
synthetic bundles, 30 of the 37 us of the run's typed decode. `PatternFree(T)` builds a twin of
the Struct type T with the same fields, defaults, bounds and configuration and no patterns, and
a collector that lists every string of a decoded value that T would have matched against a
pattern. The strings of a whole chunk are then checked once per distinct string
(`PatternCheck`), most of them (digests, metric names, timestamps) seen thousands of times.

A value decodes as T exactly when it decodes as the twin and every collected string matches its
pattern the way msgspec matches it (`re.search`, so `^...$` also admits one final newline).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Union

import msgspec
from msgspec import UNSET, Meta

Strings = list[list[str]]  # per pattern (in `PatternFree.patterns` order), strings to match
Collector = Callable[[Any, Strings], None]
# Code that appends the patterned strings held in the variable named by its first argument
# (the second and third: the lines of code so far and the indentation).
_Emit = Callable[[str, list[str], str], None]

_META_FIELDS = (
    "gt",
    "ge",
    "lt",
    "le",
    "multiple_of",
    "min_length",
    "max_length",
    "tz",
)
_STRUCT_CONFIG = ("forbid_unknown_fields", "omit_defaults", "array_like", "tag", "tag_field")


class PatternFree:
    """A Struct type's twin without string patterns, and the collector of its patterned strings.

    The collector is generated Python source (one function with the walk of the type written
    out, compiled once): a walk through closures, one call per node, cost 11-17 us a bundle,
    three times the typed decode it follows.
    """

    def __init__(self, root: type) -> None:
        self.patterns: list[str] = []
        self._names: dict[str, Any] = {"UNSET": UNSET}
        self._structs: dict[type, tuple[type, _Emit | None]] = {}
        self._counter = 0
        twin, emit = self._twin(root)
        self.type: type = twin
        lines = ["def collect(value, out):"]
        if emit is not None:
            emit("value", lines, "    ")
        lines.append("    return None")
        namespace = dict(self._names)
        exec("\n".join(lines), namespace)  # our own generated code, see above
        self.source = "\n".join(lines)
        self.collect: Collector = namespace["collect"]

    def new_strings(self) -> Strings:
        """An empty list of strings per pattern, for `collect` to fill."""
        return [[] for _ in self.patterns]

    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _twin(self, tp: Any) -> tuple[Any, _Emit | None]:
        """(the type without patterns, the code emitter of its patterned strings or None)."""
        origin = typing.get_origin(tp)
        if origin is Annotated:
            return self._annotated(tp)
        if origin in (Union, types.UnionType):
            return self._union(typing.get_args(tp))
        if origin is list:
            (item,) = typing.get_args(tp)
            item_twin, item_emit = self._twin(item)
            return list[item_twin], (self._each(item_emit) if item_emit else None)  # type: ignore[valid-type]
        if origin is dict:
            key, value = typing.get_args(tp)
            key_twin, key_emit = self._twin(key)
            value_twin, value_emit = self._twin(value)
            emit = self._items(key_emit, value_emit) if key_emit or value_emit else None
            return dict[key_twin, value_twin], emit  # type: ignore[valid-type]
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            return self._struct(tp)
        if origin is not None and origin is not typing.Literal:
            raise TypeError(f"PatternFree: no twin for {tp!r}")
        return tp, None  # str, int, float, bool, Literal, Any, msgspec.Raw, UnsetType

    def _annotated(self, tp: Any) -> tuple[Any, _Emit | None]:
        base, *metas = typing.get_args(tp)
        patterns = [m.pattern for m in metas if isinstance(m, Meta) and m.pattern is not None]
        if patterns and base is not str:
            raise TypeError(f"PatternFree: a pattern on {base!r}")
        kept = [_without_pattern(m) if isinstance(m, Meta) else m for m in metas]
        kept = [m for m in kept if m is not None]
        base_twin, base_emit = self._twin(base)
        twin = Annotated[(base_twin, *kept)] if kept else base_twin
        if not patterns:
            return twin, base_emit
        indexes = [self._pattern_index(p) for p in patterns]

        def emit(var: str, lines: list[str], indent: str) -> None:
            lines.extend(f"{indent}out[{i}].append({var})" for i in indexes)

        return twin, emit

    def _pattern_index(self, pattern: str) -> int:
        if pattern not in self.patterns:
            self.patterns.append(pattern)
        return self.patterns.index(pattern)

    def _union(self, args: tuple[Any, ...]) -> tuple[Any, _Emit | None]:
        twins, arms = [], []
        for arg in args:
            twin, emit = self._twin(arg)
            twins.append(twin)
            if emit is not None:
                arms.append((_runtime_type(twin), emit))
        if len({t for t, _ in arms}) != len(arms):
            raise TypeError(f"PatternFree: union arms not told apart by type: {args!r}")
        names = []
        for kind, _ in arms:
            name = self._fresh("T")
            self._names[name] = kind
            names.append(name)

        def emit_arms(var: str, lines: list[str], indent: str) -> None:
            for number, (name, (_, inner)) in enumerate(zip(names, arms, strict=True)):
                keyword = "if" if number == 0 else "elif"
                lines.append(f"{indent}{keyword} type({var}) is {name}:")
                inner(var, lines, indent + "    ")

        return Union[tuple(twins)], (emit_arms if arms else None)  # noqa: UP007

    def _each(self, item: _Emit) -> _Emit:
        def emit(var: str, lines: list[str], indent: str) -> None:
            element = self._fresh("x")
            lines.append(f"{indent}for {element} in {var}:")
            item(element, lines, indent + "    ")

        return emit

    def _items(self, key: _Emit | None, value: _Emit | None) -> _Emit:
        def emit(var: str, lines: list[str], indent: str) -> None:
            k, v = self._fresh("k"), self._fresh("v")
            lines.append(f"{indent}for {k}, {v} in {var}.items():")
            lines.append(f"{indent}    pass")
            if key is not None:
                key(k, lines, indent + "    ")
            if value is not None:
                value(v, lines, indent + "    ")

        return emit

    def _struct(self, cls: type) -> tuple[type, _Emit | None]:
        if cls in self._structs:
            return self._structs[cls]
        fields: list[tuple[Any, ...]] = []
        collected: list[tuple[str, _Emit]] = []
        for field in msgspec.structs.fields(cls):
            twin, emit = self._twin(field.type)
            if field.default_factory is not msgspec.NODEFAULT:
                factory = msgspec.field(default_factory=field.default_factory)
                fields.append((field.name, twin, factory))
            elif field.default is not msgspec.NODEFAULT:
                fields.append((field.name, twin, field.default))
            else:
                fields.append((field.name, twin))
            if emit is not None:
                collected.append((field.name, emit))
        config = cls.__struct_config__  # type: ignore[attr-defined]
        renamed = {f.name: f.encode_name for f in msgspec.structs.fields(cls)}
        twin_cls = msgspec.defstruct(
            cls.__name__,
            fields,
            rename=renamed if any(k != v for k, v in renamed.items()) else None,
            gc=False,  # decoded JSON holds no cycles; a chunk of tracked structs slowed GC passes
            **{name: getattr(config, name) for name in _STRUCT_CONFIG},
        )

        def emit_members(var: str, lines: list[str], indent: str) -> None:
            for name, inner in collected:
                member = self._fresh("m")
                lines.append(f"{indent}{member} = {var}.{name}")
                inner(member, lines, indent)

        entry = (twin_cls, emit_members if collected else None)
        self._structs[cls] = entry
        return entry


def _without_pattern(meta: Meta) -> Meta | None:
    kept = {name: getattr(meta, name) for name in _META_FIELDS if getattr(meta, name) is not None}
    return Meta(**kept) if kept else None


def _runtime_type(twin: Any) -> type:
    """The Python type a decoded value of `twin` has (for a union's arms)."""
    while typing.get_origin(twin) is Annotated:
        twin = typing.get_args(twin)[0]
    origin = typing.get_origin(twin)
    if origin is not None:
        return typing.cast(type, origin)
    return typing.cast(type, twin)


class PatternCheck:
    """Which strings fail their pattern, checked once per distinct string: a bounded memory of
    strings known to match, per pattern, and `re.search` (what msgspec calls) for the rest."""

    # Strings remembered per pattern, forgotten all at once when full. Names and external ids
    # never repeat, so a large memory only holds them: at 100,000 a pattern, a staging process
    # held 30-40 MB more (1M ingest: 910 MiB peak for the process tree against 801 before).
    LIMIT = 20_000

    def __init__(self, patterns: list[str]) -> None:
        self._compiled = [re.compile(p) for p in patterns]
        self._matching: list[set[str]] = [set() for _ in patterns]

    def failing(self, strings: Strings) -> list[set[str]]:
        """Per pattern, the strings of `strings` that do not match it (all empty: all match)."""
        bad: list[set[str]] = []
        for regex, known, values in zip(self._compiled, self._matching, strings, strict=True):
            new = set(values)
            new.difference_update(known)
            failed = {v for v in new if regex.search(v) is None}
            bad.append(failed)
            if len(known) + len(new) > self.LIMIT:
                known.clear()
            known.update(new - failed if failed else new)
        return bad
