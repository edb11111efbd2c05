package calc

import (
	"fmt"
	"testing"
)

func TestAdd(t *testing.T) {
	for i := 0; i < 120; i++ {
		t.Run(fmt.Sprintf("case_%03d", i), func(t *testing.T) {
			if got := Add(i, i); got != 2*i {
				t.Errorf("Add(%d, %d) = %d, want %d", i, i, got, 2*i)
			}
		})
	}
}

func TestMul(t *testing.T) {
	cases := []struct{ a, b, want int }{{2, 3, 6}, {0, 5, 0}, {-2, 3, -6}, {4, 4, 16}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d*%d", c.a, c.b), func(t *testing.T) {
			t.Logf("computing %d*%d", c.a, c.b)
			if got := Mul(c.a, c.b); got != c.want {
				t.Errorf("Mul(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
			}
		})
	}
}

func TestClamp(t *testing.T) {
	for i := 0; i < 80; i++ {
		t.Run(fmt.Sprintf("in_range_%02d", i), func(t *testing.T) {
			if got := Clamp(i, 0, 100); got != i {
				t.Fatalf("Clamp(%d) = %d", i, got)
			}
		})
	}
	if got := Clamp(150, 0, 100); got != 100 {
		t.Fatalf("Clamp(150, 0, 100) = %d, want 100\n  the upper bound is not applied\n  (values above hi pass through unchanged)", got)
	}
}
