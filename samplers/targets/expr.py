"""Turn a user-typed potential energy U (plain text) into a sympy expression.

Security model: the text never reaches ``eval``, ``exec``, ``sympify``,
``parse_expr`` or ``getattr``.  A hand-written tokenizer and a recursive-descent
parser build sympy objects directly, and names are looked up only in the fixed
tables below, so nothing the user types can name arbitrary Python objects.

Denial-of-service model: the text length, nesting depth, node count and
exponents are bounded, and every constant subexpression carries a float
"shadow" value that is checked *before* the sympy object is built.  That way
sympy is never asked to compute a giant exact number such as
``((10**12)**64)**64`` -- a float overflows cheaply, an exact integer does not.

Evaluation: constant subexpressions are evaluated exactly (1/2, sqrt(2), pi)
so zeros and poles are caught here.  Anything containing a variable is built
*unevaluated* (constants folded into one coefficient, x**1 -> x), because
sympy's automatic evaluation costs up to ~1 s on nested input such as
sqrt(2*sqrt(2*...)).  So ``x + x`` stays ``x + x``; the tree is correct for
lambdify/diff, just not canonical.

Grammar (same precedence as Python; ``^`` is a synonym for ``**``)::

    sum     := product (('+' | '-') product)*
    product := unary (('*' | '/') unary)*
    unary   := ('+' | '-') unary | power
    power   := primary (('**' | '^') unary)?        # right-associative
    primary := NUMBER | NAME | FUNCTION '(' sum ')' | '(' sum ')'
"""

from __future__ import annotations

import difflib
import math
from typing import NamedTuple

import sympy

from samplers.errors import InputError

__all__ = [
    "ExpressionError",
    "LIMITS",
    "parse_expression",
    "compile_expression",
    "differentiate",
    "symbols_for",
]

# Read at call time, so an app (or a test) may tighten them.
LIMITS = dict(max_length=400, max_depth=40, max_exponent=64, max_nodes=400)

_MAX_LITERAL = 1e12
_MAX_CONSTANT = 1e300
# Exact rationals are cheap to multiply but not to factor: sympy factors the
# base of a fractional power (sqrt(n) -> k*sqrt(m)), which takes seconds for
# numbers of a few thousand bits.  Integer powers only multiply.
_MAX_ROOT_BITS = 128
_MAX_POWER_BITS = 20_000

_FUNCTIONS = {
    "exp": (sympy.exp, math.exp),
    "log": (sympy.log, math.log),
    "sin": (sympy.sin, math.sin),
    "cos": (sympy.cos, math.cos),
    "tan": (sympy.tan, math.tan),
    "tanh": (sympy.tanh, math.tanh),
    "sqrt": (sympy.sqrt, math.sqrt),
    "abs": (sympy.Abs, abs),
}
_CONSTANTS = {"pi": (sympy.pi, math.pi), "e": (sympy.E, math.e)}
_UNDEFINED = (sympy.zoo, sympy.nan, sympy.oo, -sympy.oo)

_DIGITS = "0123456789"
_NAME_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_NAME_CHARS = _NAME_START + _DIGITS
_SINGLE_OPS = "+-*/^(),"

# Characters people plausibly type or paste, with the fix they probably want.
_CHAR_HINTS = {
    "=": "type only the expression for U, e.g. x**2/2",
    ".": "'.' may only appear inside a number like 0.5",
    "[": "use round parentheses ( ) for grouping",
    "]": "use round parentheses ( ) for grouping",
    "{": "use round parentheses ( ) for grouping",
    "}": "use round parentheses ( ) for grouping",
    "'": "text in quotes is not allowed",
    '"': "text in quotes is not allowed",
    "\u2212": "use the ASCII minus sign '-'",
    "\u00d7": "use '*' for multiplication",
    "\u00b7": "use '*' for multiplication",
    "\u00b2": "write powers as x**2",
    "\u00b3": "write powers as x**3",
}


class ExpressionError(InputError):
    """A problem with the user's expression.

    The message is one user-facing line (positions in it count from 1);
    ``position`` is the 0-based character offset of the problem, or None.
    """

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message)
        self.message = message
        self.position = position


class _Token(NamedTuple):
    kind: str  # "number", "name", "op" or "end"
    text: str
    pos: int


class _Node(NamedTuple):
    expr: sympy.Expr
    value: float | None  # float shadow of a constant; None if it has variables


