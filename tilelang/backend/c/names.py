"""C identifiers for IR objects (variables, buffers, the code generator's own
temporaries), by object identity, unique within one generated function.

A name is either an identifier this allocator chose (`new`, `name`) or, for a while,
any C expression the code generator binds to an object (`bound`, `alias`): the lane
`(j + 1)` of a vectorized loop variable, a ring slot's pointer in place of a buffer.
Identifiers are never reused, even after their binding ends, so a C scope never sees
one name declared twice."""
from __future__ import annotations

import contextlib
import re

# words no generated identifier may be: C/C++ keywords, our `tl` namespace, the
# standard library's, and macros the headers define
C_RESERVED = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "return", "short", "signed", "sizeof",
    "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "class", "new",
    "delete", "this", "template", "typename", "namespace", "bool", "true", "false", "private", "public",
    "operator", "friend", "virtual", "tl", "std", "main", "max", "min", "abs", "exp", "log", "errno", "NAN",
    "INFINITY", "and", "or", "not"})


class CNames:
    """Unique C identifiers by object identity.

    `reserved`: words a user's name must not become (a backend adds its built-ins);
    `escape(base)`: the identifier used instead of a reserved or otherwise unusable
    base (default `v_` + base). Names starting with `tl_` are the generated code's own:
    a user's `tl_x` is escaped too, an internal one (`internal=True`) is kept."""

    def __init__(self, reserved=C_RESERVED, escape=None):
        self.reserved = frozenset(reserved)
        self._escape = escape or (lambda base: "v_" + base)
        self._by_id = {}       # id(obj) -> C identifier or expression
        self._keep = {}        # id(obj) -> obj: a bound object outlives its binding (no id reuse)
        self._used = set()     # every identifier handed out

    # allocation ---------------------------------------------------------------
    def identifier(self, base, internal=False) -> str:
        """A C identifier spelling `base`: non-word characters become `_`; a base that
        starts with a digit, is reserved, or starts with `tl_` (unless `internal`) is
        escaped."""
        base = re.sub(r"\W", "_", base) or "v"
        if not internal and (base[0].isdigit() or base in self.reserved or base.startswith("tl_")):
            base = self._escape(base)
        return base

    def new(self, obj, base, internal=False) -> str:
        """A fresh identifier for `obj` (`base`, else `base_1`, `base_2` ...), bound to it."""
        name = self.fresh(self.identifier(base, internal))
        self._set(obj, name)
        return name

    def fresh(self, base) -> str:
        """A fresh internal identifier bound to no IR object (a temporary of the code)."""
        base = self.identifier(base, True)
        name, k = base, 1
        while name in self._used:
            name, k = f"{base}_{k}", k + 1
        self._used.add(name)
        return name

    def name(self, obj, base) -> str:
        """`obj`'s name, allocated from `base` on first use."""
        n = self._by_id.get(id(obj))
        return n if n is not None else self.new(obj, base)

    def reserve(self, name) -> None:
        """Mark `name` taken (an identifier the generated code declares itself)."""
        self._used.add(name)

    # lookup -------------------------------------------------------------------
    def get(self, obj_id, default=None):
        """The name bound to the object with id `obj_id`, or `default`."""
        return self._by_id.get(obj_id, default)

    def __getitem__(self, obj) -> str:
        n = self._by_id.get(id(obj))
        if n is None:
            raise KeyError(f"`{getattr(obj, 'name', obj)}` has no C name here")
        return n

    def __contains__(self, obj) -> bool:
        return id(obj) in self._by_id

    # rebinding ----------------------------------------------------------------
    def alias(self, obj, c_expr) -> None:
        """From now on `obj` prints as `c_expr` (until this scope ends or it is rebound)."""
        self._set(obj, c_expr)

    @contextlib.contextmanager
    def bound(self, obj, c_expr):
        """`with names.bound(var, "(j + 1)"):` prints `var` as that expression inside the
        block, as before it after (also when the block raises)."""
        with self.bound_all({id(obj): (obj, c_expr)}):
            yield c_expr

    @contextlib.contextmanager
    def bound_all(self, bindings):
        """Several bindings at once: {id(obj): (obj, c_expr)} or [(obj, c_expr)]."""
        pairs = list(bindings.values()) if isinstance(bindings, dict) else list(bindings)
        saved = [(obj, self._by_id.get(id(obj))) for obj, _ in pairs]
        for obj, c_expr in pairs:
            self._set(obj, c_expr)
        try:
            yield
        finally:
            for obj, old in reversed(saved):
                if old is None:
                    self._by_id.pop(id(obj), None)
                else:
                    self._by_id[id(obj)] = old

    def child(self) -> "CNames":
        """A nested scope: starts with every name of this one; what it binds or
        allocates stays in it (a kernel's locals after the function's parameters)."""
        c = type(self).__new__(type(self))
        c.reserved, c._escape = self.reserved, self._escape
        c._by_id, c._keep, c._used = dict(self._by_id), dict(self._keep), set(self._used)
        return c

    def _set(self, obj, name):
        self._by_id[id(obj)] = name
        self._keep[id(obj)] = obj
