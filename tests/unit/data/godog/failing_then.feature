Feature: cart

  Scenario: adding items
    Given an empty cart
    When I add 3 items
    Then the cart holds 3 items
