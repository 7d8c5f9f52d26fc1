'use strict';

const BIG_THRESHOLD = 10000;

function discount(subtotal, code) {
  if (code === 'SAVE10') {
    return Math.round(subtotal * 0.1);
  }
  if (code === 'BIG' && subtotal >= BIG_THRESHOLD) {
    return 1500;
  }
  return 0;
}

function total(cart, code) {
  const subtotal = cart.subtotal();
  return subtotal - discount(subtotal, code);
}

module.exports = { discount, total };
