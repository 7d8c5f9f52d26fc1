"""Integration steps: services are obtained from the build_app() wiring."""

from decimal import Decimal

from behave import given, then, when

from helpers import assert_equal, assert_raised, fixture_path
from shop_builders import standard_app
from tinyshop.app import build_app
from tinyshop.errors import (
    CartError,
    ConfigError,
    InvalidTransitionError,
    OutOfStockError,
    PaymentError,
)

STANDARD_ORDER_DATE = "2024-06-01"


# -- configuration -----------------------------------------------------------

@given('the configuration file "{filename}"')
def step_configuration_file(context, filename):
    context.config_path = fixture_path(filename)


@given("the configuration:")
def step_inline_configuration(context):
    context.config_path = context.scratch_dir / "shop.json"
    context.config_path.write_text(context.text, encoding="utf-8")


@when("the shop starts")
def step_shop_starts(context):
    context.app = build_app(context.config_path)


@when("the shop starts without a configuration")
def step_shop_starts_default(context):
    context.app = build_app()


@when("I try to start the shop")
def step_try_start(context):
    try:
        context.app = build_app(context.config_path)
    except ConfigError as exc:
        context.error = exc


@then("the shop offers {count:d} products")
def step_shop_offers(context, count):
    assert_equal(len(context.app.catalog), count, "products on offer")


@then("the shop's default region is \"{region}\"")
def step_default_region(context, region):
    assert_equal(context.app.region, region, "region")
    assert_equal(context.app.orders.default_region, region, "order service region")


@then("the shop charges these tax rates:")
def step_tax_rates_table(context):
    table = context.app.tax_table
    assert_equal(table.regions, [row["region"] for row in context.table], "regions")
    for row in context.table:
        for tax_class in ("standard", "reduced", "zero"):
            assert_equal(table.rate_for(row["region"], tax_class), Decimal(row[tax_class]),
                         f"{tax_class} rate in {row['region']}")


@then('the shop refuses to start with "{message}"')
def step_refuses_to_start(context, message):
    assert_raised(context, message)


# -- cart and checkout ---------------------------------------------------------

@given("the shop is running with the standard configuration")
def step_standard_shop(context):
    context.app = standard_app()


@given("a new cart from the shop")
def step_new_shop_cart(context):
    context.cart = context.app.new_cart()


@when('the customer puts {quantity:d} of "{sku}" in the cart')
def step_customer_puts(context, quantity, sku):
    context.app.add_to_cart(context.cart, sku, quantity)


@when('the customer checks out for "{region}" on {day:Date}')
def step_checkout(context, region, day):
    context.order = context.app.orders.checkout(context.cart, region, today=day)


@when('the customer checks out for "{region}" on {day:Date} using code "{code}"')
def step_checkout_with_code(context, region, day, code):
    context.order = context.app.orders.checkout(context.cart, region, code, day)


@when('the customer tries to check out for "{region}" on {day:Date}')
def step_try_checkout(context, region, day):
    try:
        context.order = context.app.orders.checkout(context.cart, region, today=day)
    except (OutOfStockError, CartError) as exc:
        context.error = exc


@when('the customer asks for a quote for "{region}"')
def step_quote(context, region):
    context.quote = context.app.orders.quote(context.cart, region)


@then("the shop cart holds {items:d} items worth {amount:Money}")
def step_shop_cart_holds(context, items, amount):
    assert_equal(context.cart.item_count, items, "items")
    assert_equal(context.cart.subtotal, amount, "subtotal")


@then('order "{order_id}" is placed with:')
def step_order_placed_with(context, order_id):
    order = context.app.orders.get(order_id)
    assert_equal(order.status, "placed", "status")
    row = context.table[0]
    quote = order.quote.to_dict()
    for heading in row.headings:
        assert_equal(quote[heading], row[heading], heading)


@then('the warehouse has {quantity:d} of "{sku}" left')
def step_warehouse_has(context, quantity, sku):
    assert_equal(context.app.stock_of(sku), quantity, f"stock of {sku}")


@then('the checkout fails with "{message}"')
def step_checkout_fails(context, message):
    assert_raised(context, message)


@then("no order has been placed")
def step_no_order(context):
    assert_equal(context.app.orders.orders, [], "orders")


@then("the quote charges {shipping:Money} for shipping and totals {total:Money}")
def step_quote_charges(context, shipping, total):
    assert_equal(context.quote.shipping, shipping, "shipping")
    assert_equal(context.quote.total, total, "total")


# -- order life cycle ----------------------------------------------------------

@given("a placed order")
def step_placed_order(context):
    # The same steps as the "Check out a filled cart" scenario.
    context.execute_steps(f'''
        Given a new cart from the shop
        When the customer puts 2 of "TEA-001" in the cart
        And the customer puts 1 of "MUG-002" in the cart
        And the customer checks out for "EU-DE" on {STANDARD_ORDER_DATE}
    ''')


@given("an order that is {status}")
def step_order_in_status(context, status):
    context.execute_steps("Given a placed order")
    follow_up = {
        "placed": [],
        "paid": ["When the customer pays the order in full"],
        "shipped": ["When the customer pays the order in full", "And the warehouse ships the order"],
        "cancelled": ["When the customer cancels the order"],
    }
    assert status in follow_up, f"no way to reach status {status!r}"
    if follow_up[status]:
        context.execute_steps("\n".join(follow_up[status]))
    assert_equal(context.order.status, status, "order status")


@when("the customer pays the order in full")
def step_pay_in_full(context):
    context.app.orders.pay(context.order.order_id, context.order.total)


@when("the customer offers {amount:Money} as payment")
def step_offer_payment(context, amount):
    try:
        context.app.orders.pay(context.order.order_id, amount)
    except (PaymentError, InvalidTransitionError) as exc:
        context.error = exc


@when("the warehouse ships the order")
def step_ship(context):
    context.app.orders.ship(context.order.order_id)


@when("the customer cancels the order")
def step_cancel(context):
    context.app.orders.cancel(context.order.order_id)


@when("the customer tries to {action:Action} the order")
def step_try_action(context, action):
    orders = context.app.orders
    operations = {
        "pay": lambda order_id: orders.pay(order_id, context.order.total),
        "ship": orders.ship,
        "cancel": orders.cancel,
    }
    try:
        operations[action](context.order.order_id)
    except (InvalidTransitionError, PaymentError) as exc:
        context.error = exc


@then('the order status is "{status}"')
def step_order_status(context, status):
    assert_equal(context.app.orders.get(context.order.order_id).status, status, "status")


@then('the order history reads "{history}"')
def step_order_history(context, history):
    assert_equal(", ".join(context.order.history), history, "history")


@then('the order refuses with "{message}"')
def step_order_refuses(context, message):
    assert_raised(context, message)
