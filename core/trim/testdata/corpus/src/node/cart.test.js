'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { subtotal, discount, parseQty } = require('./cart.js');

for (let i = 0; i < 150; i++) {
  test(`subtotal of ${i} items`, () => {
    const items = Array.from({ length: i }, () => ({ price: 2, qty: 1 }));
    assert.strictEqual(subtotal(items), 2 * i);
  });
}

test('discount never goes below zero', () => {
  assert.strictEqual(discount(5, 'TENOFF'), 0);
});

test('parseQty rejects words', () => {
  assert.strictEqual(parseQty('three'), 3);
});

for (let i = 0; i < 80; i++) {
  test(`half price ${i}`, () => {
    assert.strictEqual(discount(2 * i, 'HALF'), i);
  });
}
