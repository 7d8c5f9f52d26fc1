"""Builders that turn Gherkin tables and fixtures into tinyshop objects."""

from decimal import Decimal

from helpers import fixture_path
from tinyshop.app import build_app
from tinyshop.cart import Cart
from tinyshop.catalog import Catalog, Product

STANDARD_CONFIG = "shop_config.json"


def product_from_row(row):
    """Product from a table row with sku, name, price and optional tax_class."""
    headings = row.headings
    return Product(
        sku=row["sku"],
        name=row["name"] if "name" in headings else row["sku"],
        price=Decimal(row["price"]),
        tax_class=row["tax_class"] if "tax_class" in headings else "standard",
    )


def products_from_table(table):
    """{sku: Product} for every row of ``table``."""
    return {row["sku"]: product_from_row(row) for row in table}


def cart_from_table(table, known_products=None):
    """Cart from a table with sku and quantity columns.

    Rows carrying a price describe the product inline; otherwise the SKU is
    taken from ``known_products`` (e.g. defined in a Background).
    """
    cart = Cart()
    for row in table:
        if "price" in row.headings:
            product = product_from_row(row)
        else:
            assert known_products and row["sku"] in known_products, f"unknown product {row['sku']}"
            product = known_products[row["sku"]]
        cart.add(product, int(row["quantity"]))
    return cart


def stock_from_table(table):
    """{sku: quantity} from a table with sku and quantity columns."""
    return {row["sku"]: int(row["quantity"]) for row in table}


def standard_catalog():
    """The catalog fixture, with tax classes, categories and tags."""
    return Catalog.load_json(fixture_path("catalog.json"))


def standard_config_path():
    """Path of the standard shop configuration (catalog, tax rates, stock, codes)."""
    return fixture_path(STANDARD_CONFIG)


def standard_app():
    """An App wired from the standard configuration."""
    return build_app(standard_config_path())
