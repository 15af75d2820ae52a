"""Prompt templates: Jinja2 in a sandbox with StrictUndefined and bounded resources.

The sandbox refuses attribute access to Python internals (``{{ ''.__class__ }}``), and an
undefined variable is an error instead of an empty string.

A template is also bounded in what it can cost: ``benchc validate`` only compiles templates
and ``benchc compile`` renders them once per item, so an expression such as
``{{ 9 ** 999999999 }}`` or ``{{ 'a' * 10**10 }}`` must fail as one clear error instead of
hanging the process or exhausting its memory. Every limit below is checked *before* the costly
operation runs, and nothing costly runs at compile time (Jinja folds constant expressions while
compiling, but never an intercepted operator nor a context filter, and here every operator and
filter is one). A template over a limit fails with :class:`TemplateProblem` ("template exceeds
a sandbox limit: ..."), reported like any template error: file, line, key path and item.

* one value a template makes (by an operator, a method call, a filter or ``~``) holds at most
  ``MAX_SIZE`` (1,000,000) elements: characters of a text, items of a list or dict; a value
  written out or turned into text (``{{ x }}``, ``~``, ``|string``, ``|join``, ``|tojson``,
  ``format``, ...) is measured deeply, counting every character and item it would print;
* an integer has at most ``MAX_INT_DIGITS`` (4,300) digits, the length Python itself refuses
  to print; ``a ** b`` is refused from an estimate of its size before it is computed;
* ``range()`` gives at most ``MAX_RANGE`` (100,000) numbers; ``lipsum()`` is gone;
* one render runs at most ``MAX_STEPS`` (1,000,000) steps: loop iterations (every
  ``{% for %}``, nested or not, and ``loop()`` in a recursive one), calls (methods, globals;
  a macro call, far dearer, counts ``MACRO_STEPS`` = 10), filters and operators;
* one render makes or inspects at most ``MAX_WORK`` (20,000,000) elements in all (the sizes
  of the values above, plus the elements walked to measure them): it bounds the memory a
  render can fill (about 160 MB at 8 bytes per list item) and the time spent copying;
* the rendered text has at most ``MAX_OUTPUT`` (1,000,000) characters, and one render writes
  at most ``MAX_EMITTED`` (10,000,000) characters in all, counting the bodies of macros,
  ``{% set %}`` and ``{% filter %}`` blocks;
* as a backstop for what the counts above do not price (a comparison or slice of a large
  value inside a loop costs up to one value's size per step), a render that is still running
  after ``RENDER_SECONDS`` (10 s) of wall-clock time is stopped at its next step. This is the
  one limit that depends on the machine; every other one is exact and deterministic.

So the worst render costs about ``MAX_STEPS`` steps, each touching at most ``MAX_SIZE``
elements, within ``MAX_WORK`` elements made, and stops within 10 s plus one step; ordinary
prompt templates (a few outputs, a loop over a record's list) are orders of magnitude below
every limit and render exactly as before.
"""

from __future__ import annotations

import math
import re
import time
import types
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from functools import lru_cache
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import Namespace, _PassArg, pass_context
from markupsafe import Markup

from .numbers import first_number

Context = jinja2.runtime.Context  # (an attribute: the compiler package imports no module named runtime)
LoopContext, Macro = jinja2.runtime.LoopContext, jinja2.runtime.Macro

MAX_SIZE = 1_000_000
MAX_INT_DIGITS = 4_300
MAX_INT_BITS = int(MAX_INT_DIGITS * math.log2(10))
MAX_RANGE = 100_000
MAX_STEPS = 1_000_000
MACRO_STEPS = 10
MAX_WORK = 20_000_000
MAX_OUTPUT = 1_000_000
MAX_EMITTED = 10_000_000
RENDER_SECONDS = 10.0

_TEXTS = (str, bytes, bytearray)
_COLLECTIONS = (list, tuple, set, frozenset, KeysView, ValuesView, ItemsView)
_METHODS = (types.BuiltinMethodType, types.MethodType)
_SCALARS = frozenset({int, float, bool, type(None)})  # ints are capped (and printed) at 4,300 digits


class TemplateProblem(ValueError):
    """A template failed to compile or render; message is user-facing."""


class TemplateLimit(SecurityError):
    """A template went over one of the sandbox's resource limits (message: which, and by how much)."""


# --- the per-render budget ----------------------------------------------------------------------


