Feature: Checkout
  In order to receive my products
  As a shopper
  I want to turn my cart into an order with correct totals

  Background:
    Given the shop is running with the standard configuration

  Scenario: Fill a cart from the shop
    Given a new cart from the shop
    When the customer puts 2 of "TEA-001" in the cart
    And the customer puts 1 of "MUG-002" in the cart
    Then the shop cart holds 3 items worth 21.00

  Scenario: Check out a filled cart
    Given a new cart from the shop
    When the customer puts 2 of "TEA-001" in the cart
    And the customer puts 1 of "MUG-002" in the cart
    And the customer checks out for "EU-DE" on 2024-06-01
    Then order "ORD-0001" is placed with:
      | subtotal | discount | tax  | shipping | total |
      | 21.00    | 0.00     | 2.91 | 4.95     | 28.86 |
    And the warehouse has 38 of "TEA-001" left
    And the warehouse has 3 of "MUG-002" left

  Scenario: Check out with a discount code
    Given a new cart from the shop
    When the customer puts 2 of "TEA-001" in the cart
    And the customer puts 1 of "MUG-002" in the cart
    And the customer checks out for "EU-DE" on 2024-06-01 using code "SAVE10"
    Then order "ORD-0001" is placed with:
      | subtotal | discount | tax  | shipping | total |
      | 21.00    | 2.10     | 2.62 | 4.95     | 26.47 |

  Scenario: Checking out more than is in stock fails
    Given a new cart from the shop
    When the customer puts 5 of "MUG-002" in the cart
    And the customer tries to check out for "EU-DE" on 2024-06-01
    Then the checkout fails with "out of stock: MUG-002 (requested 5, available 4)"
    And no order has been placed
    And the warehouse has 4 of "MUG-002" left

  Scenario Outline: Shipping is free from 50.00
    Given a new cart from the shop
    When the customer puts <quantity> of "<sku>" in the cart
    And the customer asks for a quote for "EU-DE"
    Then the quote charges <shipping> for shipping and totals <total>

    Examples:
      | sku      | quantity | shipping | total |
      | GIFT-005 | 1        | 4.95     | 29.95 |
      | GIFT-005 | 2        | 0.00     | 50.00 |
      | TEA-002  | 9        | 4.95     | 55.51 |
      | TEA-002  | 10       | 0.00     | 56.18 |

  @wip
  Scenario: Split an order into several shipments
    Given a new cart from the shop
    When the customer puts 2 of "KET-003" in the cart
    And the customer checks out for "EU-DE" on 2024-06-01
    And the warehouse splits order "ORD-0001" into 2 shipments
    Then the warehouse has 0 of "KET-003" left
