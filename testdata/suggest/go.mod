module example.com/suggest

go 1.24
