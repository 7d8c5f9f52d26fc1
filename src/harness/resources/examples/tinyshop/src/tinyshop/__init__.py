"""tinyshop: a tiny order-pricing library.

Catalog -> Cart -> (discount codes, tax, shipping) -> Order, with an
application container (:func:`tinyshop.app.build_app`), an in-process
HTTP-like API (:mod:`tinyshop.api`) and a CLI (:mod:`tinyshop.cli`).
"""

from .app import App, build_app
from .cart import Cart, LineItem
from .catalog import Catalog, Product
from .discounts import (
    BuyXGetYDiscount,
    DiscountBook,
    DiscountCode,
    FixedDiscount,
    PercentageDiscount,
)
from .errors import (
    CartError,
    ConfigError,
    InvalidDiscountError,
    InvalidTransitionError,
    OutOfStockError,
    PaymentError,
    TinyshopError,
    UnknownProductError,
    UnknownRegionError,
)
from .inventory import Inventory
from .orders import Order, OrderService, Quote
from .tax import TaxTable

__version__ = "0.1.0"

__all__ = [
    "App", "build_app", "Cart", "LineItem", "Catalog", "Product",
    "BuyXGetYDiscount", "DiscountBook", "DiscountCode", "FixedDiscount",
    "PercentageDiscount", "CartError", "ConfigError", "InvalidDiscountError",
    "InvalidTransitionError", "OutOfStockError", "PaymentError", "TinyshopError",
    "UnknownProductError", "UnknownRegionError", "Inventory", "Order",
    "OrderService", "Quote", "TaxTable",
]
