Feature: Command line
  In order to price baskets from scripts
  As a shop operator
  I want a tinyshop command that prints JSON

  Scenario: Quote a basket from the command line
    When I ask the command line for an "EU-DE" quote on 2024-06-01 of:
      | sku     | quantity |
      | TEA-001 | 2        |
      | MUG-002 | 1        |
    Then the quote shows total 28.86

  Scenario: Show a product from the command line
    When I ask the command line for product "KET-003"
    Then the command succeeds
    And the printed "price" is "39.90"
    And the printed "tax_class" is "standard"

  Scenario Outline: Bad invocations exit with an error code
    When I run tinyshop with "<arguments>"
    Then the command exits with <code> and reports "<message>"

    Examples:
      | arguments                                                            | code | message                                  |
      | product --catalog {fixtures}/catalog.json NOPE-000                   | 1    | error: unknown product: NOPE-000         |
      | quote --catalog {fixtures}/catalog.json --item TEA-001=0             | 2    | invalid quantity in item: TEA-001=0      |
      | quote --catalog {fixtures}/catalog.json --item TEA-001=11            | 1    | error: quantity must be between 1 and 10 |
      | quote --catalog {fixtures}/catalog.json --item TEA-001 --region MARS | 1    | error: unknown region: MARS              |
      | frobnicate                                                           | 2    | invalid choice: 'frobnicate'             |
