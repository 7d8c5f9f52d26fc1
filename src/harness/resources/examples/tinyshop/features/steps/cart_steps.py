"""Component steps for the cart (products are built by hand from tables)."""

from behave import given, then, when

from helpers import assert_equal
from shop_builders import cart_from_table, products_from_table
from tinyshop.cart import Cart
from tinyshop.errors import CartError


@given("these products:")
def step_these_products(context):
    context.products = products_from_table(context.table)


@given("an empty cart")
def step_empty_cart(context):
    context.cart = Cart()


@given("a cart with:")
def step_cart_with(context):
    context.cart = cart_from_table(context.table, getattr(context, "products", None))


@when('I add {quantity:d} of "{sku}" to the cart')
def step_add(context, quantity, sku):
    context.cart.add(context.products[sku], quantity)


@when('I add {quantity:d} more of "{sku}" to the cart')
def step_add_more(context, quantity, sku):
    before = context.cart.quantity_of(sku)
    assert before > 0, f"{sku} should already be in the cart"
    context.cart.add(context.products[sku], quantity)


@when('I try to add {quantity:d} of "{sku}" to the cart')
def step_try_add(context, quantity, sku):
    try:
        context.cart.add(context.products[sku], quantity)
        context.cart_outcome = "accepted"
    except CartError as exc:
        context.cart_outcome = str(exc)


@when('I change the quantity of "{sku}" to {quantity:d}')
def step_change_quantity(context, sku, quantity):
    context.cart.update_quantity(sku, quantity)


@when('I try to remove "{sku}" from the cart')
def step_try_remove(context, sku):
    try:
        context.cart.remove(sku)
        context.cart_outcome = "accepted"
    except CartError as exc:
        context.cart_outcome = str(exc)


@when("I ask for the cart summary")
def step_cart_summary(context):
    context.summary = context.cart.summary()


@then('the cart holds {quantity:d} of "{sku}"')
def step_cart_holds(context, quantity, sku):
    assert_equal(context.cart.quantity_of(sku), quantity, f"quantity of {sku}")


@then('the cart does not contain "{sku}"')
def step_cart_lacks(context, sku):
    assert_equal(context.cart.quantity_of(sku), 0, f"quantity of {sku}")
    assert sku not in [line.sku for line in context.cart.lines]


@then("the cart subtotal is {amount:Money}")
def step_cart_subtotal(context, amount):
    assert_equal(context.cart.subtotal, amount, "subtotal")


@then("the cart has {lines:d} line with {items:d} items")
def step_cart_lines(context, lines, items):
    assert_equal(len(context.cart.lines), lines, "lines")
    assert_equal(context.cart.item_count, items, "items")


@then('the cart answers "{outcome}"')
def step_cart_answers(context, outcome):
    assert_equal(context.cart_outcome, outcome, "cart outcome")


@then("the summary reads:")
def step_summary_reads(context):
    row = context.table[0]
    expected = {"lines": int(row["lines"]), "items": int(row["items"]), "subtotal": row["subtotal"]}
    assert_equal(context.summary, expected, "cart summary")
