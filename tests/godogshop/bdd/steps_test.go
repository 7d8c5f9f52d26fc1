package bdd

import (
	"context"
	"fmt"

	"example.com/godogshop/shop"
	"github.com/cucumber/godog"
)

var cart *shop.Cart

func anEmptyCart() error {
	cart = shop.NewCart()
	return nil
}

func iAdd(n int, item string) error {
	return cart.Add(item, n)
}

func theCartHolds(n int, item string) error {
	return expect(cart.Count(item), n)
}

func theDiscountIs(n int) error {
	return expect(shop.Discount(cart.Total()), n)
}

func expect(got, want int) error {
	if got != want {
		return fmt.Errorf("got %d, want %d", got, want)
	}
	return nil
}

func InitializeScenario(s *godog.ScenarioContext) {
	s.Before(func(ctx context.Context, sc *godog.Scenario) (context.Context, error) {
		cart = nil
		return ctx, nil
	})
	s.Step(`^an empty cart$`, anEmptyCart)
	s.Step(`^I add (\d+) "([^"]*)"$`, iAdd)
	s.Step(`^the cart holds (\d+) "([^"]*)"$`, theCartHolds)
	s.Step(`^the total is (\d+)$`, func(n int) error {
		return expect(cart.Total(), n)
	})
	s.Step(`^the discount is (\d+)$`, theDiscountIs)
}
