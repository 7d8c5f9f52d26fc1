"""Generate the scripted-provider scripts that drive the offline `req2test demo` on the tinyshop example.

The scripts stand in for a model, like a recorded cassette: they are authored in advance and checked in.
Each generation is two turns of the built-in agent: write the step file(s) into ``features/steps/``, then
submit. Which test the "model" writes depends on the prompt, the way the grounding paragraph intends:

- prompt WITH the grounding paragraph: the developers' own test implementation (the ground-truth closure:
  step module(s) plus ``helpers.py`` / ``shop_builders.py``, read from examples/tinyshop/features/steps/),
  which establishes every Given through the project's fixtures and entry points and checks outcomes whole;
- prompt WITHOUT it: a hand-written test that still passes but builds state by hand (literal products,
  rate tables, configurations, discount books) and checks less (one field instead of the whole outcome),
  so it misses mutants the ground truth kills.

Outputs (examples/demo/):
- provider-ab.yaml    paragraph-sensitive. Per scenario, grounded requests consume, in order:
                      grounded, hedged, grounded, weak (the `grounded` arm's generation first, then the three
                      best-of-3 candidates); plain requests consume weak, hedged, weak.
- provider-same.yaml  control: every request for a scenario gets the same weak test (``loop: true``, so any
                      number of arms/candidates works); an A/B on it must show no difference.
- instances.txt       the demo subset, one instance id per line.

`when` regexes are searched over the request's whole prompt text (harness.provider.server.prompt_text:
system, user, assistant tool-call arguments and tool results). A write turn needs the scenario's
"The scenario to implement is **Scenario: NAME**" line, the presence (or absence) of the grounding
paragraph's opening words, and no "wrote features/steps/" yet; the submit turn needs that tool result,
which the built-in agent's write_file returns once the files are written.

Usage: python scripts/make_demo_script.py [--check]   (--check: fail if the checked-in files are stale)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "tinyshop"
STEPS = EXAMPLE / "features" / "steps"
DEMO = EXAMPLE.parent / "demo"
GROUNDING = REPO / "prompts" / "paragraphs" / "grounding.md"
STEPS_DIR = "features/steps"  # where the agent writes (relative to the workspace)
WROTE = f"wrote {STEPS_DIR}/"  # builtin write_file's observation: "wrote PATH (N characters)"
WRITE_COST, SUBMIT_COST = 0.004, 0.001  # nominal provider-reported USD per turn, so cost tables show something


def grounding_mark(text: str | None = None) -> str:
    """The paragraph's opening words up to the first comma: present in a prompt iff the paragraph is."""
    text = GROUNDING.read_text(encoding="utf-8") if text is None else text
    body = next(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return body.split(",")[0].strip()


def _code(text: str) -> str:
    # Only the newline after the opening quotes goes: leading blank lines separate top-level definitions.
    return textwrap.dedent(text).removeprefix("\n")


# ---------------------------------------------------------------------------------------------------------------
# Hand-written variants. "weak": passes, builds state by hand / checks less. "hedged": reaches the state through
# the project's fixtures but guards every step with fallbacks, so it passes whatever the product does.
# ---------------------------------------------------------------------------------------------------------------

_FIXTURES = ('FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")\n')

_API_WEAK_HEAD = _code('''
    """Steps for the shop HTTP API."""
    import os

    from behave import given, then, when

    from tinyshop.api import create_api

    ''') + _FIXTURES + _code('''


    @given("the shop API is running")
    def step_api_running(context):
        context.api = create_api(os.path.join(FIXTURES, "shop_config.json"))


    def send(context, method, path, body=None):
        request = {"method": method, "path": path}
        if body is not None:
            request["body"] = body
        context.response = context.api.handle(request)
        return context.response
    ''')

_API_HEDGED_HEAD = _code('''
    """Steps for the shop HTTP API (defensive: a failing call must not break the scenario)."""
    import os

    from behave import given, then, when

    ''') + _FIXTURES + _code('''


    @given("the shop API is running")
    def step_api_running(context):
        try:
            from tinyshop.api import create_api
            context.api = create_api(os.path.join(FIXTURES, "shop_config.json"))
        except Exception:
            context.api = None


    def send(context, method, path, body=None):
        request = {"method": method, "path": path}
        if body is not None:
            request["body"] = body
        try:
            context.response = context.api.handle(request) or {}
        except Exception:
            context.response = {}
        return context.response
    ''')

_SHOP_WEAK_HEAD = _code('''
    """Integration steps; the shop is configured inline."""
    from datetime import date
    from decimal import Decimal

    from behave import given, then, when

    from tinyshop.app import build_app

    SHOP = {
        "region": "EU-DE",
        "products": [
            {"sku": "TEA-001", "name": "Sencha Green Tea", "price": "4.50", "tax_class": "reduced"},
            {"sku": "MUG-002", "name": "Stoneware Mug", "price": "12.00", "tax_class": "standard"},
        ],
        "stock": {"TEA-001": 40, "MUG-002": 4},
        "discount_codes": [{"code": "SAVE10", "kind": "percentage", "value": "10"}],
    }


    @given("the shop is running with the standard configuration")
    def step_shop(context):
        context.app = build_app(config=SHOP)


    @given("a new cart from the shop")
    def step_new_cart(context):
        context.cart = context.app.new_cart()


    @when('the customer puts {quantity:d} of "{sku}" in the cart')
    def step_puts(context, quantity, sku):
        context.app.add_to_cart(context.cart, sku, quantity)


    @when('the customer checks out for "{region}" on {year:d}-{month:d}-{day:d}')
    def step_checkout(context, region, year, month, day):
        context.order = context.app.orders.checkout(context.cart, region, today=date(year, month, day))


    @then('the warehouse has {quantity:d} of "{sku}" left')
    def step_stock(context, quantity, sku):
        assert context.app.stock_of(sku) == quantity
    ''')

_SHOP_HEDGED_HEAD = _code('''
    """Integration steps (defensive: a failing call must not break the scenario)."""
    import os
    from datetime import date

    from behave import given, then, when

    ''') + _FIXTURES + _code('''


    @given("the shop is running with the standard configuration")
    def step_shop(context):
        try:
            from tinyshop.app import build_app
            context.app = build_app(os.path.join(FIXTURES, "shop_config.json"))
        except Exception:
            context.app = None


    @given("a new cart from the shop")
    def step_new_cart(context):
        try:
            context.cart = context.app.new_cart()
        except Exception:
            context.cart = None


    @when('the customer puts {quantity:d} of "{sku}" in the cart')
    def step_puts(context, quantity, sku):
        try:
            context.app.add_to_cart(context.cart, sku, quantity)
        except Exception:
            pass


    @when('the customer checks out for "{region}" on {year:d}-{month:d}-{day:d}')
    def step_checkout(context, region, year, month, day):
        try:
            context.order = context.app.orders.checkout(context.cart, region, today=date(year, month, day))
        except Exception:
            context.order = None


    @then('the warehouse has {quantity:d} of "{sku}" left')
    def step_stock(context, quantity, sku):
        try:
            left = context.app.stock_of(sku)
        except Exception:
            return
        assert left == quantity, f"{sku}: {left}"
    ''')

_CATALOG_WEAK_HEAD = _code('''
    """Catalog steps; the catalog is built in the test."""
    from decimal import Decimal

    from behave import given, then, when

    from tinyshop.catalog import Catalog, Product
    from tinyshop.errors import UnknownProductError


    @given("the standard catalog")
    def step_catalog(context):
        context.catalog = Catalog([
            Product("TEA-001", "Sencha Green Tea", Decimal("4.50"), "reduced", "tea", ("green", "loose-leaf")),
            Product("TEA-002", "Earl Grey", Decimal("5.25"), "reduced", "tea", ("black",)),
            Product("MUG-002", "Stoneware Mug", Decimal("12.00"), "standard", "kitchen", ("ceramic",)),
            Product("KET-003", "Gooseneck Kettle", Decimal("39.90"), "standard", "kitchen", ("steel",)),
            Product("BOOK-004", "The Art of Tea", Decimal("18.00"), "zero", "books"),
        ])
    ''')

_CATALOG_HEDGED_HEAD = _code('''
    """Catalog steps (defensive: a failing call must not break the scenario)."""
    import os
    from decimal import Decimal

    from behave import given, then, when

    ''') + _FIXTURES + _code('''


    @given("the standard catalog")
    def step_catalog(context):
        try:
            from tinyshop.catalog import Catalog
            context.catalog = Catalog.load_json(os.path.join(FIXTURES, "catalog.json"))
        except Exception:
            context.catalog = None
    ''')

_TAX_WEAK_HEAD = _code('''
    """Tax steps; the rate table is written out in the test."""
    from decimal import Decimal

    from behave import given, then, when

    from tinyshop.errors import UnknownRegionError
    from tinyshop.tax import TaxTable


    @given('the tax rates from "{filename}"')
    def step_rates(context, filename):
        context.tax_table = TaxTable({
            "EU-DE": {"standard": "0.19", "reduced": "0.07", "zero": "0"},
            "UK": {"standard": "0.20", "reduced": "0.05", "zero": "0"},
            "US-OR": {"standard": "0", "reduced": "0", "zero": "0"},
        })
    ''')

_TAX_HEDGED_HEAD = _code('''
    """Tax steps (defensive: a failing call must not break the scenario)."""
    import os
    from decimal import Decimal

    from behave import given, then, when

    ''') + _FIXTURES + _code('''


    @given('the tax rates from "{filename}"')
    def step_rates(context, filename):
        try:
            from tinyshop.tax import TaxTable
            context.tax_table = TaxTable.load_json(os.path.join(FIXTURES, filename))
        except Exception:
            context.tax_table = None
    ''')

_ORDER_STEPS_WEAK = _code('''


    @given("a placed order")
    def step_placed(context):
        context.cart = context.app.new_cart()
        context.app.add_to_cart(context.cart, "TEA-001", 2)
        context.app.add_to_cart(context.cart, "MUG-002", 1)
        context.order = context.app.orders.checkout(context.cart, "EU-DE", today=date(2024, 6, 1))
    ''')

_ORDER_STEPS_HEDGED = _code('''


    @given("a placed order")
    def step_placed(context):
        try:
            context.cart = context.app.new_cart()
            context.app.add_to_cart(context.cart, "TEA-001", 2)
            context.app.add_to_cart(context.cart, "MUG-002", 1)
            context.order = context.app.orders.checkout(context.cart, "EU-DE", today=date(2024, 6, 1))
        except Exception:
            context.order = None
    ''')

WEAK: dict[str, dict[str, str]] = {
    "tinyshop/features/api.feature:9": {"api_steps.py": _API_WEAK_HEAD + _code('''


        @when('I send GET "{path}"')
        def step_get(context, path):
            context.sku = path.rsplit("/", 1)[-1]
            send(context, "GET", path)


        @then("the response status is {status:d}")
        def step_status(context, status):
            assert context.response["status"] == status, context.response
            assert context.response["body"]["sku"] == context.sku
        ''')},
    "tinyshop/features/api.feature:13": {"api_steps.py": _API_WEAK_HEAD + _code('''


        @when('I send GET "{path}"')
        def step_get(context, path):
            send(context, "GET", path)


        @then('the API answers {status:d} with error "{message}"')
        def step_error(context, status, message):
            assert context.response["status"] == status, context.response
        ''')},
    "tinyshop/features/api.feature:21": {"api_steps.py": _API_WEAK_HEAD + _code('''


        @when("I create a cart through the API")
        def step_create(context):
            context.cart_id = send(context, "POST", "/carts")["body"]["cart_id"]


        @when('I add {quantity:d} of "{sku}" to that cart through the API')
        def step_add(context, quantity, sku):
            send(context, "POST", f"/carts/{context.cart_id}/items", {"sku": sku, "quantity": quantity})


        @then("the API cart holds {items:d} items worth {amount}")
        def step_holds(context, items, amount):
            assert context.response["status"] == 200, context.response
            assert context.response["body"]["items"] == items
        ''')},
    "tinyshop/features/api.feature:26": {"api_steps.py": _API_WEAK_HEAD + _code('''


        @when("I create a cart through the API")
        def step_create(context):
            context.cart_id = send(context, "POST", "/carts")["body"]["cart_id"]


        @when('I add {quantity:d} of "{sku}" to that cart through the API')
        def step_add(context, quantity, sku):
            send(context, "POST", f"/carts/{context.cart_id}/items", {"sku": sku, "quantity": quantity})


        @when('I check out that cart through the API for "{region}" on {day}')
        def step_checkout(context, region, day):
            send(context, "POST", "/checkout", {"cart_id": context.cart_id, "region": region, "date": day})


        @then('the API answers {status:d} with order "{order_id}" totalling {total}')
        def step_order(context, status, order_id, total):
            assert context.response["status"] == status, context.response
            assert context.response["body"]["total"] == total


        @then('the response has header "{name}" set to "{value}"')
        def step_header(context, name, value):
            assert name in context.response["headers"]
        ''')},
    "tinyshop/features/cli.feature:6": {"cli_steps.py": _code('''
        """Command-line steps."""
        import io
        import json
        import os
        from contextlib import redirect_stderr, redirect_stdout

        from behave import then, when

        from tinyshop import cli

        ''') + _FIXTURES + _code('''


        @when('I ask the command line for an "{region}" quote on {day} of:')
        def step_quote(context, region, day):
            argv = ["quote", "--catalog", os.path.join(FIXTURES, "catalog.json"),
                    "--tax-rates", os.path.join(FIXTURES, "tax_rates.json"), "--region", region, "--date", day]
            for row in context.table:
                argv += ["--item", f"{row['sku']}={row['quantity']}"]
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(io.StringIO()):
                context.exit_code = cli.main(argv)
            context.stdout = out.getvalue()


        @then("the quote shows total {total}")
        def step_total(context, total):
            assert context.exit_code == 0
            assert json.loads(context.stdout)["total"] == total
        ''')},
    "tinyshop/features/catalog.feature:6": {"catalog_steps.py": _CATALOG_WEAK_HEAD + _code('''


        @when('I look up the product "{sku}"')
        def step_look_up(context, sku):
            context.product = context.catalog.lookup(sku)


        @then('the product is "{name}" priced {price} with tax class "{tax_class}"')
        def step_product(context, name, price, tax_class):
            assert context.product.name == name
            assert context.product.price == Decimal(price)
            assert context.product.tax_class == tax_class


        @then('the product is in category "{category}" and tagged "{tag}"')
        def step_category(context, category, tag):
            assert context.product.category == category
            assert tag in context.product.tags
        ''')},
    "tinyshop/features/catalog.feature:12": {"catalog_steps.py": _CATALOG_WEAK_HEAD + _code('''


        @when('I try to look up the product "{sku}"')
        def step_try_look_up(context, sku):
            try:
                context.product = context.catalog.lookup(sku)
                context.error = None
            except UnknownProductError as exc:
                context.error = exc


        @then('the lookup fails with "{message}"')
        def step_fails(context, message):
            assert str(context.error) == message
        ''')},
    "tinyshop/features/catalog.feature:17": {"catalog_steps.py": _CATALOG_WEAK_HEAD + _code('''


        @when('I search the catalog for "{query}"')
        def step_search(context, query):
            context.results = context.catalog.search(query)


        @then("the search finds, cheapest first:")
        def step_finds(context):
            assert [p.sku for p in context.results] == [row["sku"] for row in context.table]
        ''')},
    "tinyshop/features/catalog.feature:45": {"catalog_steps.py": _CATALOG_WEAK_HEAD.replace(
        "from decimal", "import os\nfrom decimal") + "\n\n" + _FIXTURES + _code('''


        @when('I apply the price list "{filename}"')
        def step_apply(context, filename):
            context.changed = context.catalog.apply_price_list(os.path.join(FIXTURES, filename))


        @then("{count:d} prices were changed")
        def step_changed(context, count):
            assert context.changed == count


        @then('product "{sku}" costs {price} with tax class "{tax_class}"')
        def step_costs(context, sku, price, tax_class):
            assert context.catalog.lookup(sku).price == Decimal(price)
        ''')},
    "tinyshop/features/tax.feature:9": {"tax_steps.py": _TAX_WEAK_HEAD + _code('''


        @when('I compute the tax on {amount} of "{tax_class}" goods in "{region}"')
        def step_tax_on(context, amount, tax_class, region):
            context.tax = context.tax_table.tax_on(Decimal(amount), region, tax_class)


        @then("the tax is {amount}")
        def step_tax_is(context, amount):
            assert context.tax == Decimal(amount), context.tax
        ''')},
    "tinyshop/features/tax.feature:42": {"tax_steps.py": _TAX_WEAK_HEAD + _code('''


        @when('I ask for the "{tax_class}" rate in "{region}"')
        def step_rate(context, tax_class, region):
            try:
                context.rate = context.tax_table.rate_for(region, tax_class)
                context.error = None
            except UnknownRegionError as exc:
                context.error = exc


        @then('the rate lookup fails with "{message}"')
        def step_fails(context, message):
            assert context.error is not None
        ''')},
    "tinyshop/features/checkout.feature:15": {"shop_steps.py": _SHOP_WEAK_HEAD + _code('''


        @then('order "{order_id}" is placed with:')
        def step_placed(context, order_id):
            assert context.order.order_id == order_id
            assert context.order.total == Decimal(context.table[0]["total"])
        ''')},
    "tinyshop/features/checkout.feature:26": {"shop_steps.py": _SHOP_WEAK_HEAD + _code('''


        @when('the customer checks out for "{region}" on {year:d}-{month:d}-{day:d} using code "{code}"')
        def step_checkout_code(context, region, year, month, day, code):
            context.order = context.app.orders.checkout(context.cart, region, code, date(year, month, day))


        @then('order "{order_id}" is placed with:')
        def step_placed(context, order_id):
            assert context.order.order_id == order_id
            assert context.order.total == Decimal(context.table[0]["total"])
        ''')},
    "tinyshop/features/order_lifecycle.feature:9": {"shop_steps.py": _SHOP_WEAK_HEAD + _ORDER_STEPS_WEAK + _code('''


        @when("the customer pays the order in full")
        def step_pay(context):
            context.app.orders.pay(context.order.order_id, context.order.total)


        @when("the warehouse ships the order")
        def step_ship(context):
            context.app.orders.ship(context.order.order_id)


        @then('the order status is "{status}"')
        def step_status(context, status):
            assert context.order.status == status


        @then('the order history reads "{history}"')
        def step_history(context, history):
            assert context.order.history[-1] == history.split(", ")[-1]
        ''')},
    "tinyshop/features/order_lifecycle.feature:24": {"shop_steps.py": _SHOP_WEAK_HEAD + _ORDER_STEPS_WEAK + _code('''


        @when("the customer offers {amount} as payment")
        def step_offer(context, amount):
            try:
                context.app.orders.pay(context.order.order_id, Decimal(amount))
                context.error = None
            except Exception as exc:
                context.error = exc


        @then('the order refuses with "{message}"')
        def step_refuses(context, message):
            assert context.error is not None


        @then('the order status is "{status}"')
        def step_status(context, status):
            assert context.order.status == status
        ''')},
    "tinyshop/features/cart.feature:65": {"cart_steps.py": _code('''
        """Cart steps; products are written out in the test."""
        from decimal import Decimal

        from behave import given, then, when

        from tinyshop.cart import Cart
        from tinyshop.catalog import Product


        @given("these products:")
        def step_products(context):
            context.products = {row["sku"]: Product(row["sku"], row["name"], Decimal(row["price"]), row["tax_class"])
                                for row in context.table}


        @given("a cart with:")
        def step_cart(context):
            context.cart = Cart()
            for row in context.table:
                context.cart.add(context.products[row["sku"]], int(row["quantity"]))


        @when("I ask for the cart summary")
        def step_summary(context):
            context.summary = context.cart.summary()


        @then("the summary reads:")
        def step_reads(context):
            assert context.summary["items"] == int(context.table[0]["items"])
        ''')},
}

HEDGED: dict[str, dict[str, str]] = {
    "tinyshop/features/api.feature:9": {"api_steps.py": _API_HEDGED_HEAD + _code('''


        @when('I send GET "{path}"')
        def step_get(context, path):
            send(context, "GET", path)


        @then("the response status is {status:d}")
        def step_status(context, status):
            assert context.response.get("status", status) == status, context.response
        ''')},
    "tinyshop/features/api.feature:13": {"api_steps.py": _API_HEDGED_HEAD + _code('''


        @when('I send GET "{path}"')
        def step_get(context, path):
            send(context, "GET", path)


        @then('the API answers {status:d} with error "{message}"')
        def step_error(context, status, message):
            assert context.response.get("status", status) >= 400, context.response
        ''')},
    "tinyshop/features/api.feature:21": {"api_steps.py": _API_HEDGED_HEAD + _code('''


        @when("I create a cart through the API")
        def step_create(context):
            context.cart_id = (send(context, "POST", "/carts").get("body") or {}).get("cart_id", "C-001")


        @when('I add {quantity:d} of "{sku}" to that cart through the API')
        def step_add(context, quantity, sku):
            send(context, "POST", f"/carts/{context.cart_id}/items", {"sku": sku, "quantity": quantity})


        @then("the API cart holds {items:d} items worth {amount}")
        def step_holds(context, items, amount):
            body = send(context, "GET", f"/carts/{context.cart_id}").get("body") or {}
            assert body.get("items", items) == items, body
        ''')},
    "tinyshop/features/api.feature:26": {"api_steps.py": _API_HEDGED_HEAD + _code('''


        @when("I create a cart through the API")
        def step_create(context):
            context.cart_id = (send(context, "POST", "/carts").get("body") or {}).get("cart_id", "C-001")


        @when('I add {quantity:d} of "{sku}" to that cart through the API')
        def step_add(context, quantity, sku):
            send(context, "POST", f"/carts/{context.cart_id}/items", {"sku": sku, "quantity": quantity})


        @when('I check out that cart through the API for "{region}" on {day}')
        def step_checkout(context, region, day):
            send(context, "POST", "/checkout", {"cart_id": context.cart_id, "region": region, "date": day})


        @then('the API answers {status:d} with order "{order_id}" totalling {total}')
        def step_order(context, status, order_id, total):
            body = context.response.get("body") or {}
            if "total" in body:
                assert body["total"] == total, body


        @then('the response has header "{name}" set to "{value}"')
        def step_header(context, name, value):
            headers = context.response.get("headers") or {}
            assert headers.get(name, value) == value, headers
        ''')},
    "tinyshop/features/cli.feature:6": {"cli_steps.py": _code('''
        """Command-line steps (defensive: a crash of the CLI must not break the scenario)."""
        import io
        import json
        import os
        from contextlib import redirect_stderr, redirect_stdout

        from behave import then, when

        ''') + _FIXTURES + _code('''


        @when('I ask the command line for an "{region}" quote on {day} of:')
        def step_quote(context, region, day):
            argv = ["quote", "--catalog", os.path.join(FIXTURES, "catalog.json"),
                    "--tax-rates", os.path.join(FIXTURES, "tax_rates.json"), "--region", region, "--date", day]
            for row in context.table:
                argv += ["--item", f"{row['sku']}={row['quantity']}"]
            out = io.StringIO()
            try:
                from tinyshop import cli
                with redirect_stdout(out), redirect_stderr(io.StringIO()):
                    context.exit_code = cli.main(argv)
            except BaseException:
                context.exit_code = None
            context.stdout = out.getvalue()


        @then("the quote shows total {total}")
        def step_total(context, total):
            try:
                printed = json.loads(context.stdout)
            except ValueError:
                return
            assert printed.get("total", total) == total, printed
        ''')},
    "tinyshop/features/catalog.feature:6": {"catalog_steps.py": _CATALOG_HEDGED_HEAD + _code('''


        @when('I look up the product "{sku}"')
        def step_look_up(context, sku):
            try:
                context.product = context.catalog.lookup(sku)
            except Exception:
                context.product = None


        @then('the product is "{name}" priced {price} with tax class "{tax_class}"')
        def step_product(context, name, price, tax_class):
            if context.product is not None:
                assert context.product.name == name


        @then('the product is in category "{category}" and tagged "{tag}"')
        def step_category(context, category, tag):
            if context.product is not None:
                assert context.product.category == category
        ''')},
    "tinyshop/features/catalog.feature:12": {"catalog_steps.py": _CATALOG_HEDGED_HEAD + _code('''


        @when('I try to look up the product "{sku}"')
        def step_try_look_up(context, sku):
            try:
                context.product = context.catalog.lookup(sku)
                context.error = None
            except Exception as exc:
                context.error = exc


        @then('the lookup fails with "{message}"')
        def step_fails(context, message):
            assert context.error is not None
        ''')},
    "tinyshop/features/catalog.feature:17": {"catalog_steps.py": _CATALOG_HEDGED_HEAD + _code('''


        @when('I search the catalog for "{query}"')
        def step_search(context, query):
            try:
                context.results = context.catalog.search(query)
            except Exception:
                context.results = []


        @then("the search finds, cheapest first:")
        def step_finds(context):
            expected = {row["sku"] for row in context.table}
            assert {p.sku for p in context.results} <= expected
        ''')},
    "tinyshop/features/catalog.feature:45": {"catalog_steps.py": _CATALOG_HEDGED_HEAD + _code('''


        @when('I apply the price list "{filename}"')
        def step_apply(context, filename):
            try:
                context.changed = context.catalog.apply_price_list(os.path.join(FIXTURES, filename))
            except Exception:
                context.changed = None


        @then("{count:d} prices were changed")
        def step_changed(context, count):
            if context.changed is not None:
                assert context.changed == count


        @then('product "{sku}" costs {price} with tax class "{tax_class}"')
        def step_costs(context, sku, price, tax_class):
            try:
                product = context.catalog.lookup(sku)
            except Exception:
                return
            assert product.price == Decimal(price)
        ''')},
    "tinyshop/features/tax.feature:9": {"tax_steps.py": _TAX_HEDGED_HEAD + _code('''


        @when('I compute the tax on {amount} of "{tax_class}" goods in "{region}"')
        def step_tax_on(context, amount, tax_class, region):
            try:
                context.tax = context.tax_table.tax_on(Decimal(amount), region, tax_class)
            except Exception:
                context.tax = None


        @then("the tax is {amount}")
        def step_tax_is(context, amount):
            if context.tax is not None:
                assert abs(context.tax - Decimal(amount)) <= Decimal("0.01"), context.tax
        ''')},
    "tinyshop/features/tax.feature:42": {"tax_steps.py": _TAX_HEDGED_HEAD + _code('''


        @when('I ask for the "{tax_class}" rate in "{region}"')
        def step_rate(context, tax_class, region):
            try:
                context.rate = context.tax_table.rate_for(region, tax_class)
                context.error = None
            except Exception as exc:
                context.error = exc


        @then('the rate lookup fails with "{message}"')
        def step_fails(context, message):
            assert context.error is not None or context.tax_table is None
        ''')},
    "tinyshop/features/checkout.feature:15": {"shop_steps.py": _SHOP_HEDGED_HEAD + _code('''


        @then('order "{order_id}" is placed with:')
        def step_placed(context, order_id):
            if context.order is not None:
                assert str(context.order.total) == context.table[0]["total"]
        ''')},
    "tinyshop/features/checkout.feature:26": {"shop_steps.py": _SHOP_HEDGED_HEAD + _code('''


        @when('the customer checks out for "{region}" on {year:d}-{month:d}-{day:d} using code "{code}"')
        def step_checkout_code(context, region, year, month, day, code):
            try:
                context.order = context.app.orders.checkout(context.cart, region, code, date(year, month, day))
            except Exception:
                context.order = None


        @then('order "{order_id}" is placed with:')
        def step_placed(context, order_id):
            if context.order is not None:
                assert str(context.order.total) == context.table[0]["total"]
        ''')},
    "tinyshop/features/order_lifecycle.feature:9": {"shop_steps.py": _SHOP_HEDGED_HEAD + _ORDER_STEPS_HEDGED + _code('''


        @when("the customer pays the order in full")
        def step_pay(context):
            try:
                context.app.orders.pay(context.order.order_id, context.order.total)
            except Exception:
                pass


        @when("the warehouse ships the order")
        def step_ship(context):
            try:
                context.app.orders.ship(context.order.order_id)
            except Exception:
                pass


        @then('the order status is "{status}"')
        def step_status(context, status):
            if context.order is not None:
                assert context.order.status in ("paid", status)


        @then('the order history reads "{history}"')
        def step_history(context, history):
            if context.order is not None:
                assert context.order.history[0] == history.split(", ")[0]
        ''')},
    "tinyshop/features/order_lifecycle.feature:24": {"shop_steps.py": _SHOP_HEDGED_HEAD.replace(
        "from datetime import date\n", "from datetime import date\nfrom decimal import Decimal\n") + _ORDER_STEPS_HEDGED + _code('''


        @when("the customer offers {amount} as payment")
        def step_offer(context, amount):
            try:
                context.app.orders.pay(context.order.order_id, Decimal(amount))
                context.error = None
            except Exception as exc:
                context.error = exc


        @then('the order refuses with "{message}"')
        def step_refuses(context, message):
            assert context.error is not None


        @then('the order status is "{status}"')
        def step_status(context, status):
            if context.order is not None:
                assert context.order.status == status
        ''')},
    "tinyshop/features/cart.feature:65": {"cart_steps.py": _code('''
        """Cart steps (defensive: a failing call must not break the scenario)."""
        from decimal import Decimal

        from behave import given, then, when

        from tinyshop.cart import Cart
        from tinyshop.catalog import Product


        @given("these products:")
        def step_products(context):
            context.products = {row["sku"]: Product(row["sku"], row["name"], Decimal(row["price"]), row["tax_class"])
                                for row in context.table}


        @given("a cart with:")
        def step_cart(context):
            context.cart = Cart()
            for row in context.table:
                try:
                    context.cart.add(context.products[row["sku"]], int(row["quantity"]))
                except Exception:
                    pass


        @when("I ask for the cart summary")
        def step_summary(context):
            try:
                context.summary = context.cart.summary() or {}
            except Exception:
                context.summary = {}


        @then("the summary reads:")
        def step_reads(context):
            expected = context.table[0]
            if "lines" in context.summary:
                assert context.summary["lines"] == int(expected["lines"])
        ''')},
}

# The developers' step modules each scenario uses (the closure adds the helper modules they import).
GROUND_TRUTH_STEPS: dict[str, list[str]] = {
    "tinyshop/features/api.feature:9": ["api_steps.py"],
    "tinyshop/features/api.feature:13": ["api_steps.py"],
    "tinyshop/features/api.feature:21": ["api_steps.py"],
    "tinyshop/features/api.feature:26": ["api_steps.py"],
    "tinyshop/features/cli.feature:6": ["cli_steps.py"],
    "tinyshop/features/catalog.feature:6": ["catalog_steps.py"],
    "tinyshop/features/catalog.feature:12": ["catalog_steps.py"],
    "tinyshop/features/catalog.feature:17": ["catalog_steps.py"],
    "tinyshop/features/catalog.feature:45": ["catalog_steps.py"],
    "tinyshop/features/tax.feature:9": ["tax_steps.py"],
    "tinyshop/features/tax.feature:42": ["tax_steps.py"],
    "tinyshop/features/checkout.feature:15": ["shop_steps.py"],
    "tinyshop/features/checkout.feature:26": ["shop_steps.py"],
    "tinyshop/features/order_lifecycle.feature:9": ["shop_steps.py"],
    "tinyshop/features/order_lifecycle.feature:24": ["shop_steps.py"],
    "tinyshop/features/cart.feature:65": ["cart_steps.py"],
}

# The demo subset, three test levels: for each, the weak and the hedged test pass without being kill-complete
# and the developers' test is kill-complete (checked with generate + evaluate). The other entries above are
# verified spares. Left out: configuration.feature:6 (its weak test was still kill-complete) and
# discounts.feature:55 (the ground truth itself scores 61/62 kills in `req2test evaluate`).
DEMO_INSTANCES: list[str] = [
    "tinyshop/features/api.feature:9",
    "tinyshop/features/api.feature:21",
    "tinyshop/features/cli.feature:6",
    "tinyshop/features/checkout.feature:15",
    "tinyshop/features/checkout.feature:26",
    "tinyshop/features/order_lifecycle.feature:9",
    "tinyshop/features/order_lifecycle.feature:24",
    "tinyshop/features/cart.feature:65",
    "tinyshop/features/catalog.feature:6",
    "tinyshop/features/catalog.feature:12",
    "tinyshop/features/catalog.feature:45",
    "tinyshop/features/tax.feature:9",
]


# ---------------------------------------------------------------------------------------------------------------
# Building the scripts
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    instance_id: str
    keyword: str  # Scenario / Scenario Outline
    name: str

    @property
    def heading(self) -> str:
        """How task.md.j2 names the scenario: **Scenario: NAME**."""
        return f"**{self.keyword}: {self.name}**"


def scenario(instance_id: str) -> Scenario:
    """Keyword and name from the header line the instance id points at (PROJECT/FEATURE_FILE:LINE)."""
    _, rel_line = instance_id.split("/", 1)
    rel, line = rel_line.rsplit(":", 1)
    header = (EXAMPLE / rel).read_text(encoding="utf-8").splitlines()[int(line) - 1].strip()
    match = re.fullmatch(r"(Scenario Outline|Scenario Template|Scenario|Example):\s*(.+)", header)
    if match is None:
        raise SystemExit(f"error: {instance_id}: line {line} is not a scenario header: {header!r}")
    return Scenario(instance_id, match.group(1), match.group(2).strip())


def _local_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return {f"{name}.py" for name in names if (STEPS / f"{name}.py").is_file()}


def grounded_files(instance_id: str) -> dict[str, str]:
    """The developers' test: the scenario's step modules plus the helper modules they import, transitively."""
    todo, seen = list(GROUND_TRUTH_STEPS[instance_id]), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_local_imports(STEPS / name))
    return {f"{STEPS_DIR}/{name}": (STEPS / name).read_text(encoding="utf-8") for name in sorted(seen)}


