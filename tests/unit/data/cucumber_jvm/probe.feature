Feature: probe
  Background:
    Given a start of 1

  Scenario: ok
    When I add 2
    Then the total is 3
    And a nested step

  Scenario: fails
    When I add 2
    Then the total is 4
    And a nested step

  Scenario Outline: rows <more>
    When I add <more>
    Then the total is <total>

    Examples:
      | more | total |
      | 1    | 2     |
      | 5    | 7     |

  Scenario: pending hidden undefined ambiguous
    Then it is not written yet

  Scenario: hidden
    Then it is hidden

  Scenario: undefined
    Then nobody wrote this

  Scenario: ambiguous
    Then twice "x"

  @hookfails
  Scenario: hook
    When I add 2
