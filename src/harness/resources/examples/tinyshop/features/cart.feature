Feature: Shopping cart
  In order to buy several things at once
  As a shopper
  I want to collect products in a cart and see what they cost

  Background:
    Given these products:
      | sku     | name             | price | tax_class |
      | TEA-001 | Sencha Green Tea | 4.50  | reduced   |
      | MUG-002 | Stoneware Mug    | 12.00 | standard  |
      | KET-003 | Gooseneck Kettle | 39.90 | standard  |

  Scenario: Add a product to the cart
    Given an empty cart
    When I add 2 of "TEA-001" to the cart
    Then the cart holds 2 of "TEA-001"
    And the cart subtotal is 9.00

  Scenario: Adding the same product again merges the line
    Given an empty cart
    When I add 2 of "TEA-001" to the cart
    And I add 3 more of "TEA-001" to the cart
    Then the cart holds 5 of "TEA-001"
    And the cart has 1 line with 5 items
    And the cart subtotal is 22.50

  Scenario: Setting a quantity to zero removes the line
    Given a cart with:
      | sku     | quantity |
      | TEA-001 | 2        |
      | MUG-002 | 1        |
    When I change the quantity of "TEA-001" to 0
    Then the cart does not contain "TEA-001"
    And the cart has 1 line with 1 items
    And the cart subtotal is 12.00

  Scenario Outline: Quantities per line are limited
    Given an empty cart
    When I try to add <quantity> of "MUG-002" to the cart
    Then the cart answers "<outcome>"

    Examples:
      | quantity | outcome                           |
      | 1        | accepted                          |
      | 10       | accepted                          |
      | 0        | quantity must be between 1 and 10 |
      | 11       | quantity must be between 1 and 10 |

  Scenario: A line cannot grow beyond the quantity limit
    Given a cart with:
      | sku     | quantity |
      | TEA-001 | 8        |
    When I try to add 3 of "TEA-001" to the cart
    Then the cart answers "at most 10 of TEA-001 per cart"
    And the cart holds 8 of "TEA-001"

  Scenario: Removing a product that is not in the cart fails
    Given a cart with:
      | sku     | quantity |
      | MUG-002 | 1        |
    When I try to remove "KET-003" from the cart
    Then the cart answers "KET-003 is not in the cart"
    And the cart holds 1 of "MUG-002"

  Scenario: The cart summary counts lines and items
    Given a cart with:
      | sku     | quantity |
      | TEA-001 | 4        |
      | MUG-002 | 2        |
      | KET-003 | 1        |
    When I ask for the cart summary
    Then the summary reads:
      | lines | items | subtotal |
      | 3     | 7     | 81.90    |
