#!/usr/bin/env python3
"""Reference values for test_expr_decimal.c's large-argument sin/cos/tan
(magnitudes 1E+30 up to the Decimal128 maximum): an independent computation
with Python's decimal module -- pi from Machin's formula at enough digits to
reduce the argument exactly, Taylor series at 120 digits, rounded once to 34
digits half to even.  Prints C initialisers for trig_big_vectors[].
Run: python3 tests/unit/gen_decimal_trig_big.py
"""
from decimal import Decimal, getcontext, localcontext, ROUND_HALF_EVEN

ARGS = [
    "1E+30", "-1E+30", "1000000000000000000000000000000.5",
    "12345678901234567890123456789012.34", "-9.87654321098765432109876543210987E+33",
    "1E+34", "7E+100", "-3.141592653589793238462643383279503E+250",
    "1.234567890123456789012345678901234E+1000", "5E+4000",
    "-2.718281828459045235360287471352662E+5000", "1E+6111",
    "9.999999999999999999999999999999999E+6144", "4.2E+6144",
]


def atan_inv(n):
    x = Decimal(1) / n
    x2 = x * x
    term, total, k, sign = x, x, 1, 1
    eps = Decimal(10) ** -(getcontext().prec + 5)
    while True:
        term *= x2
        k += 2
        sign = -sign
        t = term / k
        if t < eps:
            break
        total += sign * t
    return total


def taylor(r, odd):
    x2 = -r * r
    term = r if odd else Decimal(1)
    total, n = term, (2 if odd else 1)
    while True:
        term = term * x2 / (n * (n + 1))
        n += 2
        if term == 0 or abs(term) < Decimal(10) ** -(getcontext().prec + 5):
            break
        total += term
    return total


def ref(op, a):
    x = Decimal(a)
    with localcontext() as ctx:
        ctx.prec = max(x.adjusted(), 0) + 200
        pi = 16 * atan_inv(5) - 4 * atan_inv(239)
        r = x.remainder_near(2 * pi)
        ctx.prec = 120
        r = +r
        s, c = taylor(r, True), taylor(r, False)
        v = s if op == "sin" else c if op == "cos" else s / c
    with localcontext() as ctx:
        ctx.prec = 34
        ctx.rounding = ROUND_HALF_EVEN
        return str(+v)


for a in ARGS:
    for op in ("sin", "cos", "tan"):
        print('\t{"%s", "%s", "%s"},' % (op, a, ref(op, a)))
