// Package shop is the production code of req2test's smallest godog project.
package shop

import "errors"

// Cart counts items.
type Cart struct {
	items map[string]int
}

// NewCart is an empty cart.
func NewCart() *Cart {
	return &Cart{items: map[string]int{}}
}

// Add puts n of an item in the cart.
func (c *Cart) Add(item string, n int) error {
	if n <= 0 {
		return errors.New("quantity must be positive")
	}
	if !Known(item) {
		return errors.New("unknown item " + item)
	}
	c.items[item] += n
	return nil
}

// Count is how many of an item the cart holds.
func (c *Cart) Count(item string) int {
	return c.items[item]
}

// Total is how many items the cart holds.
func (c *Cart) Total() int {
	total := 0
	for _, n := range c.items {
		total += n
	}
	return total
}

// Discount is one item free in ten.
func Discount(total int) int {
	if total >= 10 {
		return total / 10
	}
	return 0
}