class _Budget:
    """What one render has spent; kept on its Jinja context."""

    __slots__ = ("steps", "work", "emitted", "deadline")

    def __init__(self) -> None:
        self.steps = self.work = self.emitted = 0
        self.deadline = time.monotonic() + RENDER_SECONDS

    def step(self, steps: int = 1) -> None:
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise TemplateLimit(f"over {MAX_STEPS:,} steps (loop iterations, calls, filters and operators) "
                                "in one render")
        if time.monotonic() > self.deadline:
            raise TemplateLimit(f"one render ran for over {RENDER_SECONDS:g} s")

    def spend(self, elements: int) -> None:
        self.work += elements
        if self.work > MAX_WORK:
            raise TemplateLimit(f"one render made or inspected over {MAX_WORK:,} elements (characters and items)")

    def emit(self, characters: int) -> None:
        self.emitted += characters
        if self.emitted > MAX_EMITTED:
            raise TemplateLimit(f"one render wrote over {MAX_EMITTED:,} characters")


_BUDGET = "_benchc_budget"


def _budget(context: Context) -> _Budget:
    budget = getattr(context, _BUDGET, None)
    if budget is None:
        budget = _Budget()
        setattr(context, _BUDGET, budget)
    return budget


# --- sizes ---------------------------------------------------------------------------------------


def _measure(value: Any, limit: int, budget: _Budget | None = None) -> tuple[int, int]:
    """(size, depth) of ``value``: one per value, plus the characters of texts and the digits of
    numbers, through lists, dicts and namespaces (a shared item counts each time, as printing it
    would); stops as soon as the size passes ``limit``. The walk is charged to ``budget``."""
    size, depth, walked = 0, 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack and size <= limit:
        item, level = stack.pop()
        walked += 1
        depth = max(depth, level)
        size += 1 + _scalar_size(item)
        if isinstance(item, Namespace):
            item = item._Namespace__attrs
        if not isinstance(item, (Mapping, *_COLLECTIONS)):
            continue
        if size + len(item) > limit:
            size += len(item)
            break
        walked += len(item)
        for part in (p for pair in item.items() for p in pair) if isinstance(item, Mapping) else item:
            kind = type(part)
            if kind is str:  # the common case, without a trip through the stack
                size += 1 + len(part)
            elif kind in _SCALARS:
                size += 1 + _scalar_size(part)
            else:
                stack.append((part, level + 1))
            if size > limit:
                break
        depth = max(depth, level + 1)
        if budget is not None and time.monotonic() > budget.deadline:
            raise TemplateLimit(f"one render ran for over {RENDER_SECONDS:g} s")
    if budget is not None:
        budget.spend(walked)
    return size, depth


def _scalar_size(item: Any) -> int:
    """The characters a text, number or None prints as (about); 0 for anything else."""
    if isinstance(item, _TEXTS):
        return len(item)
    if isinstance(item, bool) or item is None:
        return 5
    if isinstance(item, int):
        return item.bit_length() * 3 // 10 + 1
    if isinstance(item, (float, complex)):
        return 24
    return 0


def _text_size(value: Any, what: str, budget: _Budget | None, factor: Callable[[int], int] | None = None) -> int:
    """The size of ``value`` as text, refused over ``MAX_SIZE`` before it is made."""
    kind = type(value)
    if kind is str or kind is Markup:
        size = len(value)
    elif kind in _SCALARS:
        size = 24
    else:
        size, depth = _measure(value, MAX_SIZE, budget)
        if factor is not None:
            size *= factor(depth)
    if size > MAX_SIZE:
        raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")
    return size


