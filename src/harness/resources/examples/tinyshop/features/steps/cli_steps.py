"""System steps: drive the shop only through cli.main(argv)."""

import io
import json
import shlex
from contextlib import redirect_stderr, redirect_stdout

from behave import then, when

from helpers import assert_equal, fixture_path, load_json_fixture
from tinyshop import cli


def run_cli(context, argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        context.exit_code = cli.main(argv)
    context.stdout = out.getvalue()
    context.stderr = err.getvalue()


@when('I ask the command line for an "{region}" quote on {day:Date} of:')
def step_cli_quote(context, region, day):
    argv = ["quote", "--catalog", str(fixture_path("catalog.json")),
            "--tax-rates", str(fixture_path("tax_rates.json")),
            "--region", region, "--date", day.isoformat()]
    for row in context.table:
        argv += ["--item", f"{row['sku']}={row['quantity']}"]
    run_cli(context, argv)


@when('I ask the command line for product "{sku}"')
def step_cli_product(context, sku):
    run_cli(context, ["product", "--catalog", str(fixture_path("catalog.json")), sku])


@when('I run tinyshop with "{arguments}"')
def step_cli_run(context, arguments):
    arguments = arguments.replace("{fixtures}", str(context.fixtures_dir))
    run_cli(context, shlex.split(arguments))


@then("the quote shows total {total:Money}")
def step_quote_total(context, total):
    # Golden-file check: the whole printed quote must match the recording.
    assert_equal(context.exit_code, 0, f"exit code (stderr: {context.stderr})")
    printed = json.loads(context.stdout)
    assert_equal(printed["total"], f"{total:.2f}", "total")
    assert_equal(printed, load_json_fixture("expected_cli_quote.json"), "printed quote")


@then("the command succeeds")
def step_command_succeeds(context):
    assert_equal(context.exit_code, 0, f"exit code (stderr: {context.stderr})")
    assert_equal(context.stderr, "", "stderr")


@then('the printed "{field}" is "{value}"')
def step_printed_field(context, field, value):
    assert_equal(json.loads(context.stdout)[field], value, field)


@then('the command exits with {code:d} and reports "{message}"')
def step_command_fails(context, code, message):
    assert_equal(context.exit_code, code, "exit code")
    assert message in context.stderr, f"{message!r} not in stderr {context.stderr!r}"
    assert_equal(context.stdout, "", "stdout")
