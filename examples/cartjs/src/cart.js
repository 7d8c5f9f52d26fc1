'use strict';

// Amounts are integer cents.
class Cart {
  constructor() {
    this.items = [];
  }

  add(name, price, quantity = 1) {
    if (quantity <= 0) {
      throw new Error('quantity must be positive');
    }
    const existing = this.items.find((item) => item.name === name);
    if (existing) {
      existing.quantity += quantity;
    } else {
      this.items.push({ name, price, quantity });
    }
  }

  remove(name) {
    const before = this.items.length;
    this.items = this.items.filter((item) => item.name !== name);
    return before !== this.items.length;
  }

  count() {
    return this.items.reduce((n, item) => n + item.quantity, 0);
  }

  lines() {
    return this.items.length;
  }

  subtotal() {
    return this.items.reduce((sum, item) => sum + item.price * item.quantity, 0);
  }
}

module.exports = { Cart };
