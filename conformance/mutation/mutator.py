"""The mutation operators: one small semantic change to one Python module, via ``ast``.

A :class:`Mutant` replaces one source span (the exact position ``ast`` gives a node) by
new text, so the mutated file keeps its comments and layout and a mutant reads as a
one-line diff.  The new text is the ``ast.unparse`` of the changed node, in parentheses
when it is an expression.  :meth:`Mutant.valid` checks that the mutated module compiles
and that its AST really differs from the original (a change the parser erases is no
mutant); the runner only runs valid mutants.

Operators (``Mutant.operator``):

- ``cmp``: one comparison flipped: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``is``/``is not``,
  ``in``/``not in`` (each to the other);
- ``bool``: ``and``/``or`` swapped, ``not x`` becoming ``x``, ``True``/``False`` swapped;
- ``int``: an integer constant off by one (``n + 1``, and ``n - 1`` when ``n > 0``);
- ``stmt``: a statement inside a function replaced by ``pass``: an assignment that
  rebinds (an attribute, an item, a name bound earlier: dropping a first binding is a
  mere NameError), an augmented assignment, a call statement, or the whole body of an
  ``if`` (which drops early ``return`` branches too; not a body that only raises: the
  suite never sends what the reference refuses, so dropping a refusal is invisible by
  construction);
- ``args``: two adjacent positional arguments of a call swapped;
- ``enum``: ``E.A`` replaced by the next member of the same ``Enum``/``IntFlag`` ``E`` that
  has another value (resolved through the module's namespace, so only real enums).

Left alone, because no observable can show the change or it is noise: docstrings, type
annotations, decorators, f-strings, ``raise`` and ``assert`` statements (messages and
internal sanity checks), imports, trace calls (``emit(...)``, ``trace.emit(...)``) and
``if trace ...`` blocks, class-body declarations (attrs fields), the text-only
methods (``__repr__``, ``__str__``, ``__reduce__``, ``render``, ``explain*``), and the
model's self-checks and report judges (:data:`_SELF_CHECKS`: equivalent by construction).
"""

from __future__ import annotations

import ast
import copy
import enum
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from conformance.mutation import blame

OPERATORS = ("cmp", "bool", "int", "stmt", "args", "enum")

