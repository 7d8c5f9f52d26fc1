package shop;

import java.util.LinkedHashMap;
import java.util.Map;

/** Prices in cents, registered by the feature's setup scenario (as Kapua's locator is). */
public final class Catalog {
    private static Catalog current;
    private final Map<String, Integer> prices = new LinkedHashMap<>();

    public static Catalog open() {
        current = new Catalog();
        return current;
    }

    public static Catalog current() {
        if (current == null) {
            throw new IllegalStateException("no catalog: the setup scenario did not run");
        }
        return current;
    }

    public static void close() {
        current = null;
    }

    public void add(String item, int cents) {
        if (cents < 0) {
            throw new IllegalArgumentException("negative price for " + item);
        }
        prices.put(item, cents);
    }

    public int price(String item) {
        Integer cents = prices.get(item);
        if (cents == null) {
            throw new IllegalArgumentException("unknown item " + item);
        }
        return cents;
    }
}
