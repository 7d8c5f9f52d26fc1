Feature: Not selected by the project's tags

  Scenario: untagged
    Given an empty cart