def _checked(value: Any, what: str, budget: _Budget | None) -> Any:
    """``value`` as made by ``what``, refused when it is over a size limit; charged to ``budget``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise TemplateLimit(f"{what} made a number of over {MAX_INT_DIGITS:,} digits")
        return value
    if isinstance(value, _TEXTS + (list, tuple, dict, set, frozenset)):
        size = len(value)
        if size > MAX_SIZE:
            kind = "text" if isinstance(value, _TEXTS) else type(value).__name__
            raise TemplateLimit(f"{what} made a {kind} of {size:,} elements (limit {MAX_SIZE:,})")
        if budget is not None:
            budget.spend(size)
    return value


def _count(value: Any, limit: int, what: str) -> None:
    """A width, a length or a count an operation will fill: at most ``limit``."""
    if isinstance(value, int) and not isinstance(value, bool) and value > limit:
        raise TemplateLimit(f"{what} {value:,} is over the limit of {limit:,}")


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 9 else MAX_SIZE + 1


_PRINTF = re.compile(r"%(?:%|(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?)")


def _check_printf(fmt: str | bytes | bytearray, args: Any, what: str, budget: _Budget | None) -> None:
    """``fmt % args``: the widths and precisions it pads to, and the values it prints."""
    text = bytes(fmt).decode("latin-1") if isinstance(fmt, (bytes, bytearray)) else fmt
    total, star = len(text), False
    for match in _PRINTF.finditer(text):
        for group in match.groups():
            if group == "*":
                star = True
            elif group:
                total += _number(group)
    values = args if isinstance(args, tuple) else (args,)
    if star:
        for value in values:
            _count(value, MAX_SIZE, f"{what}: a '*' width or precision")
            if isinstance(value, int) and not isinstance(value, bool):
                total += abs(value)
    if total > MAX_SIZE:
        raise TemplateLimit(f"{what} would pad to over {MAX_SIZE:,} characters")
    _text_size(args, what, budget)


def _spec_size(spec: str) -> int:
    """The widths and precisions a ``format()`` spec pads to."""
    return sum(_number(digits) for digits in re.findall(r"\d+", spec))


# --- operators, calls and filters ----------------------------------------------------------------


def _check_power(base: Any, exponent: Any) -> None:
    if (isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1):
        bits = exponent * math.log2(abs(base))
        if bits > MAX_INT_BITS:
            digits = bits * math.log10(2)
            raise TemplateLimit(f"'**' would make a number of about {digits:,.0f} digits "
                                f"(limit {MAX_INT_DIGITS:,})")


def _check_repeat(left: Any, right: Any) -> None:
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
            raise TemplateLimit(f"'*' would make a number of over {MAX_INT_DIGITS:,} digits")
        return
    sequence, times = (left, right) if isinstance(right, int) else (right, left)
    if isinstance(sequence, _TEXTS + (list, tuple)) and isinstance(times, int) and times > 0:
        size = len(sequence) * times
        if size > MAX_SIZE:
            kind = "text" if isinstance(sequence, _TEXTS) else type(sequence).__name__
            raise TemplateLimit(f"'*' would repeat a {kind} to {size:,} elements (limit {MAX_SIZE:,})")


def _check_add(left: Any, right: Any) -> None:
    if isinstance(left, _TEXTS + (list, tuple)) and isinstance(right, _TEXTS + (list, tuple)):
        size = len(left) + len(right)
        if size > MAX_SIZE:
            raise TemplateLimit(f"'+' would make {size:,} elements (limit {MAX_SIZE:,})")


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _replaced_size(text: Any, old: Any, new: Any, count: Any) -> int:
    if not (isinstance(text, _TEXTS) and isinstance(old, type(text)) and isinstance(new, type(text))):
        return 0
    hits: int = text.count(old)  # type: ignore[arg-type]  # old has text's own type (checked above)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(0, len(new) - len(old))


def _joined(items: Iterable[Any], separator: Any, what: str, budget: _Budget) -> list[Any]:
    """The items a join will print (read once into a list), refused when the text would be too long."""
    items = list(items)
    _checked(items, what, budget)
    between = len(str(separator)) * max(0, len(items) - 1)
    if between > MAX_SIZE or between + _text_size(items, what, budget) > MAX_SIZE:
        raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")
    return items


def _check_text_method(owner: str | bytes | bytearray, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                       budget: _Budget) -> tuple[Any, ...]:
    """Pre-checks of the ``str`` / ``bytes`` methods whose result can be far larger than their input."""
    what = f"{type(owner).__name__}.{name}()"
    if name in ("ljust", "rjust", "center", "zfill"):
        _count(_arg(args, kwargs, 0, "width"), MAX_SIZE, f"{what} width")
    elif name == "expandtabs":
        tab = "\t" if isinstance(owner, str) else b"\t"
        size = _arg(args, kwargs, 0, "tabsize", 8)
        if isinstance(size, int) and len(owner) + owner.count(tab) * max(size, 0) > MAX_SIZE:  # type: ignore[arg-type]
            raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")
    elif name == "replace":
        if _replaced_size(owner, _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new"),
                          _arg(args, kwargs, 2, "count", -1)) > MAX_SIZE:
            raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")
    elif name == "join" and args:
        return (_joined(args[0], owner, what, budget), *args[1:])
    elif name == "translate" and args and isinstance(args[0], Mapping):
        _checked(dict(args[0]), what, budget)
        longest = max((len(v) for v in args[0].values() if isinstance(v, _TEXTS)), default=1)
        if len(owner) * max(longest, 1) > MAX_SIZE:
            raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")
    return args


def _text_filter(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    _text_size(value, what, budget)


def _check_center(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    _text_size(value, what, budget)
    _count(_arg(args, kwargs, 0, "width", 80), MAX_SIZE, f"{what} width")


def _check_indent(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    size = _text_size(value, what, budget)
    width = _arg(args, kwargs, 0, "width", 4)
    lines = (str(value).count("\n") if isinstance(value, str) else size) + 2
    per_line = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    if size + lines * max(per_line, 0) > MAX_SIZE:
        raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")


def _check_wordwrap(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    size = _text_size(value, what, budget)
    wrap = _arg(args, kwargs, 2, "wrapstring")
    if isinstance(wrap, str) and size + (size + 1) * len(wrap) > MAX_SIZE:
        raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")


def _check_format(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    _check_printf(str(value) if not isinstance(value, _TEXTS) else value, kwargs or args, what, budget)


def _check_replace(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    _text_size(value, what, budget)
    old, new = _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new")
    count = _arg(args, kwargs, 2, "count")
    text = value if isinstance(value, str) else str(value)
    if _replaced_size(text, str(old), str(new), -1 if count is None else count) > MAX_SIZE:
        raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")


def _check_tojson(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    """Every line of the JSON may be indented by its depth."""
    indent = _arg(args, kwargs, 0, "indent")
    step = len(indent) if isinstance(indent, str) else indent if isinstance(indent, int) else 0
    _text_size(value, what, budget, factor=lambda depth: 1 + max(step, 0) * depth)


def _check_pprint(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    """Every line may be indented by its depth."""
    _text_size(value, what, budget, factor=lambda depth: 1 + depth)


def _check_round(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    precision = _arg(args, kwargs, 0, "precision", 0)
    if isinstance(precision, int) and abs(precision) > MAX_INT_DIGITS:
        raise TemplateLimit(f"{what} precision {precision:,} is over the limit of {MAX_INT_DIGITS:,}")


def _check_batch(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    _count(_arg(args, kwargs, 0, "linecount"), MAX_SIZE, f"{what} line count")


def _check_slice(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    _count(_arg(args, kwargs, 0, "slices"), MAX_RANGE, f"{what} slice count")


def _check_sum(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    start = _arg(args, kwargs, 1, "start", 0)
    if isinstance(start, (list, tuple)) and isinstance(value, (list, tuple)):
        size = len(start) + sum(len(v) for v in value if isinstance(v, (list, tuple)))
        _count(size, MAX_SIZE, f"{what} of lists: a list of")
        budget.spend(size * len(value) // 2)  # each '+' copies the list so far


def _check_urlize(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str, budget: _Budget) -> None:
    size = _text_size(value, what, budget)
    extra = sum(len(str(_arg(args, kwargs, i, name) or "")) for i, name in ((2, "target"), (3, "rel")))
    if size + (size // 4 + 1) * (64 + extra) > MAX_SIZE:
        raise TemplateLimit(f"{what} would make a text of over {MAX_SIZE:,} characters")


FilterCheck = Callable[[Any, tuple[Any, ...], dict[str, Any], str, _Budget], None]

_FILTER_CHECKS: dict[str, FilterCheck] = {
    **dict.fromkeys(("capitalize", "e", "escape", "forceescape", "lower", "upper", "title", "trim",
                     "striptags", "string", "safe", "truncate", "urlencode", "wordcount", "xmlattr",
                     "filesizeformat", "number"), _text_filter),
    "center": _check_center, "indent": _check_indent, "wordwrap": _check_wordwrap, "format": _check_format,
    "replace": _check_replace, "tojson": _check_tojson, "pprint": _check_pprint, "round": _check_round,
    "batch": _check_batch, "slice": _check_slice, "sum": _check_sum, "urlize": _check_urlize,
}


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (a Jinja filter) counted as a step, its arguments checked before and its
    result after. Context-passing, so that Jinja never runs it while compiling."""
    passes = _PassArg.from_obj(func)
    check = _FILTER_CHECKS.get(name)
    what = f"filter {name!r}"

    @pass_context
    def guarded(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        budget = _budget(context)
        budget.step()
        if name == "join":  # every item, and the separator between each two
            value = _joined(value, _arg(args, kwargs, 0, "d", ""), what, budget)
        elif check is not None:
            check(value, args, kwargs, what, budget)
        if passes is _PassArg.context:
            result = func(context, value, *args, **kwargs)
        elif passes is _PassArg.eval_context:
            result = func(context.eval_ctx, value, *args, **kwargs)
        elif passes is _PassArg.environment:
            result = func(context.environment, value, *args, **kwargs)
        else:
            result = func(value, *args, **kwargs)
        return _checked(result, what, budget)

    guarded.__name__ = getattr(func, "__name__", name)
    guarded.__doc__ = func.__doc__
    return guarded


@pass_context
def _iterate(context: Context, iterable: Iterable[Any]) -> Iterator[Any]:
    """The items of a ``{% for %}`` loop, each a step of the render."""
    budget = _budget(context)
    for item in iterable:
        budget.step()
        yield item


def _range(*args: Any) -> range:
    numbers = range(*args)
    try:
        size = len(numbers)
    except OverflowError:
        size = MAX_RANGE + 1
    if size > MAX_RANGE:
        raise TemplateLimit(f"range() of {size:,} numbers (limit {MAX_RANGE:,})")
    return numbers


@pass_context
def _finalize(context: Context, value: Any) -> Any:
    """Every ``{{ ... }}`` output: measured (deeply) before it is turned into text, and its
    text counted. A text (or Markup, or anything with ``__html__``) goes on as it is."""
    budget = _budget(context)
    size = _text_size(value, "an output", budget)
    if not isinstance(value, str) and not hasattr(type(value), "__html__"):
        value = str(value)  # as Jinja would, but counted
        size = len(value)
        if size > MAX_SIZE:
            raise TemplateLimit(f"an output would make a text of over {MAX_SIZE:,} characters")
    budget.emit(size)
    return value


def _bounded_join(pieces: Iterable[str]) -> str:
    """The rendered text, refused past ``MAX_OUTPUT`` characters (the pieces, counted as they are
    written, are already capped at ``MAX_EMITTED``)."""
    text = "".join(pieces)
    if len(text) > MAX_OUTPUT:
        raise TemplateLimit(f"the rendered text is over {MAX_OUTPUT:,} characters")
    return text


class _SizeCheckedFormatting:
    """``str.format`` / ``format_map``: the widths it pads to and the values it prints."""

    _made = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._made = len(format_string)
        return super().vformat(format_string, args, kwargs)  # type: ignore[misc,no-any-return]  # a mixin

    def format_field(self, value: Any, format_spec: str) -> Any:
        self._made += _spec_size(format_spec)
        if self._made <= MAX_SIZE:
            self._made += _measure(value, MAX_SIZE - self._made)[0]
        if self._made > MAX_SIZE:
            raise TemplateLimit(f"str.format() would make a text of over {MAX_SIZE:,} characters")
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _BoundedFormatter(_SizeCheckedFormatting, SandboxedFormatter):
    pass


class _BoundedEscapeFormatter(_SizeCheckedFormatting, SandboxedEscapeFormatter):
    pass


# --- the environment -------------------------------------------------------------------------------


_ITERATE = "benchc iterate"  # a filter name no template can spell (it holds a space)


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with every loop metered, every ``~`` checked and the template
    text a render writes counted."""

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        for loop in node.find_all(nodes.For):
            if not (isinstance(loop.iter, nodes.Filter) and loop.iter.name == _ITERATE):
                loop.iter = nodes.Filter(loop.iter, _ITERATE, [], [], None, None, lineno=loop.lineno)
                loop.iter.set_environment(self.environment)
        super().visit_Template(node, frame)

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            join = "(markup_join if context.eval_ctx.volatile else str_join)"
        else:
            join = "markup_join" if frame.eval_ctx.autoescape else "str_join"
        self.write(f"environment.benchc_concat(context, {join}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_Output(self, node: nodes.Output, frame: Frame) -> None:
        static = sum(len(child.data) for child in node.nodes if isinstance(child, nodes.TemplateData))
        if static:
            self.writeline(f"environment.benchc_emit(context, {static})")
        super().visit_Output(node, frame)


class BoundedSandboxedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with every operator, call, filter, loop and output priced against
    the limits of this module (see its docstring)."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    code_generator_class = _BoundedCodeGenerator

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_finalize, **options)
        self.globals.pop("lipsum", None)
        self.globals["range"] = _range
        self.concat = _bounded_join  # type: ignore[method-assign]

    def guard_filters(self) -> None:
        """Wrap every filter (call once, after the last one is added)."""
        self.filters = {name: _guard_filter(name, func) for name, func in self.filters.items()}
        self.filters[_ITERATE] = _iterate

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = _budget(context)
        budget.step()
        if operator == "**":
            _check_power(left, right)
        elif operator == "*":
            _check_repeat(left, right)
        elif operator == "+":
            _check_add(left, right)
        elif operator == "%" and isinstance(left, _TEXTS):
            _check_printf(left, right, "'%' formatting", budget)
        return _checked(self.binop_table[operator](left, right), f"'{operator}'", budget)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = _budget(context)
        budget.step(MACRO_STEPS if isinstance(obj, Macro) else 1)
        if not self.is_safe_callable(obj):
            raise SecurityError(f"{obj!r} is not safely callable")
        if isinstance(obj, LoopContext) and args:  # loop(children) in a recursive loop
            args = (_iterate(context, args[0]), *args[1:])
        owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
        what = f"{name}()" if name else "a call"
        if isinstance(obj, _METHODS) and isinstance(owner, _TEXTS):  # Markup's methods are Python ones
            args = _check_text_method(owner, name, args, kwargs, budget)
        elif isinstance(obj, _METHODS) and isinstance(owner, int) and name == "to_bytes":
            _count(_arg(args, kwargs, 0, "length", 1), MAX_SIZE, "int.to_bytes() length")
        return _checked(context.call(obj, *args, **kwargs), what, budget)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """As the sandbox's, with a formatter that checks sizes (see ``_SizeCheckedFormatting``)."""
        if not isinstance(value, (types.MethodType, types.BuiltinMethodType)) or \
                value.__name__ not in ("format", "format_map"):
            return None
        owner = value.__self__
        if not isinstance(owner, str):
            return None
        str_type, is_format_map = type(owner), value.__name__ == "format_map"
        formatter: SandboxedFormatter = (_BoundedEscapeFormatter(self, escape=owner.escape)
                                         if isinstance(owner, Markup) else _BoundedFormatter(self))

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs:
                    raise TypeError("format_map() takes no keyword arguments")
                if len(args) != 1:
                    raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                kwargs, args = args[0], ()
            return str_type(formatter.vformat(owner, args, kwargs))

        wrapper.__name__ = value.__name__
        wrapper.__doc__ = value.__doc__
        return wrapper

    # called from the generated code (see _BoundedCodeGenerator)

    def benchc_concat(self, context: Context, join: Callable[[Iterable[Any]], str], parts: tuple[Any, ...]) -> str:
        budget = _budget(context)
        budget.step()
        _text_size(parts, "'~'", budget)
        return cast(str, _checked(join(parts), "'~'", budget))  # the join's own type (Markup stays Markup)

    def benchc_emit(self, context: Context, characters: int) -> None:
        _budget(context).emit(characters)


def make_environment() -> BoundedSandboxedEnvironment:
    env = BoundedSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = _number_filter
    env.guard_filters()
    return env


def _number_filter(text: object) -> int | float | str:
    """``{{ answer | number }}``: the first number of a text (digits or words), or the text
    itself, stripped, when it has none (a follow-up then quotes what the model said)."""
    value = first_number(str(text))
    return str(text).strip() if value is None else value


_ENV = make_environment()


@lru_cache(maxsize=1024)
def compile_template(source: str) -> jinja2.Template:
    """The sandboxed template of ``source``, compiled once per process: a compile renders one
    template per item, and Jinja's parse and code generation cost more than the render (a
    template is reentrant: each render gets its own context and sandbox budget)."""
    try:
        return _ENV.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error on template line {exc.lineno}: {exc.message}") from None
    except (RecursionError, MemoryError, SyntaxError):
        raise TemplateProblem("template nests too deeply to compile") from None


def render(template: jinja2.Template, context: dict[str, Any]) -> str:
    try:
        return template.render(**context)
    except TemplateLimit as exc:
        raise TemplateProblem(f"template exceeds a sandbox limit: {exc}") from None
    except jinja2.UndefinedError as exc:
        raise TemplateProblem(f"undefined variable in template: {exc.message}") from None
    except jinja2.exceptions.SecurityError as exc:
        raise TemplateProblem(f"template tried an unsafe operation: {exc}") from None
    except RecursionError:
        raise TemplateProblem("template failed to render: it recurses too deeply (a macro calling itself?)") from None
    except MemoryError:
        raise TemplateProblem("template failed to render: out of memory") from None
    except (TypeError, ValueError, ArithmeticError, jinja2.TemplateError) as exc:
        raise TemplateProblem(f"template failed to render: {exc}") from None
