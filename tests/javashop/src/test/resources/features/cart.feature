@cart
Feature: A shopping cart

  @setup
  Scenario: Open the catalog
    Given the shop opens its catalog

  Scenario: Items are counted
    Given an empty cart
    When I add 3 pen
    Then the cart holds 3 items

  Scenario: The total is the sum of the prices
    Given an empty cart
    When I add 2 pen
    And I add 1 lamp
    Then the total is 4800 cents

  Scenario Outline: Large carts get ten percent off
    Given an empty cart
    When I add <n> desk
    Then the total after discount is <cents> cents

    Examples:
      | n | cents |
      | 1 | 9900  |
      | 2 | 17820 |

  @teardown
  Scenario: Close the catalog
    Given the shop closes its catalog