_CMP_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}
_TEXT_ONLY = frozenset({"__repr__", "__str__", "__reduce__", "render"})
#: The model's checks of its own invariants, and the judges of a target's or the live
#: kernel's reports that live beside the model: on a correct state a weakened check
#: finds nothing either (an equivalent by construction), and a strengthened one only
#: makes the mutated target report a broken state of its own making.  Neither says
#: anything about the suite's power.
_SELF_CHECKS = frozenset({
    "conservation_problems", "check_conservation",        # page_pool/ledger.py, pool.py
    "ledger_problems", "check",                            # cpumap_sim.py, zcrx/engine.py
    "problems",                                            # zcrx/engine.py
    "tracepoint_problems",                                 # cpumap.py (CPUMAP-LIVE-001)
    "rss_hash_type_violations", "rss_hash_type_ok",        # kfuncs.py (KFUNC-RSS-002/003)
    "is_valid_rss_hash_type",                              # kfuncs.py (the same judge)
    # rss.py: the bit-at-a-time Toeplitz, the independent definition the table-driven
    # hash every component calls is checked against (tests/test_rss.py, on the Microsoft
    # vectors); no target's answer comes from it, so its mutants measure the unit tests.
    "toeplitz_bitwise",
})
#: Class attributes that only document a kernel layout beside the code that implements
#: it (``reference/zcrx/uapi.py``: field, offset, size per struct, compared with the
#: compiled header by tests/test_zcrx_c_layout.py); nothing the model does reads them, so
#: every mutant of them is an equivalent by construction.
_DOC_TABLES = frozenset({"KERNEL_LAYOUT"})
#: Builtins whose swapped arguments are only a TypeError, or change nothing (min, max).
_NO_SWAP = frozenset({"isinstance", "issubclass", "getattr", "setattr", "hasattr", "min", "max"})

Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@attrs.frozen
class Mutant:
    """One mutation: replace ``[line:col, end_line:end_col)`` of ``path`` by ``replacement``.

    Columns are UTF-8 byte offsets, as ``ast`` gives them.  ``original`` is the replaced
    text (after an ``if body: `` label when a whole ``if`` body is dropped).  ``function`` is the
    qualified name of the enclosing function (empty at module level) and ``rules`` the
    SPEC rule ids it names in its docstring, comments or trace calls (shorthands spelt out).
    """

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    operator: str
    original: str
    replacement: str
    function: str = ""
    rules: tuple[str, ...] = ()
    #: What changed, when ``original`` → ``replacement`` would hide it (a long call).
    note: str = ""
    #: The first line of the statement holding the change (what line coverage records).
    stmt_line: int = 0
    #: The changed line's text, stripped: with the fields above but the line numbers, what
    #: names a mutant across edits elsewhere in its module (``--again``, the registry).
    code: str = ""

    @property
    def id(self) -> str:
        digest = hashlib.sha1(self.replacement.encode()).hexdigest()[:6]
        return f"{self.path}:{self.line}:{self.col}:{self.operator}:{digest}"

    @property
    def description(self) -> str:
        if self.note:
            return f"{_short(self.original, 40)}: {self.note}"
        return f"{_short(self.original)} → {_short(self.replacement)}"

    def apply(self, source: str) -> str:
        """``source`` with this mutation applied."""
        data = source.encode()
        starts = _line_starts(data)
        begin = starts[self.line - 1] + self.col
        end = starts[self.end_line - 1] + self.end_col
        return (data[:begin] + self.replacement.encode() + data[end:]).decode()

    def valid(self, source: str) -> bool:
        """The mutated module compiles and its AST differs from the original's."""
        try:
            mutated = self.apply(source)
            compile(mutated, self.path, "exec")
            return ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(source))
        except (SyntaxError, ValueError, UnicodeDecodeError):
            return False

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "description": self.description, **attrs.asdict(self),
                "rules": list(self.rules)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Mutant:
        fields = {f.name for f in attrs.fields(cls)}
        values = {k: v for k, v in doc.items() if k in fields}
        values["rules"] = tuple(values.get("rules", ()))
        return cls(**values)


def mutants_of_source(
    source: str, path: str, namespace: Mapping[str, Any] | None = None
) -> list[Mutant]:
    """Every candidate mutant of one module, in source order (not yet :meth:`~Mutant.valid`).

    ``namespace`` is the module's globals, needed to recognise enum members; without it
    the ``enum`` operator yields nothing.
    """
    finder = _Finder(source, path, namespace or {})
    finder.walk_module(ast.parse(source))
    return finder.found


