Feature: Sales tax
  In order to charge the right amount of tax
  As the shop's accountant
  I want tax computed per region and tax class, rounded half-up to the cent

  Background:
    Given the tax rates from "tax_rates.json"

  Scenario Outline: Tax depends on region and tax class
    When I compute the tax on <amount> of "<tax_class>" goods in "<region>"
    Then the tax is <tax>

    Examples:
      | amount | tax_class | region | tax   |
      | 100.00 | standard  | EU-DE  | 19.00 |
      | 100.00 | reduced   | EU-DE  | 7.00  |
      | 100.00 | zero      | EU-DE  | 0.00  |
      | 100.00 | standard  | UK     | 20.00 |
      | 100.00 | reduced   | UK     | 5.00  |
      | 100.00 | standard  | US-OR  | 0.00  |
      | 0.50   | reduced   | EU-DE  | 0.04  |
      | 0.10   | reduced   | UK     | 0.01  |

  Scenario: Tax on a mixed basket is rounded per tax class
    Given a cart with:
      | sku      | name             | price | tax_class | quantity |
      | TEA-001  | Sencha Green Tea | 4.50  | reduced   | 3        |
      | MUG-002  | Stoneware Mug    | 12.00 | standard  | 1        |
      | BOOK-004 | The Art of Tea   | 18.00 | zero      | 1        |
    When I compute the tax for the cart in "EU-DE"
    Then the tax is 3.23

  Scenario: A discount lowers the taxable amount proportionally
    Given a cart with:
      | sku      | name             | price | tax_class | quantity |
      | TEA-001  | Sencha Green Tea | 4.50  | reduced   | 3        |
      | MUG-002  | Stoneware Mug    | 12.00 | standard  | 1        |
      | BOOK-004 | The Art of Tea   | 18.00 | zero      | 1        |
    When I compute the tax for the cart in "EU-DE" with 8.70 off
    Then the tax is 2.58

  Scenario: An unknown region is rejected
    When I ask for the "standard" rate in "MARS"
    Then the rate lookup fails with "unknown region: MARS"
