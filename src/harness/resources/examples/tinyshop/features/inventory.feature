Feature: Warehouse stock
  In order not to sell what we do not have
  As the warehouse manager
  I want orders to reserve stock, and failed reservations to change nothing

  Background:
    Given the warehouse holds:
      | sku     | quantity |
      | TEA-001 | 40       |
      | MUG-002 | 4        |
      | KET-003 | 2        |

  Scenario: Reserving stock lowers what is available
    When I reserve 3 of "TEA-001"
    Then "TEA-001" has 37 available and 3 reserved

  Scenario: Releasing a reservation makes the stock available again
    When I reserve 3 of "TEA-001"
    And I release 2 of "TEA-001"
    Then "TEA-001" has 39 available and 1 reserved

  Scenario: Reserving more than is in stock fails
    When I try to reserve 5 of "MUG-002"
    Then the reservation fails for "MUG-002" with 4 available
    And "MUG-002" has 4 available and 0 reserved

  Scenario: A reservation of several products is all or nothing
    When I try to reserve:
      | sku     | quantity |
      | TEA-001 | 10       |
      | KET-003 | 3        |
    Then the reservation fails for "KET-003" with 2 available
    And "TEA-001" has 40 available and 0 reserved

  Scenario Outline: Low stock report
    When I ask which products have at most <threshold> units left
    Then the low stock report lists "<skus>"

    Examples:
      | threshold | skus                      |
      | 1         | none                      |
      | 2         | KET-003                   |
      | 4         | KET-003, MUG-002          |
      | 40        | KET-003, MUG-002, TEA-001 |

  Scenario Outline: Impossible stock movements are refused
    When the warehouse is asked to <movement> <quantity> of "<sku>"
    Then the warehouse refuses with "<message>"

    Examples:
      | movement | quantity | sku     | message                                       |
      | release  | 5        | TEA-001 | cannot release 5 of TEA-001: only 0 reserved  |
      | release  | 0        | TEA-001 | release quantity must be positive             |
      | reserve  | 0        | MUG-002 | reservation quantity must be positive         |
      | restock  | 0        | KET-003 | restock quantity must be positive             |
      | ship     | 1        | KET-003 | cannot ship 1 of KET-003: only 0 reserved     |
