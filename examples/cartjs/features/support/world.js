'use strict';

const { setWorldConstructor, Before } = require('@cucumber/cucumber');

class ShopWorld {
  constructor() {
    this.cart = null;
    this.error = null;
  }
}

setWorldConstructor(ShopWorld);

Before(function () {
  this.error = null;
});
