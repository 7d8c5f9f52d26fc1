"""Tax rates per region and tax class; amounts rounded half-up to cents."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Mapping

from .cart import Cart
from .errors import UnknownRegionError
from .money import ZERO, round_cents

DEFAULT_RATES: dict[str, dict[str, str]] = {
    "EU-DE": {"standard": "0.19", "reduced": "0.07", "zero": "0"},
    "UK": {"standard": "0.20", "reduced": "0.05", "zero": "0"},
    "US-OR": {"standard": "0", "reduced": "0", "zero": "0"},
}


class TaxTable:
    """Tax rates indexed by region, then tax class."""

    def __init__(self, rates: Mapping[str, Mapping[str, object]]) -> None:
        self._rates: dict[str, dict[str, Decimal]] = {}
        for region, classes in rates.items():
            parsed = {}
            for tax_class, rate in classes.items():
                value = Decimal(str(rate))
                if value < 0 or value >= 1:
                    raise ValueError(f"rate for {region}/{tax_class} must be in [0, 1)")
                parsed[tax_class] = value
            self._rates[region] = parsed

    @classmethod
    def default(cls) -> "TaxTable":
        """The built-in rate table."""
        return cls(DEFAULT_RATES)

    @classmethod
    def load_json(cls, path: str | Path) -> "TaxTable":
        """Load ``{"REGION": {"class": "rate"}}`` JSON."""
        with open(path, encoding="utf-8") as handle:
            return cls(json.load(handle))

    @property
    def regions(self) -> list[str]:
        """Known regions, sorted."""
        return sorted(self._rates)

    def rate_for(self, region: str, tax_class: str) -> Decimal:
        """Rate for ``tax_class`` goods in ``region``."""
        classes = self._rates.get(region)
        if classes is None:
            raise UnknownRegionError(region)
        if tax_class not in classes:
            raise ValueError(f"no {tax_class} rate for {region}")
        return classes[tax_class]

    def tax_on(self, amount: Decimal, region: str, tax_class: str) -> Decimal:
        """Tax due on a net ``amount``, rounded half-up to cents."""
        return round_cents(amount * self.rate_for(region, tax_class))

    def tax_for_cart(self, cart: Cart, region: str, discount: Decimal = ZERO) -> Decimal:
        """Tax for a whole cart after ``discount``.

        The discount is spread over tax classes in proportion to their share
        of the subtotal; tax is rounded once per tax class.
        """
        subtotal = cart.subtotal
        if discount < 0 or discount > subtotal:
            raise ValueError("discount must be between 0 and the subtotal")
        if subtotal == 0:
            return ZERO
        factor = (subtotal - discount) / subtotal
        total = ZERO
        for tax_class in sorted({line.product.tax_class for line in cart.lines}):
            base = cart.subtotal_for(tax_class) * factor
            total += self.tax_on(base, region, tax_class)
        return total
