package config_test

import (
	"fmt"

	"github.com/harnessd/harnessd/core/config"
)

func ExampleParse() {
	src := `
[terminal]
soft_timeout = "30s"
sof_timeout = "1m"

[trim]
head = -1
`
	_, err := config.Parse([]byte(src), "harness.toml")
	fmt.Println(err)

	c, err := config.Parse([]byte("[terminal]\nsoft_timeout = \"30s\"\n"), "harness.toml")
	fmt.Println(c.Terminal.SoftTimeout, c.Terminal.HardTimeout, err)
	// Output:
	// harness.toml:4: unknown key terminal.sof_timeout (did you mean soft_timeout?)
	// 30s 30m <nil>
}

func ExampleConfig_ApplyEnv() {
	env := map[string]string{"HARNESSD_DURABILITY": "fast"}
	c := config.Default()
	err := c.ApplyEnv(func(name string) string { return env[name] })
	fmt.Println(err)
	// Output:
	// HARNESSD_DURABILITY: store.durability: must be "strict" or "batch", got "fast"
}
