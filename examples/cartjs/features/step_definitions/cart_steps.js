'use strict';

const assert = require('node:assert');
const { Given, When, Then } = require('@cucumber/cucumber');
const { Cart } = require('../../src/cart');
const { total } = require('../../src/discounts');

Given('an empty cart', function () {
  this.cart = new Cart();
});

Given('I add {int} {string} at {int} cents', function (quantity, name, price) {
  this.cart.add(name, price, quantity);
});

When('I try to add {int} {string} at {int} cents', function (quantity, name, price) {
  try {
    this.cart.add(name, price, quantity);
  } catch (error) {
    this.error = error;
  }
});

When('I remove {string}', function (name) {
  this.removed = this.cart.remove(name);
});

When('I check out with code {string}', function (code) {
  this.total = total(this.cart, code);
});

Then('the cart holds {int} items', function (count) {
  assert.strictEqual(this.cart.count(), count);
});

Then('the cart has {int} line', function (lines) {
  assert.strictEqual(this.cart.lines(), lines);
});

Then('the subtotal is {int} cents', function (cents) {
  assert.strictEqual(this.cart.subtotal(), cents);
});

Then('the removal was reported', function () {
  assert.strictEqual(this.removed, true);
});

Then('the cart refuses with {string}', function (message) {
  assert.ok(this.error, 'no error was raised');
  assert.strictEqual(this.error.message, message);
});

Then('the total is {int} cents', function (cents) {
  assert.strictEqual(this.total, cents);
});
