"""Component steps for the product catalog."""

from decimal import Decimal

from behave import given, then, when

from helpers import assert_equal, assert_raised, fixture_path, split_list
from shop_builders import standard_catalog
from tinyshop.catalog import Catalog
from tinyshop.errors import UnknownProductError


@given("the standard catalog")
def step_standard_catalog(context):
    context.catalog = standard_catalog()


@given('the catalog exported to "{filename}"')
def step_catalog_from_csv(context, filename):
    context.catalog = Catalog.load_csv(fixture_path(filename))


@when('I look up the product "{sku}"')
def step_look_up(context, sku):
    context.product = context.catalog.lookup(sku)


@when('I try to look up the product "{sku}"')
def step_try_look_up(context, sku):
    try:
        context.product = context.catalog.lookup(sku)
    except UnknownProductError as exc:
        context.error = exc


@when('I search the catalog for "{query}"')
def step_search(context, query):
    context.results = context.catalog.search(query)


@when('I search the "{category}" category for products up to {max_price:Money}')
def step_search_category(context, category, max_price):
    context.results = context.catalog.search(category=category, max_price=max_price)


@when('I apply the price list "{filename}"')
def step_apply_price_list(context, filename):
    context.changed = context.catalog.apply_price_list(fixture_path(filename))


@then('the product is "{name}" priced {price:Money} with tax class "{tax_class}"')
def step_product_is(context, name, price, tax_class):
    product = context.product
    assert_equal(product.name, name, "name")
    assert_equal(product.price, price, "price")
    assert_equal(product.tax_class, tax_class, "tax class")


@then('the product is in category "{category}" and tagged "{tag}"')
def step_product_category(context, category, tag):
    assert_equal(context.product.category, category, "category")
    assert tag in context.product.tags, f"{tag!r} not in {context.product.tags!r}"


@then('the lookup fails with "{message}"')
def step_lookup_fails(context, message):
    assert_raised(context, message)


@then("the search finds, cheapest first:")
def step_search_finds_table(context):
    expected = [(row["sku"], Decimal(row["price"])) for row in context.table]
    actual = [(p.sku, p.price) for p in context.results]
    assert_equal(actual, expected, "search results")


@then("the search finds {count:d} products: {skus}")
def step_search_finds(context, count, skus):
    assert_equal(len(context.results), count, "number of results")
    assert_equal([p.sku for p in context.results], split_list(skus), "skus")


@then("the catalog contains {count:d} products")
def step_catalog_size(context, count):
    assert_equal(len(context.catalog), count, "catalog size")


@then('product "{sku}" costs {price:Money} with tax class "{tax_class}"')
def step_product_costs(context, sku, price, tax_class):
    product = context.catalog.lookup(sku)
    assert_equal(product.price, price, f"price of {sku}")
    assert_equal(product.tax_class, tax_class, f"tax class of {sku}")


@then("{count:d} prices were changed")
def step_prices_changed(context, count):
    assert_equal(context.changed, count, "changed prices")
