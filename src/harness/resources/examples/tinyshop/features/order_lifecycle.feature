Feature: Order life cycle
  In order to know what happened to an order
  As a customer service agent
  I want orders to move from placed to paid to shipped, or to be cancelled

  Background:
    Given the shop is running with the standard configuration

  Scenario: Pay and ship an order
    Given a placed order
    When the customer pays the order in full
    And the warehouse ships the order
    Then the order status is "shipped"
    And the order history reads "placed, paid, shipped"
    And the warehouse has 38 of "TEA-001" left

  Scenario: Cancelling a placed order returns its stock
    Given a placed order
    When the customer cancels the order
    Then the order status is "cancelled"
    And the warehouse has 40 of "TEA-001" left
    And the warehouse has 4 of "MUG-002" left

  Scenario: A payment must match the order total
    Given a placed order
    When the customer offers 28.85 as payment
    Then the order refuses with "payment of 28.85 does not match total 28.86"
    And the order status is "placed"

  Scenario Outline: Orders only move forward
    Given an order that is <status>
    When the customer tries to <action> the order
    Then the order refuses with "cannot <action> a <status> order"

    Examples:
      | status    | action |
      | placed    | ship   |
      | shipped   | cancel |
      | shipped   | pay    |
      | cancelled | pay    |
      | cancelled | ship   |

  @live
  Scenario: Capture the payment through the card gateway
    Given a placed order
    When the payment is captured through the live card gateway
    Then the order status is "paid"
