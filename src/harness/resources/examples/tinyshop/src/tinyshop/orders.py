"""Quotes, checkout and the order life cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from .cart import Cart
from .catalog import Catalog
from .discounts import DiscountBook
from .errors import CartError, InvalidTransitionError, PaymentError
from .inventory import Inventory
from .money import ZERO, format_money, round_cents
from .tax import TaxTable

PLACED = "placed"
PAID = "paid"
SHIPPED = "shipped"
CANCELLED = "cancelled"

TRANSITIONS: dict[str, frozenset[str]] = {
    PLACED: frozenset({PAID, CANCELLED}),
    PAID: frozenset({SHIPPED, CANCELLED}),
    SHIPPED: frozenset(),
    CANCELLED: frozenset(),
}

FREE_SHIPPING_THRESHOLD = Decimal("50.00")
FLAT_SHIPPING = Decimal("4.95")


def shipping_for(net_total: Decimal) -> Decimal:
    """Flat shipping below the threshold, free from the threshold on."""
    if net_total <= 0:
        return ZERO
    if net_total >= FREE_SHIPPING_THRESHOLD:
        return ZERO
    return FLAT_SHIPPING


@dataclass(frozen=True)
class Quote:
    """Price breakdown of a cart."""

    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    shipping: Decimal
    region: str
    code: str | None = None

    @property
    def total(self) -> Decimal:
        """Subtotal minus discount plus tax and shipping."""
        return round_cents(self.subtotal - self.discount + self.tax + self.shipping)

    def to_dict(self) -> dict:
        """Serialise with amounts as two-decimal strings."""
        return {
            "region": self.region,
            "code": self.code,
            "subtotal": format_money(self.subtotal),
            "discount": format_money(self.discount),
            "tax": format_money(self.tax),
            "shipping": format_money(self.shipping),
            "total": format_money(self.total),
        }


@dataclass
class Order:
    """A placed order and its status history."""

    order_id: str
    lines: tuple[tuple[str, int], ...]
    quote: Quote
    status: str = PLACED
    history: list[str] = field(default_factory=lambda: [PLACED])

    @property
    def total(self) -> Decimal:
        """Amount the customer has to pay."""
        return self.quote.total

    def can_move_to(self, status: str) -> bool:
        """True if ``status`` is a legal next status."""
        return status in TRANSITIONS[self.status]

    def _move(self, status: str, action: str) -> None:
        if not self.can_move_to(status):
            raise InvalidTransitionError(f"cannot {action} a {self.status} order")
        self.status = status
        self.history.append(status)

    def pay(self, amount: Decimal) -> None:
        """Record a payment; it must match the total exactly."""
        if not self.can_move_to(PAID):
            raise InvalidTransitionError(f"cannot pay a {self.status} order")
        if round_cents(amount) != self.total:
            raise PaymentError(
                f"payment of {format_money(amount)} does not match total {format_money(self.total)}"
            )
        self._move(PAID, "pay")

    def ship(self) -> None:
        """Mark a paid order as shipped."""
        self._move(SHIPPED, "ship")

    def cancel(self) -> None:
        """Cancel an order that has not shipped yet."""
        self._move(CANCELLED, "cancel")

    def to_dict(self) -> dict:
        """Serialise the order."""
        data = {"order_id": self.order_id, "status": self.status}
        data["lines"] = [{"sku": sku, "quantity": qty} for sku, qty in self.lines]
        data.update(self.quote.to_dict())
        return data


class OrderService:
    """Prices carts, places orders and drives their life cycle."""

    def __init__(
        self,
        catalog: Catalog,
        inventory: Inventory,
        tax_table: TaxTable,
        discounts: DiscountBook | None = None,
        default_region: str = "EU-DE",
        id_prefix: str = "ORD",
    ) -> None:
        self.catalog = catalog
        self.inventory = inventory
        self.tax_table = tax_table
        self.discounts = discounts if discounts is not None else DiscountBook()
        self.default_region = default_region
        self.id_prefix = id_prefix
        self._orders: dict[str, Order] = {}
        self._next_number = 1

    def quote(
        self,
        cart: Cart,
        region: str | None = None,
        code: str | None = None,
        today: date | None = None,
    ) -> Quote:
        """Price ``cart`` without reserving stock."""
        if cart.is_empty:
            raise CartError("cart is empty")
        region = region or self.default_region
        discount = ZERO
        if code:
            if today is None:
                raise ValueError("a date is required to redeem a discount code")
            discount = self.discounts.redeem(code, cart, today)
        tax = self.tax_table.tax_for_cart(cart, region, discount)
        shipping = shipping_for(cart.subtotal - discount)
        return Quote(cart.subtotal, discount, tax, shipping, region, code.upper() if code else None)

    def checkout(
        self,
        cart: Cart,
        region: str | None = None,
        code: str | None = None,
        today: date | None = None,
    ) -> Order:
        """Quote the cart, reserve its stock and place an order."""
        quote = self.quote(cart, region, code, today)
        items = tuple((line.sku, line.quantity) for line in cart.lines)
        self.inventory.reserve_all(items)
        order_id = f"{self.id_prefix}-{self._next_number:04d}"
        self._next_number += 1
        order = Order(order_id, items, quote)
        self._orders[order_id] = order
        return order

    def get(self, order_id: str) -> Order:
        """The order with ``order_id``."""
        try:
            return self._orders[order_id]
        except KeyError:
            raise LookupError(f"unknown order: {order_id}") from None

    @property
    def orders(self) -> list[Order]:
        """All orders in placement order."""
        return list(self._orders.values())

    def pay(self, order_id: str, amount: Decimal) -> Order:
        """Pay an order."""
        order = self.get(order_id)
        order.pay(amount)
        return order

    def ship(self, order_id: str) -> Order:
        """Ship an order; its reserved stock leaves the warehouse."""
        order = self.get(order_id)
        order.ship()
        for sku, quantity in order.lines:
            self.inventory.commit(sku, quantity)
        return order

    def cancel(self, order_id: str) -> Order:
        """Cancel an order and return its reserved stock."""
        order = self.get(order_id)
        order.cancel()
        for sku, quantity in order.lines:
            self.inventory.release(sku, quantity)
        return order
