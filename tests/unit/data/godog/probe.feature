Feature: probe

  Scenario: ok
    Given method step
    And literal step
    And small 3
    And first one

  Scenario: fail
    Given fails
    And literal step

  Scenario: panic
    Given panics

  Scenario: hookfail
    Given literal step

  Scenario: undefined
    Given nobody knows this

  Scenario: exits
    Given exits
