"""Application wiring: builds catalog, inventory, tax and order service."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .cart import Cart, LineItem
from .catalog import Catalog, Product
from .discounts import DiscountBook
from .errors import ConfigError
from .inventory import Inventory
from .orders import OrderService
from .tax import TaxTable

DEFAULT_CONFIG: dict = {
    "region": "EU-DE",
    "products": [
        {"sku": "TEA-001", "name": "Sencha Green Tea", "price": "4.50", "tax_class": "reduced"},
        {"sku": "MUG-002", "name": "Stoneware Mug", "price": "12.00"},
    ],
    "stock": {"TEA-001": 10, "MUG-002": 10},
    "discount_codes": [],
}


@dataclass
class App:
    """The wired services of one shop."""

    catalog: Catalog
    inventory: Inventory
    tax_table: TaxTable
    discounts: DiscountBook
    orders: OrderService
    region: str

    def new_cart(self) -> Cart:
        """A fresh, empty cart."""
        return Cart()

    def add_to_cart(self, cart: Cart, sku: str, quantity: int = 1) -> LineItem:
        """Look ``sku`` up in the catalog and add it to ``cart``."""
        return cart.add(self.catalog.lookup(sku), quantity)

    def stock_of(self, sku: str) -> int:
        """Units of ``sku`` available in the warehouse."""
        return self.inventory.available(sku)


def load_config(path: str | Path) -> dict:
    """Read a JSON config; relative file references are resolved against it."""
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    if not isinstance(config, dict):
        raise ConfigError("configuration must be a JSON object")
    for key in ("catalog", "tax_rates"):
        value = config.get(key)
        if isinstance(value, str) and not Path(value).is_absolute():
            config[key] = str(path.parent / value)
    return config


def _build_catalog(config: dict) -> Catalog:
    source = config.get("catalog")
    if source is not None:
        if str(source).endswith(".csv"):
            return Catalog.load_csv(source)
        return Catalog.load_json(source)
    if "products" in config:
        return Catalog(Product.from_dict(item) for item in config["products"])
    raise ConfigError("configuration must define a catalog or products")


def build_app(config_path: str | Path | None = None, config: dict | None = None) -> App:
    """Wire an App from a config file, a config dict, or the defaults."""
    if config_path is not None:
        config = load_config(config_path)
    elif config is None:
        config = DEFAULT_CONFIG
    catalog = _build_catalog(config)
    rates = config.get("tax_rates")
    if rates is None:
        tax_table = TaxTable.default()
    elif isinstance(rates, dict):
        tax_table = TaxTable(rates)
    else:
        tax_table = TaxTable.load_json(rates)
    region = config.get("region", "EU-DE")
    if region not in tax_table.regions:
        raise ConfigError(f"unknown region: {region}")
    stock = config.get("stock", {})
    for sku in stock:
        if sku not in catalog:
            raise ConfigError(f"stock for unknown product: {sku}")
    inventory = Inventory(stock)
    discounts = DiscountBook.from_list(config.get("discount_codes", []))
    orders = OrderService(catalog, inventory, tax_table, discounts, default_region=region)
    return App(catalog, inventory, tax_table, discounts, orders, region)
