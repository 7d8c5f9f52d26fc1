"""Component steps for discount codes."""

from decimal import Decimal

from behave import given, then, when

from helpers import assert_equal, assert_raised
from tinyshop.discounts import (
    BuyXGetYDiscount,
    DiscountBook,
    DiscountCode,
    FixedDiscount,
    PercentageDiscount,
    discount_from_spec,
)
from tinyshop.errors import InvalidDiscountError


def _book(context):
    if not hasattr(context, "discount_book"):
        context.discount_book = DiscountBook()
    return context.discount_book


@given('the code "{code}" gives {percent:d} percent off until {expires:Date} on orders from {minimum:Money}')
def step_percentage_code(context, code, percent, expires, minimum):
    discount = PercentageDiscount(Decimal(percent))
    _book(context).register(DiscountCode(code, discount, expires=expires, min_total=minimum))


@given('a {kind} discount of {value} under the code "{code}"')
def step_discount_of_kind(context, kind, value, code):
    kinds = {"percentage": PercentageDiscount, "fixed": FixedDiscount}
    _book(context).register(DiscountCode(code, kinds[kind](Decimal(value))))


@given('the code "{code}" gives {get:d} free "{sku}" for every {buy:d} bought')
def step_buy_x_get_y(context, code, get, sku, buy):
    _book(context).register(DiscountCode(code, BuyXGetYDiscount(sku, buy, get)))


@given("the discount codes:")
def step_discount_codes_json(context):
    context.discount_book = DiscountBook.from_json(context.text)


@when('I redeem "{code}" on {day:Date}')
def step_redeem(context, code, day):
    try:
        context.discount = _book(context).redeem(code, context.cart, day)
    except InvalidDiscountError as exc:
        context.error = exc


@then("the discount is {amount:Money}")
def step_discount_is(context, amount):
    assert context.error is None, f"unexpected error: {context.error}"
    assert_equal(context.discount, amount, "discount")


@when("I try to define a {kind} discount of {value}")
def step_try_define(context, kind, value):
    try:
        if kind.startswith("buy "):
            _, buy, _, get = kind.split()
            BuyXGetYDiscount(value, int(buy), int(get))
        else:
            discount_from_spec({"kind": kind, "value": value, "sku": value})
    except ValueError as exc:
        context.error = exc


@then('the definition is refused with "{message}"')
def step_definition_refused(context, message):
    assert_raised(context, message)


@then('redeeming gives "{result}"')
def step_redeeming_gives(context, result):
    if context.error is not None:
        assert isinstance(context.error, InvalidDiscountError), context.error
        assert_equal(context.error.reason, result, "rejection reason")
    else:
        assert_equal(f"{context.discount:.2f}", result, "discount")


@then('the code is rejected as "{reason}"')
def step_code_rejected(context, reason):
    assert isinstance(context.error, InvalidDiscountError), "the code was accepted"
    assert_equal(context.error.reason, reason, "rejection reason")