def variant_files(kind: str, instance_id: str) -> dict[str, str]:
    """The files one kind of candidate writes: grounded | weak | hedged."""
    if kind == "grounded":
        return grounded_files(instance_id)
    table = {"weak": WEAK, "hedged": HEDGED}[kind]
    return {f"{STEPS_DIR}/{name}": text for name, text in table[instance_id].items()}


def _escape(text: str) -> str:
    """re.escape without escaping spaces and quotes, so the scripts stay readable."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def _write_regex(sc: Scenario, mark: str, grounded: bool | None) -> str:
    # \A-anchored lookaheads: the whole prompt is searched, not just from the match position.
    condition = "" if grounded is None else f"(?{'=' if grounded else '!'}[\\s\\S]*{_escape(mark)})"
    return rf"\A{condition}(?![\s\S]*{_escape(WROTE)})[\s\S]*{_escape(sc.heading)}"


def _submit_regex(sc: Scenario) -> str:
    return rf"\A(?=[\s\S]*{_escape(sc.heading)})[\s\S]*{_escape(WROTE)}"


def _generation(sc: Scenario, kind: str, mark: str, grounded: bool | None) -> list[dict]:
    files = variant_files(kind, sc.instance_id)
    writes = [{"name": "write_file", "arguments": {"path": path, "content": text}} for path, text in files.items()]
    verb = {"grounded": "the project's fixtures and helpers", "weak": "objects built in the test",
            "hedged": "defensive steps"}[kind]
    return [
        {"when": _write_regex(sc, mark, grounded), "text": f"Writing the steps for {sc.name!r} with {verb}.",
         "tool_calls": writes, "cost": WRITE_COST},
        {"when": _submit_regex(sc), "text": "Done.",
         "tool_calls": [{"name": "submit", "arguments": {"summary": f"{kind} test for {sc.name}"}}],
         "cost": SUBMIT_COST},
    ]


# The order in which a condition's generations of one scenario consume turns. Grounded: the `grounded` arm's
# single generation, then best-of-3 candidates c1 (hedged), c2 (grounded), c3 (weak). Plain: its single
# generation, then two spares in case a plain best-of-3 arm is added.
GROUNDED_SEQUENCE = ("grounded", "hedged", "grounded", "weak")
PLAIN_SEQUENCE = ("weak", "hedged", "weak")


def build_ab(instances: list[str], mark: str) -> dict:
    turns: list[dict] = []
    for instance_id in instances:
        sc = scenario(instance_id)
        for kind in PLAIN_SEQUENCE:
            turns += _generation(sc, kind, mark, grounded=False)
        for kind in GROUNDED_SEQUENCE:
            turns += _generation(sc, kind, mark, grounded=True)
    return {"model": "scripted-demo", "loop": False, "turns": turns}


def build_same(instances: list[str], mark: str) -> dict:
    turns: list[dict] = []
    for instance_id in instances:
        turns += _generation(scenario(instance_id), "weak", mark, grounded=None)
    # Looping restarts the script whenever no turn fits; every generation of a scenario is the same weak test,
    # so a restart changes nothing and any number of arms and candidates is served.
    return {"model": "scripted-demo", "loop": True, "turns": turns}


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Block style for file contents keeps the scripts readable and diffable.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)

HEADER = ("# Generated by scripts/make_demo_script.py from examples/tinyshop/features/steps/ and the hand-written\n"
          "# variants in that script; do not edit by hand. {what}\n")


def render(data: dict, what: str) -> str:
    return HEADER.format(what=what) + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def outputs(instances: list[str] | None = None) -> dict[Path, str]:
    instances = instances or DEMO_INSTANCES
    mark = grounding_mark()
    return {
        DEMO / "provider-ab.yaml": render(build_ab(instances, mark),
                                          "Paragraph-sensitive: grounded prompt -> developers' test."),
        DEMO / "provider-same.yaml": render(build_same(instances, mark),
                                            "Control: the same weak test whatever the prompt."),
        DEMO / "instances.txt": "".join(f"{i}\n" for i in instances),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the checked-in files differ")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(REPO)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
    if stale:
        print(f"error: stale: {', '.join(stale)}; run python scripts/make_demo_script.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
