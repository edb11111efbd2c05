import unittest

import inventory


class TestTotals(unittest.TestCase):
    pass


for i in range(150):
    def make(i):
        def test(self):
            self.assertEqual(inventory.total([1.0] * i, [2] * i), 2.0 * i)
        return test
    setattr(TestTotals, "test_total_%03d" % i, make(i))


class TestBugs(unittest.TestCase):
    def test_total_cents(self):
        self.assertEqual(inventory.total([0.05, 0.10], [1, 1]), 0.15)

    def test_restock_new_item(self):
        inventory.restock({"apple": 3}, "pear", 2)

    def test_load_rows(self):
        self.assertEqual(inventory.load(["a:1", "b:2"]), {"a": 1, "b": 2})


class TestMore(unittest.TestCase):
    pass


for i in range(100):
    def make(i):
        def test(self):
            self.assertTrue(inventory.load(["x:%d" % i])["x"] == i)
        return test
    setattr(TestMore, "test_load_%03d" % i, make(i))


if __name__ == "__main__":
    unittest.main()
