"""Discounts (percentage, fixed, buy-x-get-y) and redeemable discount codes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from .cart import Cart
from .errors import InvalidDiscountError
from .money import ZERO, round_cents, to_money

HUNDRED = Decimal(100)


class Discount:
    """Base class: computes the amount taken off a cart."""

    kind = "discount"

    def amount_for(self, cart: Cart) -> Decimal:
        """Amount to deduct from ``cart`` (never negative)."""
        raise NotImplementedError


class PercentageDiscount(Discount):
    """``percent`` off the whole subtotal."""

    kind = "percentage"

    def __init__(self, percent: Decimal) -> None:
        percent = Decimal(percent)
        if percent <= 0 or percent > HUNDRED:
            raise ValueError("percentage must be greater than 0 and at most 100")
        self.percent = percent

    def amount_for(self, cart: Cart) -> Decimal:
        return round_cents(cart.subtotal * self.percent / HUNDRED)


class FixedDiscount(Discount):
    """A fixed amount off, capped at the subtotal."""

    kind = "fixed"

    def __init__(self, amount: Decimal) -> None:
        amount = to_money(amount)
        if amount <= 0:
            raise ValueError("fixed discount must be positive")
        self.amount = amount

    def amount_for(self, cart: Cart) -> Decimal:
        return min(self.amount, cart.subtotal)


class BuyXGetYDiscount(Discount):
    """For every ``buy`` + ``get`` units of ``sku``, ``get`` units are free."""

    kind = "buy_x_get_y"

    def __init__(self, sku: str, buy: int, get: int) -> None:
        if buy < 1 or get < 1:
            raise ValueError("buy and get must both be at least 1")
        self.sku = sku
        self.buy = buy
        self.get = get

    def amount_for(self, cart: Cart) -> Decimal:
        quantity = cart.quantity_of(self.sku)
        if quantity == 0:
            return ZERO
        line = next(line for line in cart.lines if line.sku == self.sku)
        free_units = (quantity // (self.buy + self.get)) * self.get
        return round_cents(line.product.price * free_units)


def discount_from_spec(spec: dict) -> Discount:
    """Build a Discount from ``{"kind": ..., "value"/"sku"/"buy"/"get": ...}``."""
    kind = spec.get("kind")
    if kind == "percentage":
        return PercentageDiscount(Decimal(str(spec["value"])))
    if kind == "fixed":
        return FixedDiscount(to_money(spec["value"]))
    if kind == "buy_x_get_y":
        return BuyXGetYDiscount(spec["sku"], int(spec["buy"]), int(spec["get"]))
    raise ValueError(f"unknown discount kind: {kind}")


@dataclass
class DiscountCode:
    """A code customers type in, with validity window and minimum order."""

    code: str
    discount: Discount
    valid_from: date | None = None
    expires: date | None = None
    min_total: Decimal = ZERO

    def __post_init__(self) -> None:
        self.code = self.code.strip().upper()
        if not self.code:
            raise ValueError("discount code must not be empty")
        if self.valid_from and self.expires and self.expires < self.valid_from:
            raise ValueError("discount code expires before it becomes valid")

    def is_valid_on(self, today: date) -> bool:
        """True if ``today`` lies in the validity window (both ends inclusive)."""
        if self.valid_from is not None and today < self.valid_from:
            return False
        return self.expires is None or today <= self.expires

    def check(self, cart: Cart, today: date) -> None:
        """Raise InvalidDiscountError if the code cannot be used for ``cart``."""
        if self.valid_from is not None and today < self.valid_from:
            raise InvalidDiscountError(self.code, "not yet valid")
        if self.expires is not None and today > self.expires:
            raise InvalidDiscountError(self.code, "expired")
        if cart.subtotal < self.min_total:
            raise InvalidDiscountError(self.code, "below minimum")


class DiscountBook:
    """All discount codes known to the shop."""

    def __init__(self, codes: list[DiscountCode] | None = None) -> None:
        self._codes: dict[str, DiscountCode] = {}
        for code in codes or ():
            self.register(code)

    def register(self, code: DiscountCode) -> None:
        """Register a code; codes are case-insensitive and unique."""
        if code.code in self._codes:
            raise ValueError(f"duplicate discount code: {code.code}")
        self._codes[code.code] = code

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and code.strip().upper() in self._codes

    def __len__(self) -> int:
        return len(self._codes)

    def redeem(self, code: str, cart: Cart, today: date) -> Decimal:
        """Validate ``code`` for ``cart`` on ``today`` and return the amount off."""
        key = code.strip().upper()
        entry = self._codes.get(key)
        if entry is None:
            raise InvalidDiscountError(key, "unknown")
        entry.check(cart, today)
        return min(entry.discount.amount_for(cart), cart.subtotal)

    @staticmethod
    def parse_entry(entry: dict) -> DiscountCode:
        """Turn one JSON entry into a DiscountCode."""
        def _date(key: str) -> date | None:
            value = entry.get(key)
            return date.fromisoformat(value) if value else None

        return DiscountCode(
            code=entry["code"],
            discount=discount_from_spec(entry),
            valid_from=_date("valid_from"),
            expires=_date("expires"),
            min_total=to_money(entry.get("min_total", "0")),
        )

    @classmethod
    def from_list(cls, entries: list[dict]) -> "DiscountBook":
        """Build a book from a list of JSON entries."""
        return cls([cls.parse_entry(entry) for entry in entries])

    @classmethod
    def from_json(cls, text: str) -> "DiscountBook":
        """Build a book from a JSON array document."""
        data = json.loads(text)
        if not isinstance(data, list):
            raise ValueError("discount codes must be a JSON array")
        return cls.from_list(data)
