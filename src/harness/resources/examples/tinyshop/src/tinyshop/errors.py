"""Exception hierarchy shared by all tinyshop modules."""

from __future__ import annotations


class TinyshopError(Exception):
    """Base class of every domain error raised by tinyshop."""


class UnknownProductError(TinyshopError, LookupError):
    """Raised when a SKU is not present in the catalog."""

    def __init__(self, sku: str) -> None:
        super().__init__(f"unknown product: {sku}")
        self.sku = sku


class CartError(TinyshopError, ValueError):
    """Raised when a cart operation violates a cart rule."""


class InvalidDiscountError(TinyshopError):
    """Raised when a discount code cannot be redeemed."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"discount code {code} rejected: {reason}")
        self.code = code
        self.reason = reason


class OutOfStockError(TinyshopError):
    """Raised when the warehouse cannot satisfy a reservation."""

    def __init__(self, sku: str, requested: int, available: int) -> None:
        super().__init__(
            f"out of stock: {sku} (requested {requested}, available {available})"
        )
        self.sku = sku
        self.requested = requested
        self.available = available


class UnknownRegionError(TinyshopError, ValueError):
    """Raised when no tax rates are known for a region."""

    def __init__(self, region: str) -> None:
        super().__init__(f"unknown region: {region}")
        self.region = region


class InvalidTransitionError(TinyshopError):
    """Raised when an order cannot move to the requested status."""


class PaymentError(TinyshopError):
    """Raised when a payment does not match the order."""


class ConfigError(TinyshopError):
    """Raised when the application configuration is invalid."""
