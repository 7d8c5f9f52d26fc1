"""Component steps for tax computation."""

from behave import given, then, when

from helpers import assert_equal, assert_raised, fixture_path
from tinyshop.errors import UnknownRegionError
from tinyshop.tax import TaxTable


@given('the tax rates from "{filename}"')
def step_tax_rates(context, filename):
    context.tax_table = TaxTable.load_json(fixture_path(filename))


@when('I compute the tax on {amount:Money} of "{tax_class}" goods in "{region}"')
def step_tax_on_amount(context, amount, tax_class, region):
    context.tax = context.tax_table.tax_on(amount, region, tax_class)


@when('I compute the tax for the cart in "{region}"')
def step_tax_for_cart(context, region):
    context.tax = context.tax_table.tax_for_cart(context.cart, region)


@when('I compute the tax for the cart in "{region}" with {discount:Money} off')
def step_tax_for_cart_discounted(context, region, discount):
    context.tax = context.tax_table.tax_for_cart(context.cart, region, discount)


@when('I ask for the "{tax_class}" rate in "{region}"')
def step_rate_lookup(context, tax_class, region):
    try:
        context.rate = context.tax_table.rate_for(region, tax_class)
    except UnknownRegionError as exc:
        context.error = exc


@then("the tax is {amount:Money}")
def step_tax_is(context, amount):
    assert_equal(context.tax, amount, "tax")


@then('the rate lookup fails with "{message}"')
def step_rate_lookup_fails(context, message):
    assert_raised(context, message)
