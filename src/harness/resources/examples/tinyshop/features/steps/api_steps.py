"""System steps: drive the shop only through api.handle(request)."""

import json

from behave import given, then, when

from helpers import assert_equal, load_json_fixture, snapshot_name, split_list
from shop_builders import standard_config_path
from tinyshop.api import create_api


def send(context, method, path, body=None):
    request = {"method": method, "path": path}
    if body is not None:
        request["body"] = body
    context.request = request
    context.response = context.api.handle(request)
    return context.response


@given("the shop API is running")
def step_api_running(context):
    context.api = create_api(standard_config_path())


@when('I send GET "{path}"')
def step_send_get(context, path):
    send(context, "GET", path)


@when('I send POST "{path}" with:')
def step_send_post(context, path):
    send(context, "POST", path, json.loads(context.text))


@when("I create a cart through the API")
def step_create_cart(context):
    response = send(context, "POST", "/carts")
    assert_equal(response["status"], 201, "status")
    context.cart_id = response["body"]["cart_id"]


@when('I add {quantity:d} of "{sku}" to that cart through the API')
def step_api_add(context, quantity, sku):
    send(context, "POST", f"/carts/{context.cart_id}/items", {"sku": sku, "quantity": quantity})


@when('I check out that cart through the API for "{region}" on {day:Date}')
def step_api_checkout(context, region, day):
    body = {"cart_id": context.cart_id, "region": region, "date": day.isoformat()}
    send(context, "POST", "/checkout", body)


@when('I pay {amount:Money} for order "{order_id}" through the API')
def step_api_pay(context, amount, order_id):
    send(context, "POST", f"/orders/{order_id}/pay", {"amount": f"{amount:.2f}"})


@then('the API reports order "{order_id}" as "{status}"')
def step_api_order_status(context, order_id, status):
    assert_equal(context.response["status"], 200, "status of the last request")
    response = send(context, "GET", f"/orders/{order_id}")
    assert_equal(response["status"], 200, "status")
    assert_equal(response["body"]["status"], status, "order status")


@then("the response status is {status:d}")
def step_response_status(context, status):
    # Golden-file check: the whole response (status, headers and body) must
    # equal the recorded snapshot for this request.
    assert_equal(context.response["status"], status, "status")
    expected = load_json_fixture(snapshot_name(context.request["method"], context.request["path"]))
    assert_equal(context.response, expected, "response")


@then('the API answers {status:d} with error "{message}"')
def step_api_error(context, status, message):
    assert_equal(context.response["status"], status, "status")
    assert_equal(context.response["body"], {"error": message}, "body")


@then('the API answers {status:d} with products "{skus}"')
def step_api_products(context, status, skus):
    assert_equal(context.response["status"], status, "status")
    body = context.response["body"]
    assert_equal([p["sku"] for p in body["products"]], split_list(skus), "skus")
    assert_equal(body["count"], len(split_list(skus)), "count")


@then("the API cart holds {items:d} items worth {amount:Money}")
def step_api_cart_holds(context, items, amount):
    response = send(context, "GET", f"/carts/{context.cart_id}")
    assert_equal(response["status"], 200, "status")
    assert_equal(response["body"]["items"], items, "items")
    assert_equal(response["body"]["subtotal"], f"{amount:.2f}", "subtotal")


@then('the API answers {status:d} with order "{order_id}" totalling {total:Money}')
def step_api_order(context, status, order_id, total):
    assert_equal(context.response["status"], status, "status")
    body = context.response["body"]
    assert_equal(body["order_id"], order_id, "order id")
    assert_equal(body["status"], "placed", "order status")
    assert_equal(body["total"], f"{total:.2f}", "total")


@then('the response has header "{name}" set to "{value}"')
def step_response_header(context, name, value):
    assert_equal(context.response["headers"].get(name), value, f"header {name}")
