'use strict';
// A shopping cart with a discount bug.
function subtotal(items) {
  return items.reduce((s, it) => s + it.price * it.qty, 0);
}
function discount(total, code) {
  if (code === 'HALF') return total / 2;
  if (code === 'TENOFF') return total - 10; // bug: can go negative
  return total;
}
function parseQty(s) {
  const n = Number.parseInt(s, 10);
  if (Number.isNaN(n)) throw new TypeError(`bad quantity: ${s}`);
  return n;
}
module.exports = { subtotal, discount, parseQty };
