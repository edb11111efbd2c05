package parse

import (
	"fmt"
	"testing"
)

func TestFieldsOK(t *testing.T) {
	for i := 0; i < 60; i++ {
		t.Run(fmt.Sprintf("ok_%02d", i), func(t *testing.T) {
			_ = Fields("a=1,b=2")
		})
	}
}

func TestFieldsNoEquals(t *testing.T) {
	got := Fields("a=1,broken")
	t.Log(got)
}
