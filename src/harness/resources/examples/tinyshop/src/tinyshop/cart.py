"""Shopping cart with line items, quantity limits and subtotals."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .catalog import Product
from .errors import CartError
from .money import ZERO, format_money, round_cents

MAX_QUANTITY_PER_LINE = 10
MAX_LINES = 20


@dataclass
class LineItem:
    """One product and how many of it are in the cart."""

    product: Product
    quantity: int

    @property
    def sku(self) -> str:
        """SKU of the product on this line."""
        return self.product.sku

    @property
    def total(self) -> Decimal:
        """Unit price times quantity, rounded to cents."""
        return round_cents(self.product.price * self.quantity)

    def to_dict(self) -> dict:
        """Serialise the line to plain JSON types."""
        return {
            "sku": self.sku,
            "name": self.product.name,
            "quantity": self.quantity,
            "unit_price": format_money(self.product.price),
            "total": format_money(self.total),
        }


class Cart:
    """A customer's cart. Lines keep the order in which products were added."""

    def __init__(self, max_quantity: int = MAX_QUANTITY_PER_LINE, max_lines: int = MAX_LINES) -> None:
        if max_quantity < 1 or max_lines < 1:
            raise ValueError("cart limits must be positive")
        self.max_quantity = max_quantity
        self.max_lines = max_lines
        self._lines: dict[str, LineItem] = {}

    @staticmethod
    def validate_quantity(quantity: int, limit: int) -> None:
        """Raise CartError unless ``1 <= quantity <= limit`` (ints only)."""
        if isinstance(quantity, bool) or not isinstance(quantity, int):
            raise CartError("quantity must be a whole number")
        if quantity < 1 or quantity > limit:
            raise CartError(f"quantity must be between 1 and {limit}")

    def add(self, product: Product, quantity: int = 1) -> LineItem:
        """Add ``quantity`` of ``product``; merges with an existing line."""
        self.validate_quantity(quantity, self.max_quantity)
        line = self._lines.get(product.sku)
        if line is None:
            if len(self._lines) >= self.max_lines:
                raise CartError(f"a cart holds at most {self.max_lines} lines")
            line = LineItem(product, quantity)
            self._lines[product.sku] = line
            return line
        new_quantity = line.quantity + quantity
        if new_quantity > self.max_quantity:
            raise CartError(f"at most {self.max_quantity} of {product.sku} per cart")
        line.quantity = new_quantity
        return line

    def remove(self, sku: str) -> LineItem:
        """Remove the line for ``sku`` and return it."""
        if sku not in self._lines:
            raise CartError(f"{sku} is not in the cart")
        return self._lines.pop(sku)

    def update_quantity(self, sku: str, quantity: int) -> LineItem | None:
        """Set the quantity of a line; 0 removes the line (returns None)."""
        if sku not in self._lines:
            raise CartError(f"{sku} is not in the cart")
        if quantity == 0:
            self._lines.pop(sku)
            return None
        self.validate_quantity(quantity, self.max_quantity)
        line = self._lines[sku]
        line.quantity = quantity
        return line

    def quantity_of(self, sku: str) -> int:
        """How many of ``sku`` are in the cart (0 if none)."""
        line = self._lines.get(sku)
        return line.quantity if line is not None else 0

    def clear(self) -> None:
        """Remove every line."""
        self._lines.clear()

    @property
    def lines(self) -> list[LineItem]:
        """The line items in insertion order."""
        return list(self._lines.values())

    @property
    def subtotal(self) -> Decimal:
        """Sum of all line totals."""
        return sum((line.total for line in self._lines.values()), ZERO)

    @property
    def item_count(self) -> int:
        """Total number of units over all lines."""
        return sum(line.quantity for line in self._lines.values())

    @property
    def is_empty(self) -> bool:
        """True when the cart has no lines."""
        return not self._lines

    def subtotal_for(self, tax_class: str) -> Decimal:
        """Sum of the line totals whose product has ``tax_class``."""
        return sum(
            (line.total for line in self._lines.values() if line.product.tax_class == tax_class),
            ZERO,
        )

    def summary(self) -> dict:
        """Compact view: number of lines, units and the subtotal."""
        return {
            "lines": len(self._lines),
            "items": self.item_count,
            "subtotal": format_money(self.subtotal),
        }

    def to_dict(self) -> dict:
        """Full view including every line."""
        data = self.summary()
        data["line_items"] = [line.to_dict() for line in self._lines.values()]
        return data
