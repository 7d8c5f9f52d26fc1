package shop.steps;

import io.cucumber.java.en.Given;
import io.cucumber.java.en.Then;
import io.cucumber.java.en.When;
import shop.Cart;
import shop.Catalog;

public class CartSteps {
    private Cart cart;

    @Given("an empty cart")
    public void anEmptyCart() {
        cart = new Cart(Catalog.current());
    }

    @When("I add {int} {word}")
    public void iAdd(int quantity, String item) {
        cart.add(item, quantity);
    }

    @Then("the cart holds {int} items")
    public void theCartHolds(int count) {
        if (cart.count() != count) {
            throw new AssertionError("cart holds " + cart.count() + ", expected " + count);
        }
    }

    @Then("the total is {int} cents")
    public void theTotalIs(int cents) {
        if (cart.total() != cents) {
            throw new AssertionError("total " + cart.total() + ", expected " + cents);
        }
    }

    @Then("the total after discount is {int} cents")
    public void theTotalAfterDiscount(int cents) {
        int actual = cart.totalAfterDiscount();
        if (actual != cents) {
            throw new AssertionError("total after discount " + actual + ", expected " + cents);
        }
    }
}
