"""Warehouse stock with reservations."""

from __future__ import annotations

from typing import Iterable, Mapping

from .errors import OutOfStockError

LOW_STOCK_THRESHOLD = 5


class Inventory:
    """Available and reserved units per SKU."""

    def __init__(self, stock: Mapping[str, int] | None = None) -> None:
        self._available: dict[str, int] = {}
        self._reserved: dict[str, int] = {}
        for sku, quantity in (stock or {}).items():
            self.set_stock(sku, quantity)

    def set_stock(self, sku: str, quantity: int) -> None:
        """Set the available units of ``sku``."""
        if quantity < 0:
            raise ValueError(f"stock of {sku} must not be negative")
        self._available[sku] = quantity

    def available(self, sku: str) -> int:
        """Units of ``sku`` that can still be reserved."""
        return self._available.get(sku, 0)

    def reserved(self, sku: str) -> int:
        """Units of ``sku`` currently reserved for orders."""
        return self._reserved.get(sku, 0)

    def reserve(self, sku: str, quantity: int) -> None:
        """Reserve ``quantity`` units or raise OutOfStockError."""
        self.reserve_all({sku: quantity})

    def reserve_all(self, items: Mapping[str, int] | Iterable[tuple[str, int]]) -> None:
        """Reserve several SKUs at once: either all succeed or none does."""
        pairs = items.items() if isinstance(items, Mapping) else items
        wanted: dict[str, int] = {}
        for sku, quantity in pairs:
            if quantity <= 0:
                raise ValueError("reservation quantity must be positive")
            wanted[sku] = wanted.get(sku, 0) + quantity
        for sku, quantity in wanted.items():
            if self.available(sku) < quantity:
                raise OutOfStockError(sku, quantity, self.available(sku))
        for sku, quantity in wanted.items():
            self._available[sku] = self.available(sku) - quantity
            self._reserved[sku] = self.reserved(sku) + quantity

    def release(self, sku: str, quantity: int) -> None:
        """Give reserved units back to available stock."""
        if quantity <= 0:
            raise ValueError("release quantity must be positive")
        if quantity > self.reserved(sku):
            raise ValueError(
                f"cannot release {quantity} of {sku}: only {self.reserved(sku)} reserved"
            )
        self._reserved[sku] -= quantity
        self._available[sku] = self.available(sku) + quantity

    def commit(self, sku: str, quantity: int) -> None:
        """Reserved units left the warehouse (the order shipped)."""
        if quantity > self.reserved(sku):
            raise ValueError(f"cannot ship {quantity} of {sku}: only {self.reserved(sku)} reserved")
        self._reserved[sku] -= quantity

    def restock(self, sku: str, quantity: int) -> None:
        """Add delivered units to available stock."""
        if quantity <= 0:
            raise ValueError("restock quantity must be positive")
        self._available[sku] = self.available(sku) + quantity

    def low_stock(self, threshold: int = LOW_STOCK_THRESHOLD) -> list[str]:
        """SKUs with at most ``threshold`` units available, sorted."""
        return sorted(sku for sku, qty in self._available.items() if qty <= threshold)

    @property
    def total_units(self) -> int:
        """All available units across SKUs."""
        return sum(self._available.values())

    def snapshot(self) -> dict[str, int]:
        """Copy of the available stock."""
        return dict(sorted(self._available.items()))
