Feature: Product catalog
  In order to find the products I want to buy
  As a shopper
  I want to look products up by SKU and search the catalog

  Scenario: Look up a product in the standard catalog
    Given the standard catalog
    When I look up the product "TEA-001"
    Then the product is "Sencha Green Tea" priced 4.50 with tax class "reduced"
    And the product is in category "tea" and tagged "loose-leaf"

  Scenario: Looking up an unknown SKU fails
    Given the standard catalog
    When I try to look up the product "NOPE-000"
    Then the lookup fails with "unknown product: NOPE-000"

  Scenario: Search the catalog by keyword
    Given the standard catalog
    When I search the catalog for "tea"
    Then the search finds, cheapest first:
      | sku      | price |
      | TEA-001  | 4.50  |
      | TEA-002  | 5.25  |
      | BOOK-004 | 18.00 |

  Scenario Outline: Narrow a search by category and price
    Given the standard catalog
    When I search the "<category>" category for products up to <max_price>
    Then the search finds <count> products: <skus>

    Examples:
      | category | max_price | count | skus             |
      | kitchen  | 50.00     | 2     | MUG-002, KET-003 |
      | kitchen  | 39.90     | 2     | MUG-002, KET-003 |
      | kitchen  | 39.89     | 1     | MUG-002          |
      | tea      | 5.00      | 1     | TEA-001          |
      | books    | 17.99     | 0     | none             |

  Scenario: Load the catalog from a CSV export
    Given the catalog exported to "catalog.csv"
    Then the catalog contains 4 products
    And product "BOOK-004" costs 18.00 with tax class "zero"
    And product "TEA-001" costs 4.50 with tax class "reduced"

  Scenario: Apply a CSV price list
    Given the standard catalog
    When I apply the price list "price_update.csv"
    Then 2 prices were changed
    And product "TEA-001" costs 4.80 with tax class "reduced"
    And product "MUG-002" costs 12.00 with tax class "standard"
    And product "KET-003" costs 35.00 with tax class "standard"
