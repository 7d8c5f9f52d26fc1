"""Product catalog: products, lookup, search and loading from JSON or CSV."""

from __future__ import annotations

import csv
import dataclasses
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Iterable, Iterator

from .errors import UnknownProductError
from .money import format_money, to_money

TAX_CLASSES = ("standard", "reduced", "zero")


@dataclass(frozen=True)
class Product:
    """A sellable item. Prices are net (tax is added at checkout)."""

    sku: str
    name: str
    price: Decimal
    tax_class: str = "standard"
    category: str = "general"
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.sku.strip():
            raise ValueError("product sku must not be empty")
        if self.price < 0:
            raise ValueError(f"price of {self.sku} must not be negative")
        if self.tax_class not in TAX_CLASSES:
            raise ValueError(f"unknown tax class: {self.tax_class}")

    @classmethod
    def from_dict(cls, data: dict) -> "Product":
        """Build a product from a JSON-like mapping (price given as a string)."""
        tags = data.get("tags") or ()
        if isinstance(tags, str):
            tags = [t for t in tags.split(";") if t]
        return cls(
            sku=str(data["sku"]).strip(),
            name=str(data["name"]).strip(),
            price=to_money(data["price"]),
            tax_class=data.get("tax_class") or "standard",
            category=data.get("category") or "general",
            tags=tuple(t.strip() for t in tags),
        )

    def to_dict(self) -> dict:
        """Serialise the product to plain JSON types."""
        return {
            "sku": self.sku,
            "name": self.name,
            "price": format_money(self.price),
            "tax_class": self.tax_class,
            "category": self.category,
            "tags": list(self.tags),
        }

    def matches(self, query: str) -> bool:
        """True if ``query`` occurs in the name or SKU, or equals a tag."""
        needle = query.strip().lower()
        if not needle:
            return True
        if needle in self.name.lower() or needle in self.sku.lower():
            return True
        return any(tag.lower() == needle for tag in self.tags)


class Catalog:
    """An in-memory set of products indexed by SKU."""

    def __init__(self, products: Iterable[Product] = ()) -> None:
        self._products: dict[str, Product] = {}
        for product in products:
            self.add(product)

    def add(self, product: Product, replace: bool = False) -> None:
        """Add a product; a duplicate SKU is an error unless ``replace``."""
        if product.sku in self._products and not replace:
            raise ValueError(f"duplicate sku: {product.sku}")
        self._products[product.sku] = product

    def lookup(self, sku: str) -> Product:
        """Return the product for ``sku`` or raise UnknownProductError."""
        try:
            return self._products[sku]
        except KeyError:
            raise UnknownProductError(sku) from None

    def get(self, sku: str) -> Product | None:
        """Return the product for ``sku`` or None."""
        return self._products.get(sku)

    def __contains__(self, sku: object) -> bool:
        return sku in self._products

    def __len__(self) -> int:
        return len(self._products)

    def __iter__(self) -> Iterator[Product]:
        return iter(sorted(self._products.values(), key=lambda p: p.sku))

    @property
    def skus(self) -> list[str]:
        """All SKUs, sorted."""
        return sorted(self._products)

    @property
    def categories(self) -> list[str]:
        """Distinct categories, sorted."""
        return sorted({p.category for p in self._products.values()})

    def search(
        self,
        query: str = "",
        category: str | None = None,
        max_price: Decimal | None = None,
    ) -> list[Product]:
        """Products matching ``query``, optionally filtered by category and
        by a maximum price (inclusive). Results are sorted by price, then SKU.
        """
        found = []
        for product in self._products.values():
            if category is not None and product.category != category:
                continue
            if max_price is not None and product.price > max_price:
                continue
            if product.matches(query):
                found.append(product)
        return sorted(found, key=lambda p: (p.price, p.sku))

    def apply_price_list(self, path: str | Path) -> int:
        """Update prices from a CSV with ``sku,price`` columns.

        Returns the number of products whose price actually changed.
        Unknown SKUs raise UnknownProductError and nothing is updated.
        """
        with open(path, newline="", encoding="utf-8") as handle:
            rows = [(row["sku"].strip(), to_money(row["price"])) for row in csv.DictReader(handle)]
        for sku, _ in rows:
            self.lookup(sku)
        changed = 0
        for sku, price in rows:
            current = self._products[sku]
            if current.price != price:
                self._products[sku] = dataclasses.replace(current, price=price)
                changed += 1
        return changed

    @classmethod
    def load_json(cls, path: str | Path) -> "Catalog":
        """Load a catalog from ``{"products": [...]}`` JSON."""
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return cls(Product.from_dict(item) for item in data["products"])

    @classmethod
    def load_csv(cls, path: str | Path) -> "Catalog":
        """Load a catalog from CSV (sku,name,price[,tax_class,category,tags])."""
        with open(path, newline="", encoding="utf-8") as handle:
            return cls(Product.from_dict(row) for row in csv.DictReader(handle))
