"""Money helpers: every amount is a ``Decimal`` rounded half-up to cents."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


def to_money(value: object) -> Decimal:
    """Convert ``value`` (str, int, Decimal) to a Decimal rounded to cents.

    Floats are rejected on purpose: they cannot represent prices exactly.
    """
    if isinstance(value, float):
        raise TypeError("use str or Decimal for money, not float")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a money amount: {value!r}") from None
    if not amount.is_finite():
        raise ValueError(f"not a money amount: {value!r}")
    return round_cents(amount)


def round_cents(amount: Decimal) -> Decimal:
    """Round ``amount`` half-up to two decimal places (0.125 -> 0.13)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def format_money(amount: Decimal) -> str:
    """Render an amount with exactly two decimals, e.g. ``'4.50'``."""
    return f"{round_cents(amount):.2f}"
