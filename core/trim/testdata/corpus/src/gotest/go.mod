module example.com/gotest

go 1.22