class _Finder:
    """Walks a module, skipping what is never mutated, and records candidate mutants."""

    def __init__(self, source: str, path: str, namespace: Mapping[str, Any]) -> None:
        self.source = source
        self.lines = source.splitlines()
        self.path = path
        self.namespace = namespace
        self.found: list[Mutant] = []
        self._rules_cache: dict[int, tuple[str, ...]] = {}
        self._stmt_line = 0  # the line of the innermost statement being walked

    # -- the walk ----------------------------------------------------------------------

    def walk_module(self, tree: ast.Module) -> None:
        for stmt in _without_docstring(tree.body):
            self.walk(stmt, (), stmt)

    def walk(self, node: ast.AST, scopes: tuple[Scope, ...], top: ast.stmt) -> None:
        if _never_mutated(node):
            return
        if not isinstance(node, ast.stmt):
            self._walk(node, scopes, top)
            return
        outer, self._stmt_line = self._stmt_line, node.lineno
        try:
            self._walk(node, scopes, top)
        finally:
            self._stmt_line = outer

    def _walk(self, node: ast.AST, scopes: tuple[Scope, ...], top: ast.stmt) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = (*scopes, node)
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    self.walk(default, inner, top)
            for stmt in _without_docstring(node.body):
                self.walk(stmt, inner, top)
            return
        if isinstance(node, ast.ClassDef):
            for stmt in _without_docstring(node.body):
                self.walk(stmt, (*scopes, node), top)
            return
        if isinstance(node, ast.AnnAssign):  # the annotation and the target are not code
            if node.value is not None:
                self._statement(node, scopes, top)
                self.walk(node.value, scopes, top)
            return
        if isinstance(node, ast.stmt):
            self._statement(node, scopes, top)
        elif isinstance(node, ast.expr):
            self._expression(node, scopes, top)
        for child in ast.iter_child_nodes(node):
            self.walk(child, scopes, top)

    # -- the operators -------------------------------------------------------------------

    def _statement(self, node: ast.stmt, scopes: tuple[Scope, ...], top: ast.stmt) -> None:
        if not scopes or isinstance(scopes[-1], ast.ClassDef):
            return  # module constants and class declarations: dropping one is an import error
        drop = isinstance(node, ast.AugAssign) or (
            isinstance(node, ast.Assign | ast.AnnAssign) and _rebinds(node, scopes[-1])
        ) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and not _is_trace_call(node.value))
        if drop:
            self._add("stmt", node, node, "pass", scopes, top)
        if isinstance(node, ast.If) and not all(
                _is_trace_statement(s) or isinstance(s, ast.Raise) for s in node.body):
            self._add("stmt", node.body[0], node.body[-1], "pass", scopes, top, "if body: ")

    def _expression(self, node: ast.expr, scopes: tuple[Scope, ...], top: ast.stmt) -> None:
        for operator, new, note in self._expression_variants(node):
            self._add(operator, node, node, f"({ast.unparse(new)})", scopes, top, note=note)

    def _expression_variants(self, node: ast.expr) -> Iterator[tuple[str, ast.expr, str]]:
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                flipped = copy.deepcopy(node)
                flipped.ops[i] = _CMP_FLIP[type(op)]()
                yield "cmp", flipped, ""
        elif isinstance(node, ast.BoolOp):
            swapped = copy.deepcopy(node)
            swapped.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield "bool", swapped, ""
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "bool", node.operand, ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield "bool", ast.Constant(not node.value), ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, int):
            yield "int", ast.Constant(node.value + 1), ""
            if node.value > 0:
                yield "int", ast.Constant(node.value - 1), ""
        elif isinstance(node, ast.Call):
            yield from _swaps(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            other = self._other_member(node)
            if other is not None:
                yield "enum", other, ""

    def _other_member(self, node: ast.Attribute) -> ast.Attribute | None:
        owner = _resolve(node.value, self.namespace)
        if not (isinstance(owner, type) and issubclass(owner, enum.Enum)):
            return None
        members = list(owner.__members__.items())
        names = [name for name, _ in members]
        if node.attr not in names:
            return None
        value = owner.__members__[node.attr].value
        start = names.index(node.attr)
        for name, member in members[start + 1:] + members[:start]:
            if member.value != value:
                other = copy.deepcopy(node)
                other.attr = name
                return other
        return None

    # -- bookkeeping -----------------------------------------------------------------------

    def _add(
        self, operator: str, first: ast.stmt | ast.expr, last: ast.stmt | ast.expr,
        replacement: str, scopes: tuple[Scope, ...], top: ast.stmt, label: str = "",
        note: str = "",
    ) -> None:
        line, col = first.lineno, first.col_offset
        end_line, end_col = last.end_lineno, last.end_col_offset
        assert end_line is not None and end_col is not None
        original = label + self._segment(line, col, end_line, end_col)
        self.found.append(Mutant(
            path=self.path, line=line, col=col, end_line=end_line, end_col=end_col,
            operator=operator, original=original, replacement=replacement,
            function=".".join(s.name for s in scopes),
            rules=self._rules(scopes, top), note=note,
            stmt_line=first.lineno if isinstance(first, ast.stmt) else self._stmt_line,
            code=self.source.splitlines()[line - 1].strip(),
        ))

    def _segment(self, line: int, col: int, end_line: int, end_col: int) -> str:
        data = self.source.encode()
        starts = _line_starts(data)
        return data[starts[line - 1] + col:starts[end_line - 1] + end_col].decode()

    def _rules(self, scopes: tuple[Scope, ...], top: ast.stmt) -> tuple[str, ...]:
        """The rule ids the innermost scope that names any names (see Mutant)."""
        for scope in reversed(scopes):
            if isinstance(scope, ast.ClassDef):
                found = _rule_ids(ast.get_docstring(scope) or "")
            else:
                found = self._rules_cache.get(id(scope)) or self._text_rules(scope)
                self._rules_cache[id(scope)] = found
            if found:
                return found
        if scopes:
            return ()
        first = top.lineno
        while first > 1 and self.lines[first - 2].lstrip().startswith("#"):
            first -= 1  # the comment block above a module-level statement belongs to it
        return _rule_ids("\n".join(self.lines[first - 1:top.end_lineno]))

    def _text_rules(self, scope: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
        first = min([scope.lineno, *(d.lineno for d in scope.decorator_list)])
        return _rule_ids("\n".join(self.lines[first - 1:scope.end_lineno]))


def _never_mutated(node: ast.AST) -> bool:
    if isinstance(node, ast.Raise | ast.Assert | ast.Import | ast.ImportFrom | ast.JoinedStr
                  | ast.arg | ast.Global | ast.Nonlocal):
        return True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return (node.name in _TEXT_ONLY or node.name in _SELF_CHECKS
                or node.name.startswith("explain"))
    if isinstance(node, ast.Call):
        return _is_trace_call(node)
    if isinstance(node, ast.AnnAssign | ast.Assign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id in _DOC_TABLES for t in targets)
    if isinstance(node, ast.If):
        return _mentions_trace(node.test) or _is_type_checking(node.test)
    return False


def _rebinds(node: ast.Assign | ast.AnnAssign, scope: Scope) -> bool:
    """Dropping ``node`` leaves its targets defined: each is an attribute or item, or a
    name the function bound before (a parameter, an earlier assignment).  Dropping the
    first binding of a name is only a NameError, a kill that measures nothing."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if not names:
        return True
    bound = {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)} \
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else set()
    bound |= {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store) and n.lineno < node.lineno}
    return all(n.id in bound for n in names)


def _is_trace_call(node: ast.Call) -> bool:
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(
        func, ast.Attribute) else ""
    return name == "emit"


def _is_trace_statement(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
        and _is_trace_call(node.value)


def _mentions_trace(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "trace" for n in ast.walk(test))


def _is_type_checking(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Name | ast.Attribute) and "TYPE_CHECKING" in ast.unparse(n)
               for n in ast.walk(test))


def _swaps(node: ast.Call) -> Iterator[tuple[str, ast.expr, str]]:
    if isinstance(node.func, ast.Name) and node.func.id in _NO_SWAP:
        return
    if any(isinstance(a, ast.Starred) for a in node.args):
        return
    for i in range(len(node.args) - 1):
        if ast.dump(node.args[i]) == ast.dump(node.args[i + 1]):
            continue
        swapped = copy.deepcopy(node)
        swapped.args[i], swapped.args[i + 1] = swapped.args[i + 1], swapped.args[i]
        pair = ", ".join(_short(ast.unparse(a), 25) for a in node.args[i:i + 2])
        yield "args", swapped, f"arguments {i + 1} and {i + 2} swapped ({pair})"


def _resolve(node: ast.expr, namespace: Mapping[str, Any]) -> object:
    """The object a dotted name (``E``, ``mod.E``) denotes in ``namespace``, else None."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, namespace)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _rule_ids(text: str) -> tuple[str, ...]:
    """The rule ids ``text`` names, shorthands spelt out (``PP-RECYCLE-003/004`` names two
    rules; ``CSUM-001..004`` four): :func:`conformance.mutation.blame.ids_in`."""
    return blame.ids_in(text)


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _short(text: str, limit: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:limit - 3] + "..."
