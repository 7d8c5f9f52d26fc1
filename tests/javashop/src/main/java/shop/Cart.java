package shop;

import java.util.ArrayList;
import java.util.List;

public final class Cart {
    private final Catalog catalog;
    private final List<String> items = new ArrayList<>();

    public Cart(Catalog catalog) {
        this.catalog = catalog;
    }

    public void add(String item, int quantity) {
        if (quantity <= 0) {
            throw new IllegalArgumentException("quantity must be positive");
        }
        for (int i = 0; i < quantity; i++) {
            items.add(item);
        }
    }

    public int count() {
        return items.size();
    }

    public int total() {
        int sum = 0;
        for (String item : items) {
            sum += catalog.price(item);
        }
        return sum;
    }

    /** Ten percent off a total of 10000 cents or more. */
    public int totalAfterDiscount() {
        int total = total();
        if (total >= 10000) {
            return total - total / 10;
        }
        return total;
    }
}