def symbols_for(variables) -> tuple:
    """The real sympy Symbols that parse_expression uses for these names."""
    return tuple(sympy.Symbol(name, real=True) for name in variables)


def parse_expression(text: str, variables: tuple[str, ...] = ("x", "y"), *,
                     float_decimals: bool = False) -> sympy.Expr:
    """Parse text into a sympy expression in real Symbols named by ``variables``.

    float_decimals: a number with decimals (1.22474) becomes a sympy Float with the digits as
    typed, not the exact rational 61237/50000. For a coefficient that is a rounded constant, where
    a fraction would claim an exactness the number never had.

    Raises ExpressionError (and nothing else) for any problem with ``text``.
    """
    variables = _check_variables(variables)
    if not isinstance(text, str):
        raise TypeError(f"expression must be a str, not {type(text).__name__}")
    try:
        return _parse(text, variables, float_decimals)
    except ExpressionError:
        raise
    except RecursionError as exc:
        raise ExpressionError("expression is nested too deeply") from exc
    except Exception as exc:  # defence in depth: callers rely on one error type
        raise ExpressionError("could not understand this expression") from exc


def compile_expression(text: str, variables: tuple[str, ...] = ("x", "y")):
    """Return (expr, used_vars): used_vars lists the variables that appear, in order."""
    variables = _check_variables(variables)
    expr = parse_expression(text, variables)
    free = expr.free_symbols
    used = tuple(v for v, s in zip(variables, symbols_for(variables)) if s in free)
    return expr, used


def _check_variables(variables) -> tuple[str, ...]:
    # A programming error rather than bad user input, hence a plain ValueError.
    variables = tuple(variables)
    for name in variables:
        if (
            not isinstance(name, str)
            or not name
            or name[0] not in _NAME_START
            or any(c not in _NAME_CHARS for c in name)
            or name in _FUNCTIONS
            or name in _CONSTANTS
        ):
            raise ValueError(f"invalid variable name {name!r}")
    if len(set(variables)) != len(variables):
        raise ValueError(f"duplicate variable names in {variables!r}")
    return variables


def _parse(text: str, variables: tuple[str, ...], float_decimals: bool = False) -> sympy.Expr:
    limit = LIMITS["max_length"]
    if len(text) > limit:
        raise ExpressionError(
            f"expression is too long ({len(text)} characters, limit {limit})", limit
        )
    tokens = _tokenize(text)
    if tokens[0].kind == "end":
        raise ExpressionError("enter an expression")
    expr = _Parser(tokens, variables, float_decimals).parse()
    # Per-node checks catch these where they arise; this is the backstop.
    if expr.has(*_UNDEFINED):
        raise ExpressionError("expression is undefined (division by zero or a pole)")
    if expr.has(sympy.I):
        raise ExpressionError("expression is not real-valued")
    return expr


# ---------------------------------------------------------------- tokenizer


def _show(ch: str) -> str:
    # Keep messages on one printable line whatever the user typed.
    return f"'{ch}'" if ch.isprintable() else f"U+{ord(ch):04X}"


def _short(text: str, width: int = 24) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _tokenize(text: str) -> list[_Token]:
    tokens = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _DIGITS or (ch == "." and i + 1 < n and text[i + 1] in _DIGITS):
            j = _scan_number(text, i)
            tokens.append(_Token("number", text[i:j], i))
            i = j
        elif ch in _NAME_START:
            j = i + 1
            while j < n and text[j] in _NAME_CHARS:
                j += 1
            tokens.append(_Token("name", text[i:j], i))
            i = j
        elif text.startswith("**", i):
            tokens.append(_Token("op", "**", i))
            i += 2
        elif ch in _SINGLE_OPS:
            tokens.append(_Token("op", ch, i))
            i += 1
        else:
            message = f"unexpected character {_show(ch)} at position {i + 1}"
            if ch in _CHAR_HINTS:
                message += f": {_CHAR_HINTS[ch]}"
            raise ExpressionError(message, i)
    tokens.append(_Token("end", "", n))
    return tokens


def _scan_number(text: str, i: int) -> int:
    """End of the number starting at i: digits, optional fraction, optional exponent."""
    n = len(text)

    def digits(j):
        while j < n and text[j] in _DIGITS:
            j += 1
        return j

    j = digits(i)
    if j < n and text[j] == ".":
        j = digits(j + 1)
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        # "2e" followed by no digits is 2 next to the name e: not part of the number.
        if k < n and text[k] in _DIGITS:
            j = digits(k)
    return j


