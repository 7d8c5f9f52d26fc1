Feature: Shopping cart
  A cart collects items and counts them.

  Scenario: Adding items counts them
    Given an empty cart
    When I add 2 "apple" at 150 cents
    And I add 1 "pear" at 200 cents
    Then the cart holds 3 items
    And the subtotal is 500 cents

  Scenario: Adding the same item twice merges it
    Given an empty cart
    When I add 1 "apple" at 150 cents
    And I add 2 "apple" at 150 cents
    Then the cart holds 3 items
    And the cart has 1 line

  Scenario: Removing an item
    Given an empty cart
    And I add 1 "apple" at 150 cents
    When I remove "apple"
    Then the cart holds 0 items
    And the removal was reported

  Scenario: A non-positive quantity is refused
    Given an empty cart
    When I try to add 0 "apple" at 150 cents
    Then the cart refuses with "quantity must be positive"
