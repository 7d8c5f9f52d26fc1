Feature: Discount codes
  A code lowers the total at checkout.

  Scenario Outline: Codes lower the total
    Given an empty cart
    And I add 1 "<item>" at <price> cents
    When I check out with code "<code>"
    Then the total is <total> cents

    Examples:
      | item  | price | code   | total |
      | tv    | 20000 | BIG    | 18500 |
      | pen   | 1000  | SAVE10 | 900   |
      | pen   | 1000  | NONE   | 1000  |
      | radio | 5000  | BIG    | 5000  |
