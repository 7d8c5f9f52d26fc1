Feature: Shop HTTP API
  In order to build a web shop front end
  As a front-end developer
  I want a JSON API for products, carts and checkout

  Background:
    Given the shop API is running

  Scenario: Fetch a product by SKU
    When I send GET "/products/TEA-001"
    Then the response status is 200

  Scenario: An unknown product is not found
    When I send GET "/products/NOPE-000"
    Then the API answers 404 with error "unknown product: NOPE-000"

  Scenario: Search products over the API
    When I send GET "/products?q=tea&max_price=10.00"
    Then the API answers 200 with products "TEA-001, TEA-002"

  Scenario: Add an item to a cart over the API
    When I create a cart through the API
    And I add 2 of "TEA-001" to that cart through the API
    Then the API cart holds 2 items worth 9.00

  Scenario: Check out a cart over the API
    When I create a cart through the API
    And I add 2 of "TEA-001" to that cart through the API
    And I check out that cart through the API for "EU-DE" on 2024-06-01
    Then the API answers 201 with order "ORD-0001" totalling 14.58
    And the response has header "Location" set to "/orders/ORD-0001"

  Scenario: Pay for an order over the API
    When I create a cart through the API
    And I add 2 of "TEA-001" to that cart through the API
    And I check out that cart through the API for "EU-DE" on 2024-06-01
    And I pay 14.58 for order "ORD-0001" through the API
    Then the API reports order "ORD-0001" as "paid"

  Scenario: Adding to an unknown cart is not found
    When I send POST "/carts/C-999/items" with:
      """
      {"sku": "TEA-001", "quantity": 1}
      """
    Then the API answers 404 with error "unknown cart: C-999"
