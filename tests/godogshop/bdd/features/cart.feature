@cart
Feature: A shopping cart

  Background:
    Given an empty cart

  Scenario: adding items
    When I add 3 "apple"
    Then the cart holds 3 "apple"

  Scenario: one item free in ten
    When I add 12 "pear"
    Then the discount is 1

  Scenario Outline: the total counts every item
    When I add <n> "<item>"
    Then the total is <n>

    Examples:
      | n | item |
      | 1 | plum |
      | 5 | fig  |

  Scenario: a wrong expectation
    When I add 2 "apple"
    Then the cart holds 3 "apple"

  Scenario: a step nobody wrote
    When I juggle 3 "apple"
