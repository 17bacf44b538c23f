module example.com/crosstest

go 1.22
