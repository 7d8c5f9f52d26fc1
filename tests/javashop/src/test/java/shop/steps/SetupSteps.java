package shop.steps;

import io.cucumber.java.en.Given;
import shop.Catalog;

public class SetupSteps {
    @Given("the shop opens its catalog")
    public void openCatalog() {
        Catalog catalog = Catalog.open();
        catalog.add("pen", 150);
        catalog.add("lamp", 4500);
        catalog.add("desk", 9900);
    }

    @Given("the shop closes its catalog")
    public void closeCatalog() {
        Catalog.close();
    }
}
