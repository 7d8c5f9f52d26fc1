"""Command line interface: ``tinyshop product|search|quote ...`` printing JSON."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date

from .cart import Cart
from .catalog import Catalog
from .discounts import DiscountBook
from .errors import TinyshopError
from .inventory import Inventory
from .money import to_money
from .orders import OrderService
from .tax import TaxTable

EXIT_OK = 0
EXIT_DOMAIN_ERROR = 1
EXIT_USAGE = 2


def parse_item(text: str) -> tuple[str, int]:
    """Parse ``SKU=QTY`` (quantity defaults to 1 when ``=QTY`` is omitted)."""
    sku, sep, qty = text.partition("=")
    if not sku:
        raise argparse.ArgumentTypeError(f"invalid item: {text}")
    if not sep:
        return sku, 1
    if not qty.isdigit() or int(qty) == 0:
        raise argparse.ArgumentTypeError(f"invalid quantity in item: {text}")
    return sku, int(qty)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for all sub-commands."""
    parser = argparse.ArgumentParser(prog="tinyshop")
    sub = parser.add_subparsers(dest="command", required=True)

    product = sub.add_parser("product", help="show one product")
    product.add_argument("--catalog", required=True)
    product.add_argument("sku")

    search = sub.add_parser("search", help="search the catalog")
    search.add_argument("--catalog", required=True)
    search.add_argument("--max-price")
    search.add_argument("query", nargs="?", default="")

    quote = sub.add_parser("quote", help="price a basket")
    quote.add_argument("--catalog", required=True)
    quote.add_argument("--tax-rates")
    quote.add_argument("--item", action="append", type=parse_item, required=True)
    quote.add_argument("--region", default="EU-DE")
    quote.add_argument("--code")
    quote.add_argument("--codes-file")
    quote.add_argument("--date", type=date.fromisoformat)
    return parser


def _load_catalog(path: str) -> Catalog:
    return Catalog.load_csv(path) if path.endswith(".csv") else Catalog.load_json(path)


def _run(args: argparse.Namespace) -> dict:
    catalog = _load_catalog(args.catalog)
    if args.command == "product":
        return catalog.lookup(args.sku).to_dict()
    if args.command == "search":
        limit = to_money(args.max_price) if args.max_price else None
        found = catalog.search(args.query, max_price=limit)
        return {"count": len(found), "skus": [p.sku for p in found]}
    tax_table = TaxTable.load_json(args.tax_rates) if args.tax_rates else TaxTable.default()
    discounts = DiscountBook()
    if args.codes_file:
        with open(args.codes_file, encoding="utf-8") as handle:
            discounts = DiscountBook.from_json(handle.read())
    cart = Cart()
    for sku, quantity in args.item:
        cart.add(catalog.lookup(sku), quantity)
    service = OrderService(catalog, Inventory(), tax_table, discounts, default_region=args.region)
    quote = service.quote(cart, args.region, args.code, args.date)
    result = quote.to_dict()
    result["lines"] = [line.to_dict() for line in cart.lines]
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns 0 on success, 1 on domain errors, 2 on usage errors."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    try:
        result = _run(args)
    except (TinyshopError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_DOMAIN_ERROR
    print(json.dumps(result, indent=2, sort_keys=True))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