# ------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, tokens: list[_Token], variables: tuple[str, ...], float_decimals: bool = False):
        self.tokens = tokens
        self.float_decimals = float_decimals
        self.i = 0
        self.depth = 0
        self.nodes = 0
        self.variables = variables
        self.symbols = dict(zip(variables, symbols_for(variables)))

    # -- token helpers

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, *ops: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in ops

    # -- limits

    def enter(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > LIMITS["max_depth"]:
            raise ExpressionError(
                f"expression is nested too deeply (limit {LIMITS['max_depth']} levels)",
                token.pos,
            )

    def leave(self) -> None:
        self.depth -= 1

    def count(self, token: _Token) -> None:
        self.nodes += 1
        if self.nodes > LIMITS["max_nodes"]:
            raise ExpressionError(
                f"expression is too complex (limit {LIMITS['max_nodes']} parts)", token.pos
            )

    # -- grammar

    def parse(self) -> sympy.Expr:
        node = self.sum()
        if self.peek().kind != "end":
            raise self.after_operand(self.peek())
        return node.expr

    def sum(self) -> _Node:
        return self.chain(self.product, ("+", "-"), _add_constants, sympy.Add)

    def product(self) -> _Node:
        return self.chain(self.unary, ("*", "/"), _multiply_constants, sympy.Mul)

    def chain(self, operand, operators, combine, operation) -> _Node:
        """operand (op operand)*, left-associative: a sum of terms or a product of factors."""
        nodes, ops = [operand()], []
        while self.at(*operators):
            op = self.take()
            node = operand()
            self.count(op)
            if op.text == "-":
                node = _negate(node)
            elif op.text == "/":
                if node.value == 0:
                    raise ExpressionError(f"division by zero at position {op.pos + 1}", op.pos)
                node = _reciprocal(node, op)
            nodes.append(node)
            ops.append(op)
        return _fold(nodes, ops, combine, operation)

    def unary(self) -> _Node:
        if not self.at("+", "-"):
            return self.power()
        op = self.take()
        self.enter(op)
        operand = self.unary()
        self.leave()
        self.count(op)
        if op.text == "+":
            return operand
        return _negate(operand)

    def power(self) -> _Node:
        base = self.primary()
        if not self.at("**", "^"):
            return base
        op = self.take()
        self.enter(op)
        exponent = self.unary()  # unary, not primary: 2**-1 is fine, as in Python
        self.leave()
        self.count(op)
        return self.build_power(base, exponent, op)

    def primary(self) -> _Node:
        token = self.take()
        if token.kind == "number":
            self.count(token)
            return _number(token, self.float_decimals)
        if token.kind == "name":
            return self.name(token)
        if token.kind == "op" and token.text == "(":
            self.enter(token)
            if self.at(")"):
                raise ExpressionError(f"empty parentheses at position {token.pos + 1}", token.pos)
            inner = self.sum()
            self.close(token)
            self.leave()
            return inner
        if token.kind == "end":
            previous = self.tokens[self.i - 2]
            raise ExpressionError(
                f"expression is incomplete: something must follow '{previous.text}'", token.pos
            )
        raise ExpressionError(
            f"expected a number, name or '(' at position {token.pos + 1}, found '{token.text}'",
            token.pos,
        )

    def name(self, token: _Token) -> _Node:
        name = token.text
        if name in _FUNCTIONS:
            return self.call(token)
        if name in self.symbols or name in _CONSTANTS:
            if self.at("("):
                raise ExpressionError(
                    f"'{name}' is not a function; write {name}*(...) to multiply",
                    self.peek().pos,
                )
            self.count(token)
            if name in self.symbols:
                return _Node(self.symbols[name], None)
            return _Node(*_CONSTANTS[name])
        raise ExpressionError(self.unknown_name(name), token.pos)

    def call(self, token: _Token) -> _Node:
        name = token.text
        if not self.at("("):
            raise ExpressionError(
                f"'{name}' must be followed by parentheses, e.g. {name}(x)", token.pos
            )
        paren = self.take()
        self.enter(paren)
        if self.at(")"):
            raise ExpressionError(f"{name}() needs an argument, e.g. {name}(x)", paren.pos)
        argument = self.sum()
        if self.at(","):
            raise ExpressionError(
                f"{name}() takes exactly one argument", self.peek().pos
            )
        self.close(paren)
        self.leave()
        self.count(token)
        return self.build_call(token, argument)

    def close(self, paren: _Token) -> None:
        token = self.peek()
        if token.kind == "op" and token.text == ")":
            self.take()
            return
        if token.kind == "end":
            raise ExpressionError(
                f"unbalanced parentheses: '(' at position {paren.pos + 1} is never closed",
                paren.pos,
            )
        raise self.after_operand(token)

    # -- error messages

    def after_operand(self, token: _Token) -> ExpressionError:
        """Error for a token that cannot follow a complete operand."""
        where = f"at position {token.pos + 1}"
        if token.kind == "op" and token.text == ")":
            message = f"unbalanced parentheses: ')' {where} has no matching '('"
        elif token.kind in ("number", "name") or token.text == "(":
            previous = self.tokens[self.i - 1]
            if previous.kind == "number" and token.text.startswith("."):
                message = f"a number has two decimal points {where}"
            else:
                message = (
                    f"missing operator between '{_short(previous.text)}' and "
                    f"'{_short(token.text)}' {where}? (use * to multiply: 2*x, not 2x)"
                )
        elif token.text == ",":
            message = f"unexpected ',' {where}: commas are not allowed"
        else:
            message = f"unexpected '{token.text}' {where}"
        return ExpressionError(message, token.pos)

    def unknown_name(self, name: str) -> str:
        allowed = [*self.variables, *_CONSTANTS, *_FUNCTIONS]
        message = f"unknown name '{_short(name)}' (allowed: {', '.join(allowed)})"
        if len(name) > 1 and all(c in self.symbols for c in name):
            return message + f"; write {'*'.join(name)} for a product"
        close = difflib.get_close_matches(name.lower(), allowed, n=1)
        if close:
            return message + f"; did you mean '{close[0]}'?"
        return message

    # -- building sympy objects (float shadows are checked first)

    def finish(self, expr: sympy.Expr, value: float, token: _Token) -> _Node:
        """Wrap an evaluated constant, catching poles the float shadow missed."""
        _check_defined(expr, token)
        return _Node(expr, value)

    def build_power(self, base: _Node, exponent: _Node, op: _Token) -> _Node:
        if exponent.value is None:
            hint = "use exp(...) for e to a power" if base.expr == sympy.E else "e.g. x**2"
            raise ExpressionError(f"exponents must be constant numbers ({hint})", op.pos)
        limit = LIMITS["max_exponent"]
        if abs(exponent.value) > limit:
            raise ExpressionError(
                f"exponent {exponent.value:.6g} is too large (limit {limit})", op.pos
            )
        _check_exact_size(base.expr, exponent, op)
        if base.value is not None:
            value = _float_power(base.value, exponent, op)
            return self.finish(sympy.Pow(base.expr, exponent.expr), value, op)
        # Cheap tidying that sympy's evaluation would have done.
        if exponent.expr == 1:
            return base
        if exponent.expr == 0:
            return _Node(sympy.S.One, 1.0)
        return _Node(sympy.Pow(base.expr, exponent.expr, evaluate=False), None)

    def build_call(self, token: _Token, argument: _Node) -> _Node:
        name = token.text
        make_expr, make_value = _FUNCTIONS[name]
        if name == "sqrt":
            _check_exact_size(argument.expr, _Node(sympy.S.Half, 0.5), token)
        if argument.value is None:
            return _Node(make_expr(argument.expr, evaluate=False), None)
        try:
            value = make_value(argument.value)
        except ValueError:  # math domain error: log(0), sqrt(-1)
            raise ExpressionError(
                f"{name}({argument.value:.6g}) is undefined (not a real number)", token.pos
            ) from None
        except OverflowError:
            raise _too_large(token) from None
        return self.finish(make_expr(argument.expr), _checked(value, token), token)


def _number(token: _Token, float_decimals: bool = False) -> _Node:
    mantissa, _, exponent = token.text.lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = int(whole + fraction)
    value = float(token.text)  # safe: the tokenizer only lets digits, '.', e, sign through
    if value > _MAX_LITERAL:
        raise ExpressionError(
            f"number {_short(token.text)} is too large (limit 1e12)", token.pos
        )
    if digits == 0:
        return _Node(sympy.Integer(0), 0.0)
    if value == 0.0:
        raise ExpressionError(f"number {_short(token.text)} is too close to zero", token.pos)
    # Both bounds above keep this scale small, so 10**scale is cheap.
    scale = int(exponent or 0) - len(fraction)
    if scale >= 0:
        return _Node(sympy.Integer(digits * 10**scale), value)
    exact = sympy.Rational(digits, 10**-scale)
    if float_decimals and not exact.is_Integer:
        # the double the numerics will use anyway, so a float printed by repr reads back as itself
        return _Node(sympy.Float(value), value)
    return _Node(exact, value)


def _checked(value, token: _Token) -> float:
    where = f"at position {token.pos + 1}"
    if isinstance(value, complex):
        raise ExpressionError(f"constant is not a real number {where}", token.pos)
    if not math.isfinite(value) or abs(value) > _MAX_CONSTANT:
        raise ExpressionError(f"constant too large {where} (limit 1e300)", token.pos)
    return value


def _check_defined(expr: sympy.Expr, token: _Token) -> None:
    if expr in _UNDEFINED or any(arg in _UNDEFINED for arg in expr.args):
        raise ExpressionError(
            f"undefined value (division by zero or a pole) at position {token.pos + 1}",
            token.pos,
        )


def _add_constants(a: _Node, b: _Node, op: _Token) -> _Node:
    value = _checked(a.value + b.value, op)
    return _Node(a.expr + b.expr, value)


def _multiply_constants(a: _Node, b: _Node, op: _Token) -> _Node:
    value = _checked(a.value * b.value, op)
    if value == 0.0 and a.value != 0.0 and b.value != 0.0:
        raise _too_small(op)
    expr = a.expr * b.expr
    _check_defined(expr, op)
    return _Node(expr, value)


def _fold(nodes: list[_Node], ops: list[_Token], combine, operation) -> _Node:
    """Add or multiply nodes: fold the constants, keep the rest as typed.

    Constants are combined left to right so every partial result gets its
    float shadow checked; terms with variables go into an unevaluated
    Add/Mul (see the module docstring).
    """
    if not ops:
        return nodes[0]
    is_product = operation is sympy.Mul
    constant, variable = None, []
    for node, op in zip(nodes, ops[:1] + ops):
        if node.value is None and is_product and node.expr.is_Mul:
            # A product we built earlier: flatten it and lift its coefficient,
            # so -x*y is not (-x)*y.
            coefficient, *rest = node.expr.args
            if not coefficient.is_Number:
                variable.extend(node.expr.args)
                continue
            node = _Node(coefficient, float(coefficient))
            variable.extend(rest)
        if node.value is None:
            variable.append(node.expr)
        elif constant is None:
            constant = node
        else:
            constant = combine(constant, node, op)
    if not variable:
        return constant
    if constant is not None and is_product:
        if constant.expr == 0:
            return _Node(sympy.S.Zero, 0.0)
        if constant.expr != 1:
            # Leading coefficient: prints 2*pi*x, not x*(2*pi).
            variable[:0] = constant.expr.args if constant.expr.is_Mul else [constant.expr]
    elif constant is not None and constant.expr != 0:
        variable.append(constant.expr)
    return _Node(operation(*variable, evaluate=False), None)


def _negate(node: _Node) -> _Node:
    if node.value is not None:
        return _Node(-node.expr, -node.value)
    expr = node.expr
    if expr.is_Mul and expr.args[0].is_Number:  # -(2*x) -> -2*x, -(-x) -> x
        coefficient = -expr.args[0]
        rest = expr.args[1:] if coefficient == 1 else (coefficient, *expr.args[1:])
        return _Node(sympy.Mul(*rest, evaluate=False), None)
    return _Node(sympy.Mul(sympy.S.NegativeOne, expr, evaluate=False), None)


def _reciprocal(node: _Node, token: _Token) -> _Node:
    if node.value is None:
        return _Node(sympy.Pow(node.expr, sympy.S.NegativeOne, evaluate=False), None)
    value = _checked(1.0 / node.value, token)
    expr = sympy.Pow(node.expr, -1)
    _check_defined(expr, token)  # 1/cos(pi/2): exact zero, shadow 6e-17
    return _Node(expr, value)


def _too_large(token: _Token) -> ExpressionError:
    return ExpressionError(f"constant too large at position {token.pos + 1} (limit 1e300)", token.pos)


def _float_power(base: float, exponent: _Node, op: _Token) -> float:
    # An exact integer exponent keeps (-2)**3 real even if its shadow is 2.9999999.
    power = int(exponent.expr) if exponent.expr.is_Integer else exponent.value
    try:
        value = base**power
    except ZeroDivisionError:
        raise ExpressionError(
            f"division by zero (0 to a negative power) at position {op.pos + 1}", op.pos
        ) from None
    except OverflowError:
        raise _too_large(op) from None
    value = _checked(value, op)
    if value == 0.0 and base != 0.0:
        raise _too_small(op)
    return value


def _too_small(token: _Token) -> ExpressionError:
    # Float underflow: the exact value is not zero, but too tiny to be sensible.
    return ExpressionError(f"constant too close to zero at position {token.pos + 1}", token.pos)


def _check_exact_size(base: sympy.Expr, exponent: _Node, op: _Token) -> None:
    """Refuse powers that would make sympy crunch huge exact numbers.

    The float shadow bounds magnitudes, not digits: (1.000000001)**64 is
    harmless as a float but has a ~580-digit numerator and denominator, and
    each further **64 multiplies that.  Non-constant bases are built
    unevaluated here, but sympy expands (c*x)**64 into c**64*x**64 as soon
    as the caller differentiates or simplifies, so they are checked too.
    """
    rationals = base.atoms(sympy.Rational)
    if not exponent.expr.is_Integer:
        if any(max(r.p.bit_length(), r.q.bit_length()) > _MAX_ROOT_BITS for r in rationals):
            raise ExpressionError(
                "numbers under roots or fractional powers must have fewer digits", op.pos
            )
    bits = sum(r.p.bit_length() + r.q.bit_length() for r in rationals)
    if bits * max(1.0, abs(exponent.value)) > _MAX_POWER_BITS:
        raise ExpressionError(f"numbers grow too large at position {op.pos + 1}", op.pos)



# ------------------------------------------------------------ differentiation


def differentiate(expr: sympy.Expr, symbol: sympy.Symbol) -> sympy.Expr:
    """d expr / d symbol, finite wherever expr is smooth.

    sympy differentiates b**n as b**n * n / b * b'. For the unevaluated powers this parser builds that
    cancels only when b**n and 1/b share a base: 1/b of a product or a power is distributed ((x/2)**-1 is
    2/x), so (x/2)**2 becomes 2*(x**2/4)/x, 0/0 at x = 0. Powers of products and of powers are therefore
    differentiated here as n * b**(n - 1) * b'; every other subexpression goes to sympy as before (so the
    gradients of U that already were right are the same expressions, bit for bit).
    """
    return _Differentiator(symbol).d(expr)


def _fragile_power(e: sympy.Expr) -> bool:
    return e.is_Pow and (e.base.is_Mul or e.base.is_Pow) and not e.exp.free_symbols


class _Differentiator:
    def __init__(self, symbol: sympy.Symbol):
        self.s = symbol
        self.memo: dict = {}

    def d(self, e: sympy.Expr) -> sympy.Expr:
        if e in self.memo:
            return self.memo[e]
        out = self._d(e)
        self.memo[e] = out
        return out

    def _d(self, e: sympy.Expr) -> sympy.Expr:
        s = self.s
        if not e.has(s):
            return sympy.S.Zero
        if not any(_fragile_power(a) for a in sympy.preorder_traversal(e)):
            return sympy.diff(e, s)
        if e.is_Add:
            return sympy.Add(*(self.d(a) for a in e.args))
        if e.is_Mul:
            args = e.args
            return sympy.Add(*(sympy.Mul(*args[:i], self.d(a), *args[i + 1:])
                               for i, a in enumerate(args) if a.has(s)))
        if e.is_Pow and not e.exp.free_symbols:
            n = e.exp
            lower = sympy.S.One if n == 1 else e.base if n == 2 else sympy.Pow(e.base, n - 1, evaluate=False)
            return sympy.Mul(n, lower, self.d(e.base))
        if isinstance(e, sympy.Function) and len(e.args) == 1:
            return sympy.Mul(e.fdiff(1), self.d(e.args[0]))
        return sympy.diff(e, s)
