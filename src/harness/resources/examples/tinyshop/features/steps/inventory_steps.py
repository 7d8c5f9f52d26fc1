"""Component steps for warehouse stock."""

from behave import given, then, when

from helpers import assert_equal, assert_raised, split_list
from shop_builders import stock_from_table
from tinyshop.errors import OutOfStockError
from tinyshop.inventory import Inventory


@given("the warehouse holds:")
def step_warehouse_holds(context):
    context.inventory = Inventory(stock_from_table(context.table))


@when('I reserve {quantity:d} of "{sku}"')
def step_reserve(context, quantity, sku):
    context.inventory.reserve(sku, quantity)


@when('I release {quantity:d} of "{sku}"')
def step_release(context, quantity, sku):
    context.inventory.release(sku, quantity)


@when('I try to reserve {quantity:d} of "{sku}"')
def step_try_reserve(context, quantity, sku):
    try:
        context.inventory.reserve(sku, quantity)
    except OutOfStockError as exc:
        context.error = exc


@when("I try to reserve:")
def step_try_reserve_all(context):
    try:
        context.inventory.reserve_all([(row["sku"], int(row["quantity"])) for row in context.table])
    except OutOfStockError as exc:
        context.error = exc


@when("I ask which products have at most {threshold:d} units left")
def step_low_stock(context, threshold):
    context.low_stock = context.inventory.low_stock(threshold)


@when('the warehouse is asked to {movement} {quantity:d} of "{sku}"')
def step_movement(context, movement, quantity, sku):
    operations = {
        "reserve": context.inventory.reserve,
        "release": context.inventory.release,
        "restock": context.inventory.restock,
        "ship": context.inventory.commit,
    }
    try:
        operations[movement](sku, quantity)
    except ValueError as exc:
        context.error = exc


@then('the warehouse refuses with "{message}"')
def step_warehouse_refuses(context, message):
    assert_raised(context, message)


@then('"{sku}" has {available:d} available and {reserved:d} reserved')
def step_stock_levels(context, sku, available, reserved):
    assert_equal(context.inventory.available(sku), available, f"available {sku}")
    assert_equal(context.inventory.reserved(sku), reserved, f"reserved {sku}")


@then('the reservation fails for "{sku}" with {available:d} available')
def step_reservation_fails(context, sku, available):
    assert isinstance(context.error, OutOfStockError), "the reservation succeeded"
    assert_equal(context.error.sku, sku, "sku")
    assert_equal(context.error.available, available, "available")


@then('the low stock report lists "{skus}"')
def step_low_stock_lists(context, skus):
    assert_equal(context.low_stock, split_list(skus), "low stock")
