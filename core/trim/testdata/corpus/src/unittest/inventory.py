"""A tiny inventory with a rounding bug and a missing-key bug."""


def total(prices, qty):
    return round(sum(p * q for p, q in zip(prices, qty)), 1)


def restock(stock, item, n):
    stock[item] = stock[item] + n
    return stock


def load(rows):
    out = {}
    for row in rows:
        name, count = row.split(":")
        out[name] = int(count)
    return out
