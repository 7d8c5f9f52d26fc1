Feature: Shop configuration
  In order to run the same code for different shops
  As an operator
  I want the shop to be wired from a configuration file

  Scenario: The shop is wired from a configuration file
    Given the configuration file "shop_config.json"
    When the shop starts
    Then the shop offers 6 products
    And the warehouse has 40 of "TEA-001" left
    And the shop's default region is "EU-DE"

  Scenario: The built-in defaults are used without a configuration
    When the shop starts without a configuration
    Then the shop offers 2 products
    And the warehouse has 10 of "TEA-001" left
    And the warehouse has 10 of "MUG-002" left
    And the shop's default region is "EU-DE"
    And the shop charges these tax rates:
      | region | standard | reduced | zero |
      | EU-DE  | 0.19     | 0.07    | 0    |
      | UK     | 0.20     | 0.05    | 0    |
      | US-OR  | 0        | 0       | 0    |

  Scenario: An inline configuration selects the region
    Given the configuration:
      """
      {
        "region": "UK",
        "products": [
          {"sku": "TEA-001", "name": "Sencha Green Tea", "price": "4.50", "tax_class": "reduced"}
        ],
        "stock": {"TEA-001": 3}
      }
      """
    When the shop starts
    Then the shop's default region is "UK"
    And the warehouse has 3 of "TEA-001" left

  Scenario: Stock for an unknown product is refused
    Given the configuration:
      """
      {
        "products": [{"sku": "TEA-001", "name": "Sencha Green Tea", "price": "4.50"}],
        "stock": {"TEA-999": 1}
      }
      """
    When I try to start the shop
    Then the shop refuses to start with "stock for unknown product: TEA-999"
