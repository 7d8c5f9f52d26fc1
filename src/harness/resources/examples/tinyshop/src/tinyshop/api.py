"""In-process HTTP-like interface: ``handle(request) -> response``.

A request is ``{"method": "GET", "path": "/products/TEA-001", "body": {...}}``;
a response is ``{"status": 200, "headers": {...}, "body": {...}}``.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import parse_qs

from .app import App, build_app
from .cart import Cart
from .errors import (
    CartError,
    InvalidDiscountError,
    InvalidTransitionError,
    OutOfStockError,
    PaymentError,
    UnknownProductError,
    UnknownRegionError,
)
from .money import to_money

JSON_HEADERS = {"Content-Type": "application/json"}


def response(status: int, body: dict, headers: dict | None = None) -> dict:
    """Build a response dict with JSON content type."""
    merged = dict(JSON_HEADERS)
    merged.update(headers or {})
    return {"status": status, "headers": merged, "body": body}


def error(status: int, message: str) -> dict:
    """Build an error response."""
    return response(status, {"error": message})


class NotFound(Exception):
    """Internal: a resource or route does not exist."""


class BadRequest(Exception):
    """Internal: the request body is malformed."""


class Api:
    """Routes requests to the wired application services."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._carts: dict[str, Cart] = {}
        self._next_cart = 1

    def handle(self, request: dict) -> dict:
        """Serve one request and never raise: errors become 4xx responses."""
        method = str(request.get("method", "GET")).upper()
        path, _, query = str(request.get("path", "/")).partition("?")
        body = request.get("body") or {}
        parts = [part for part in path.split("/") if part]
        try:
            return self._route(method, parts, parse_qs(query), body)
        except (NotFound, UnknownProductError, LookupError) as exc:
            return error(404, str(exc))
        except BadRequest as exc:
            return error(400, str(exc))
        except (OutOfStockError, InvalidTransitionError) as exc:
            return error(409, str(exc))
        except (CartError, InvalidDiscountError, PaymentError, UnknownRegionError, ValueError) as exc:
            return error(422, str(exc))

    def _route(self, method: str, parts: list[str], params: dict, body: dict) -> dict:
        if parts[:1] == ["products"] and method == "GET":
            if len(parts) == 1:
                return self._search(params)
            if len(parts) == 2:
                return response(200, self.app.catalog.lookup(parts[1]).to_dict())
        if parts == ["carts"] and method == "POST":
            cart_id = f"C-{self._next_cart:03d}"
            self._next_cart += 1
            self._carts[cart_id] = self.app.new_cart()
            return response(201, {"cart_id": cart_id}, {"Location": f"/carts/{cart_id}"})
        if len(parts) == 2 and parts[0] == "carts" and method == "GET":
            return response(200, self._cart(parts[1]).to_dict())
        if len(parts) == 3 and parts[0] == "carts" and parts[2] == "items" and method == "POST":
            cart = self._cart(parts[1])
            sku = body.get("sku")
            quantity = body.get("quantity", 1)
            if not sku or not isinstance(quantity, int):
                raise BadRequest("body needs a sku and an integer quantity")
            self.app.add_to_cart(cart, sku, quantity)
            return response(200, cart.to_dict())
        if parts == ["checkout"] and method == "POST":
            return self._checkout(body)
        if len(parts) == 3 and parts[0] == "orders" and parts[2] == "pay" and method == "POST":
            try:
                amount = to_money(body.get("amount", ""))
            except (ValueError, TypeError, InvalidOperation):
                raise BadRequest("amount must be a decimal string") from None
            order = self.app.orders.pay(parts[1], amount)
            return response(200, order.to_dict())
        if len(parts) == 2 and parts[0] == "orders" and method == "GET":
            return response(200, self.app.orders.get(parts[1]).to_dict())
        raise NotFound(f"no route for {method} /{'/'.join(parts)}")

    def _cart(self, cart_id: str) -> Cart:
        if cart_id not in self._carts:
            raise NotFound(f"unknown cart: {cart_id}")
        return self._carts[cart_id]

    def _search(self, params: dict) -> dict:
        query = params.get("q", [""])[0]
        category = params.get("category", [None])[0]
        max_price = params.get("max_price", [None])[0]
        try:
            limit = Decimal(max_price) if max_price is not None else None
        except InvalidOperation:
            raise BadRequest("max_price must be a number") from None
        found = self.app.catalog.search(query, category=category, max_price=limit)
        return response(200, {"count": len(found), "products": [p.to_dict() for p in found]})

    def _checkout(self, body: dict) -> dict:
        cart = self._cart(str(body.get("cart_id", "")))
        raw_date = body.get("date")
        try:
            today = date.fromisoformat(raw_date) if raw_date else None
        except ValueError:
            raise BadRequest(f"invalid date: {raw_date}") from None
        order = self.app.orders.checkout(cart, body.get("region"), body.get("code"), today)
        self._carts.pop(str(body["cart_id"]))
        return response(201, order.to_dict(), {"Location": f"/orders/{order.order_id}"})


def create_api(config_path: str | Path | None = None) -> Api:
    """An Api over ``build_app(config_path)``."""
    return Api(build_app(config_path))


_default_api: Api | None = None


def handle(request: dict) -> dict:
    """Serve ``request`` with a process-wide Api over the default configuration."""
    global _default_api
    if _default_api is None:
        _default_api = create_api()
    return _default_api.handle(request)
