Feature: Discount codes
  In order to reward loyal customers and run promotions
  As a shop owner
  I want discount codes with expiry dates and minimum order values

  Background:
    Given a cart with:
      | sku     | name             | price | tax_class | quantity |
      | TEA-001 | Sencha Green Tea | 4.50  | reduced   | 4        |
      | MUG-002 | Stoneware Mug    | 12.00 | standard  | 2        |

  Scenario: A valid code takes its percentage off
    Given the code "SAVE10" gives 10 percent off until 2024-06-30 on orders from 30.00
    When I redeem "SAVE10" on 2024-06-15
    Then the discount is 4.20

  Scenario: A code is still valid on its expiry day
    Given the code "SAVE10" gives 10 percent off until 2024-06-30 on orders from 30.00
    When I redeem "SAVE10" on 2024-06-30
    Then the discount is 4.20

  Scenario: An expired code is rejected
    Given the code "SAVE10" gives 10 percent off until 2024-06-30 on orders from 30.00
    When I redeem "SAVE10" on 2024-07-01
    Then the code is rejected as "expired"

  Scenario: A code is rejected below its minimum order value
    Given the code "SAVE10" gives 10 percent off until 2024-06-30 on orders from 42.01
    When I redeem "SAVE10" on 2024-06-15
    Then the code is rejected as "below minimum"

  Scenario: An unknown code is rejected
    Given the code "SAVE10" gives 10 percent off until 2024-06-30 on orders from 30.00
    When I redeem "SAVE20" on 2024-06-15
    Then the code is rejected as "unknown"

  Scenario Outline: Each kind of discount computes its own amount
    Given a <kind> discount of <value> under the code "DEAL"
    When I redeem "DEAL" on 2024-06-15
    Then the discount is <discount>

    Examples:
      | kind       | value | discount |
      | percentage | 10    | 4.20     |
      | percentage | 12.5  | 5.25     |
      | percentage | 100   | 42.00    |
      | fixed      | 5.00  | 5.00     |
      | fixed      | 50.00 | 42.00    |

  Scenario: Buy two, get one free
    Given the code "TEA3" gives 1 free "TEA-001" for every 2 bought
    When I redeem "TEA3" on 2024-06-15
    Then the discount is 4.50

  Scenario Outline: Codes loaded from a JSON document honour their validity window
    Given the discount codes:
      """
      [
        {"code": "WELCOME5", "kind": "fixed", "value": "5.00"},
        {"code": "SPRING15", "kind": "percentage", "value": "15",
         "valid_from": "2024-03-01", "expires": "2024-05-31"}
      ]
      """
    When I redeem "<code>" on <day>
    Then redeeming gives "<result>"

    Examples:
      | code     | day        | result        |
      | welcome5 | 2024-06-15 | 5.00          |
      | SPRING15 | 2024-02-29 | not yet valid |
      | SPRING15 | 2024-03-01 | 6.30          |
      | SPRING15 | 2024-05-31 | 6.30          |
      | spring15 | 2024-06-01 | expired       |

  Scenario Outline: Nonsensical discounts cannot be defined
    When I try to define a <kind> discount of <value>
    Then the definition is refused with "<message>"

    Examples:
      | kind        | value   | message                                           |
      | percentage  | 0       | percentage must be greater than 0 and at most 100 |
      | percentage  | 100.01  | percentage must be greater than 0 and at most 100 |
      | fixed       | 0.00    | fixed discount must be positive                   |
      | buy 0 get 1 | TEA-001 | buy and get must both be at least 1               |
      | buy 2 get 0 | TEA-001 | buy and get must both be at least 1               |
